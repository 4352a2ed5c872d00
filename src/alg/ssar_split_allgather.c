/* ssar_split_allgather.c -- SSAR_Split_allgather (SparCML, SC'19, 5.2).
 *
 * Algorithm: sparse reduce-scatter (split_phases.c); the owners' union
 *   sizes are allgathered, which fixes the result's format by the size rule
 *   (sparcml-stream(7)); then the reduced slices are allgathered, sparse
 *   when the result is (exactly the union's indices), else each in its
 *   smaller form, and assembled into recvbuf.  With QSGD each owner
 *   quantizes its slice once and every rank -- the owner too -- decodes the
 *   same bits.
 * Restrictions: none (any P, any dim, every value type).
 * Cost (ssar_split_allgather_cost): the reduce-scatter's (P-1) (alpha +
 *   beta k/P e) plus merging, then ceil(log2 P) alpha for the sizes, the
 *   allgather of the result (cost_split_gather, the gather the plan runs:
 *   the vendor's below where it would run a ring of P-1 rounds, then the
 *   library's doubling, ceil(log2 P) alpha + 9/8 beta (P-1)/P (size of
 *   the result), up to where its ring, (P-1) alpha + beta (P-1)/P (size),
 *   prices lower; the library's at every size where the vendor's was
 *   measured slow), copying the
 *   owner's slice into its message and the result into place.
 * Memory (ssar_split_allgather_scratch): the reduce-scatter's parts,
 *   sums and pending sums (a dense slice at most), the gathered result;
 *   while records ride, one in front of every part (split_ride_scratch).
 *   At most 2 D (the row's memory_bound; D the dense result).
 * Rounds: P-1 point-to-point, then the allgather of the union sizes and
 *   the gather of the slices (split_gather.c: one allgatherv, ceil(log2
 *   P) rounds or P - 1), with QSGD after an allgather of the quantized sizes, which
 *   are not known in advance. */
#include "config.h"

#include <math.h>

#include "alg/algorithms.h"
#include "alg/split_phases.h"

static int ssar_split_allgather_after_reduce_scatter(sched *s)
{
    return split_union(s, split_gather);
}

static int sparcml_ssar_split_allgather(sched *s)
{
    return split_reduce_scatter(s, ssar_split_allgather_after_reduce_scatter);
}

/* The union sizes travel in a short allgather; the owner's slice is
 * copied into its message (slice_message) and the gathered slices into
 * place (stream_concat). */
static double ssar_split_allgather_cost(const cost_model *m, const sparcml_problem *p)
{
    double P = p->P, N = (double)p->dim, u = cost_union_estimate(p, P);
    double gathered = cost_msg_bytes(p, u, N) + (P - 1) * SPARCML_HEADER_BYTES;
    /* the owner encodes its slice, every rank decodes all P */
    double quantized = cost_msg_quantized_values(p, u / P, N / P);
    return split_reduce_scatter_cost(m, p) + cost_ceil_log2(p->P) * m->alpha
           + cost_split_gather(m, p, gathered) + COST_COPY_PER_MERGE * m->gamma * (u / P + u)
           + m->gamma * cost_qsgd(quantized, P * quantized);
}

static void ssar_split_allgather_scratch(const sparcml_call *c, const sparcml_problem *p, uint64_t *need)
{
    split_scratch(c, p, need);
}

const sparcml_algorithm_desc sparcml_alg_ssar_split_allgather = {
    .name = "ssar_split_allgather",
    .memory_bound = 2,
    .sparse = 1,
    .first = sparcml_ssar_split_allgather,
    .cost = ssar_split_allgather_cost,
    .scratch = ssar_split_allgather_scratch,
    .ride = ALG_RIDES_PHASE,
    .ride_scratch = split_ride_scratch,
    .ride_phase = split_reduce_scatter,
    .resume = ssar_split_allgather_after_reduce_scatter,
};
