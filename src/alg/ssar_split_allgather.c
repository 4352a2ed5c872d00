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
 * Cost (select.c, cost_ssar_split): the reduce-scatter's (P-1) (alpha +
 *   beta k/P e) plus merging, then ceil(log2 P) alpha for the sizes, the
 *   vendor's allgather of the result (cost_vendor_allgather: ceil(log2 P)
 *   or, from 512 KiB, P-1 alpha) + beta (P-1)/P (size of the result), and
 *   copying the result into place.
 * Memory: the reduce-scatter's parts and sums, the gathered result.
 * Rounds: P-1 point-to-point, then two allgathers (three with QSGD: the
 *   quantized sizes are not known in advance). */
#include "config.h"

#include "runtime/schedule.h"

static int union_step(sched *s)
{
    return split_union(s, split_gather);
}

int sparcml_ssar_split_allgather(sched *s)
{
    return split_reduce_scatter(s, union_step);
}
