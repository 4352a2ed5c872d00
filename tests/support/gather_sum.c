/* gather_sum.c -- a test algorithm, added to a copy of the source tree by
 * tests/scripts/new_algorithm.sh with its row and its Makefile.am line
 * only: every rank's stream gathered, summed in rank order.
 *
 * Algorithm: an allgather of the streams' sizes, an allgatherv of the
 *   streams, then each rank merge-adds them in rank order (the same bits on
 *   every rank).
 * Restrictions: none (no quantization: the test runs without QSGD).
 * Cost (gather_sum_cost): never the cheapest, so only SPARCML_ALGORITHM
 *   selects it.
 * Memory (gather_sum_scratch): the sizes, counts and displacements (24 P
 *   bytes), every rank's stream, two sums of the union.
 * Rounds: two collectives. */
#include "config.h"

#include <math.h>

#include "alg/algorithms.h"

typedef struct gather_state {
    uint64_t mine, *sizes;
    MPI_Count *counts;
    MPI_Aint *displs;
    char *all;
} gather_state;
SCHED_STATE_FITS(gather_state);

/* The most bytes a rank's stream of the problem may take. */
static uint64_t stream_bound(const sparcml_problem *p)
{
    uint64_t sparse = sparcml_sparse_bytes(p->dim, p->vtype, p->k_max < p->dim ? p->k_max : p->dim);
    uint64_t dense = sparcml_dense_bytes(p->dim, p->vtype);
    return sparcml_round8(sparse > dense ? sparse : dense);
}

static int summed(sched *s)
{
    sparcml_call *c = s->c;
    gather_state *st = sched_state(s);
    sv acc = stream_view(st->all);
    for (int r = 1; r < c->ctx->size; r++) {
        sv next = stream_view(st->all + st->displs[r]);
        void *out = ctx_buffer(c->ctx, r % 2 ? POOL_ACC0 : POOL_ACC1, stream_merge_bound(&acc, &next));
        if (!out) return call_nomem(c);
        acc = stream_merge_add(&acc, &next, out);
    }
    return call_deliver(c, &acc);
}

static int sized(sched *s)
{
    sparcml_call *c = s->c;
    gather_state *st = sched_state(s);
    MPI_Aint at = 0;
    for (int r = 0; r < c->ctx->size; r++) {
        st->counts[r] = (MPI_Count)st->sizes[r];
        st->displs[r] = at;
        at += (MPI_Aint)sparcml_round8(st->sizes[r]);
    }
    st->all = ctx_buffer(c->ctx, POOL_GATHER, (uint64_t)at);
    if (!st->all) return call_nomem(c);
    sched_next(s, summed);
    return sched_allgatherv_bytes(s, c->input.base, (MPI_Count)stream_bytes(&c->input), st->all, st->counts,
                                  st->displs);
}

static int sparcml_gather_sum(sched *s)
{
    sparcml_call *c = s->c;
    gather_state *st = sched_state(s);
    uint64_t P = (uint64_t)c->ctx->size;
    char *meta = ctx_buffer(c->ctx, POOL_SEND, 24 * P);
    if (!meta) return call_nomem(c);
    *st = (gather_state){.mine = stream_bytes(&c->input), .sizes = (uint64_t *)meta,
                         .counts = (MPI_Count *)(meta + 8 * P), .displs = (MPI_Aint *)(meta + 16 * P)};
    sched_next(s, sized);
    return sched_allgather(s, &st->mine, 8, st->sizes);
}

static double gather_sum_cost(const cost_model *m, const sparcml_problem *p)
{
    (void)m;
    (void)p;
    return INFINITY;
}

static void gather_sum_scratch(const sparcml_call *c, const sparcml_problem *p, uint64_t *need)
{
    uint64_t u = p->k_sum < p->dim ? p->k_sum : p->dim;
    (void)c;
    scratch_need(need, POOL_SEND, 24 * (uint64_t)p->P);
    scratch_need(need, POOL_GATHER, (uint64_t)p->P * stream_bound(p));
    scratch_need(need, POOL_ACC0, sparcml_sparse_bytes(p->dim, p->vtype, u));
    scratch_need(need, POOL_ACC1, sparcml_sparse_bytes(p->dim, p->vtype, u));
}

const sparcml_algorithm_desc sparcml_alg_gather_sum = {
    .name = "gather_sum",
    .sparse = 1,
    .first = sparcml_gather_sum,
    .cost = gather_sum_cost,
    .scratch = gather_sum_scratch,
};
