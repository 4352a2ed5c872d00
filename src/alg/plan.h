/* plan.h -- how the algorithms run one call, beyond what the runtime's
 * call holds (runtime/call.h): recursive doubling's chunks per round and
 * who gathers a split algorithm's messages, as core plans them from
 * agreed facts (core/select.h), and what ran; and the tags of their
 * messages.  The call reaches its plan through c->plan, which the
 * runtime never reads. */
#ifndef SPARCML_PLAN_H
#define SPARCML_PLAN_H

#include <stdint.h>

#include "runtime/call.h"

/* Most chunks a pipelined recursive-doubling round is cut into. */
enum { SPARCML_PIPELINE_CHUNKS_MAX = 8 };

/* The algorithms' tags, within the call's tag space (runtime/call.h):
 * distinct for every algorithm, since one call may run two (the exchange
 * the agreement rode on, then the one selected).  Recursive doubling folds
 * surplus ranks in and out (TAG_FOLD_OUT: the final result, receiving the
 * complete record while the agreement rides: sched_recv_complete); the
 * split algorithms reduce-scatter and gather. */
enum { TAG_FOLD_IN = 1, TAG_FOLD_OUT, TAG_RECURSIVE_DOUBLE, TAG_REDUCE_SCATTER, TAG_ALLGATHER, ALG_TAGS_END };
_Static_assert((int)ALG_TAGS_END <= (int)TAG_KINDS && TAG_KINDS * (TAG_CALLS - 1) + ALG_TAGS_END - 1 <= 32767,
               "the algorithms' tags fit a call's tag space, below 32767 with TAG_CALLS calls");

/* The gather a split algorithm runs (SPARCML_VERBOSE names it): the
 * vendor's MPI_Allgatherv, or the library's exchange by recursive doubling
 * (Bruck's dissemination where P is not a power of two) or by a ring
 * (alg/split_gather.c). */
typedef enum alg_gather { ALG_GATHER_NONE, ALG_GATHER_VENDOR, ALG_GATHER_DOUBLING, ALG_GATHER_RING } alg_gather;

/* The library's exchange gathers from library_from bytes in all on, as a
 * ring from ring_from on; the vendor below (UINT64_MAX: never). */
typedef struct alg_gather_plan {
    uint64_t library_from, ring_from;
} alg_gather_plan;

static inline alg_gather alg_gather_for(const alg_gather_plan *g, uint64_t bytes)
{
    if (bytes < g->library_from) return ALG_GATHER_VENDOR;
    return bytes >= g->ring_from ? ALG_GATHER_RING : ALG_GATHER_DOUBLING;
}

/* A call's plan (c->plan): core plans the chunks and the gather before
 * the algorithm starts, the algorithm notes what ran. */
struct alg_plan {
    /* Chunks per round of recursive doubling (<= 1: none): the agreed
     * problem's (select_pipeline_chunks), or, while the agreement runs,
     * its exchange's (core/op_ride.c: from the memo). */
    int pipeline_chunks;
    int chunks_run;      /* recursive doubling's chunks per round as it ran (0, 1: not pipelined) */
    /* Who gathers a split algorithm's messages, by their bytes in all
     * (alg_gather_for; select_gather_plan: from agreed facts, so every
     * rank compares the same numbers); gather_run says which ran. */
    alg_gather_plan gather;
    int gather_run;      /* alg_gather */
};
typedef struct alg_plan alg_plan;

#endif
