/* scratch.h -- what an algorithm may ask of the scratch pools.
 *
 * Every algorithm states, from agreed numbers only (the problem, the
 * call's settings), the most bytes each pool (runtime/comm_ctx.h) may have
 * to hold while its schedule runs: <stem>_scratch (alg/algorithms.h).  The
 * op reserves that before the algorithm starts and agrees on the outcome
 * (core/op.c), so a rank short of memory fails the call together with
 * every other rank instead of leaving an exchange half-way.  The bounds
 * below are upper bounds of what the kernels write (kernel/stream.h,
 * kernel/qsgd.h); a build with the sanitizers checks them on every run. */
#ifndef SPARCML_SCRATCH_H
#define SPARCML_SCRATCH_H

#include <stdint.h>

#include "alg/cost_model.h"
#include "runtime/call.h"

/* The algorithms' pools, numbered after the runtime's (runtime/comm_ctx.h),
 * which they use too; core's follow (ALG_POOLS_END). */
enum {
    POOL_ACC0 = CTX_RUNTIME_POOLS, /* a sum being built */
    POOL_ACC1,      /* the other operand's: merges alternate between the two */
    POOL_GATHER,    /* the gathered messages, in rank order (split_gather.c) */
    POOL_PARTS,     /* the split algorithms' views of the P parts and their wires */
    POOL_PRESENCE,  /* a bitmap of the indices in a dense sum (stream.h) */
    POOL_SLICE,     /* an owner's reduced slice in the form it is gathered in */
    POOL_SLOT,      /* that message padded to the common slot (split_phases.c) */
    POOL_LEVELS,    /* an owner's pending sums of 2^l parts (split_phases.c) */
    POOL_RECV_NEXT, /* pipelined recursive doubling: the chunk after the one being merged */
    POOL_RD_PART,   /* its chunks: two sets (sent, being summed) of SPARCML_PIPELINE_CHUNKS_MAX */
    ALG_POOLS_END = POOL_RD_PART + 2 * SPARCML_PIPELINE_CHUNKS_MAX
};

/* need[pool] grows to at least bytes (indexed by pool), and to
 * what the pool hands out for fewer: a sum of no width (a split slice of
 * a dimension smaller than P) still takes a buffer. */
static inline void scratch_need(uint64_t *need, int pool, uint64_t bytes)
{
    if (bytes < CTX_BUFFER_MIN_BYTES) bytes = CTX_BUFFER_MIN_BYTES;
    if (need[pool] < bytes) need[pool] = bytes;
}

/* Can a sum of streams of dimension dim holding `entries` entries
 * together be dense (a dense input, or a union no smaller dense)? */
int scratch_may_be_dense(uint64_t dim, int vtype, uint64_t entries);

/* Any stream a merge-add may write for a sum of streams of dimension dim
 * holding `entries` entries together (stream_merge_bound), and any sum or
 * message of at most that many entries. */
uint64_t scratch_sum_bytes(uint64_t dim, int vtype, uint64_t entries);

/* Any rank's input stream (at most k_max entries). */
uint64_t scratch_input_bytes(const sparcml_problem *p);

/* QSGD messages of such sums, `parts` of them (qsgd_grid_bound, which
 * bounds separately encoded parts as well as parts of one block). */
uint64_t scratch_coded_bytes(uint64_t dim, int vtype, uint64_t entries, const qsgd_params *q, uint64_t parts);

/* The messages' QSGD parameters (bits 0: not quantized on the wire). */
qsgd_params scratch_wire_q(const sparcml_problem *p);

#endif
