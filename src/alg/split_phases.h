/* split_phases.h -- the phases both split algorithms share (SparCML,
 * SC'19, 5.2 "split allgather"; split_phases.c, split_gather.c), and
 * their state in the schedule (runtime/schedule.h, sched_state).  Each
 * phase runs `then` when it is complete. */
#ifndef SPARCML_SPLIT_PHASES_H
#define SPARCML_SPLIT_PHASES_H

#include "alg/cost_model.h"
#include "alg/scratch.h"
#include "runtime/schedule.h"

/* What the owner of a slice holds after the reduce-scatter. */
typedef struct split_slice {
    sv sum;                  /* re-based to the slice; in a pool buffer */
    const uint64_t *present; /* dense sum: the union's indices (NULL: all) */
    uint64_t union_nnz;      /* indices any rank supplied in the slice */
} split_slice;

/* Most sums an owner holds pending in the reduce-scatter: one per bit of
 * the number of parts in (P < 2^31). */
enum { SPLIT_LEVELS_MAX = 32 };

typedef struct split_state {
    split_slice mine;
    uint64_t result_nnz;
    sv sum, part, *parts, msg;
    wire *wires, w;
    uint64_t *present;
    /* The reduce-scatter's pending sums: level[i] (a stream in POOL_LEVELS,
     * or our own part) holds the parts of one bit of `pushed`, the largest
     * first; `sequential` once they were folded into `sum`. */
    const void *level[SPLIT_LEVELS_MAX];
    uint64_t levels_used, pushed;
    int depth, sequential, absent;
    int step, sum_pool, dense, dense_certain;
    int round; /* of the library's gather (split_gather.c) */
    MPI_Count my_bytes;
    char *gathered;
    sched_step phase_then; /* what follows the running phase */
} split_state;
SCHED_STATE_FITS(split_state);

/* The modelled time of the reduce-scatter (the split algorithms' costs). */
double split_reduce_scatter_cost(const cost_model *m, const sparcml_problem *p);

/* What both phases may ask of the pools (alg/scratch.h). */
void split_scratch(const sparcml_call *c, const sparcml_problem *p, uint64_t *need);

/* What the agreement's records add to the pools while they ride on the
 * reduce-scatter (algorithms.h: ride_scratch). */
void split_ride_scratch(const sparcml_call *c, const sparcml_problem *p, uint64_t record, uint64_t *need);

/* The sparse reduce-scatter: slice r of [0, dim) (ctx->offsets[r] ..
 * ctx->offsets[r+1]) is summed on rank r, into mine. */
int split_reduce_scatter(sched *s, sched_step then);

/* Allgather of the owners' union sizes (into ctx->rank_words); result_nnz
 * becomes the number of entries of the result. */
int split_union(sched *s, sched_step then);

/* Allgather of the reduced slices into recvbuf, in the format the size rule
 * gives a result of result_nnz entries (after split_union). */
int split_gather(sched *s);

/* Allgather of one message of any size per rank (w) into POOL_GATHER
 * (gathered), by the vendor or the library's exchange (split_gather.c); message r
 * starts at ctx->displs[r].  Its sizes are allgathered first unless
 * sizes_known (then ctx->counts holds them, rounded to 8). */
int split_allgather_messages(sched *s, int sizes_known, sched_step then);

/* Allgather in place of the dense slices of dim values of vs bytes
 * (ctx->counts[r] bytes at ctx->displs[r] from base, this rank's already
 * there), then `then`: by the library's exchange straight into base where
 * the call's plan says so (c->plan->gather, as for the messages), else by the
 * vendor's in-place allgatherv (split_gather.c). */
int split_allgather_in_place(sched *s, char *base, uint64_t vs, sched_step then);

#endif
