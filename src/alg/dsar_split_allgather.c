/* dsar_split_allgather.c -- DSAR_Split_allgather (SparCML, SC'19, 5.2).
 *
 * Algorithm: sparse reduce-scatter as in SSAR_Split_allgather, but each
 *   owner turns its reduced slice dense, written straight into its place in
 *   recvbuf, and a dense in-place allgather completes the result (the
 *   vendor's MPI_Allgatherv or the library's exchange, by the model:
 *   split_gather.c).  The
 *   choice once the sum has filled in: the allgather moves (P-1)/P N values
 *   per rank with no index overhead and no local assembly.  With QSGD the
 *   dense slices travel quantized instead: each owner encodes its slice
 *   once, the messages are allgathered, and every rank (the owner too)
 *   decodes all of them, so all hold the same bits.
 *   The result must still follow the size rule: when no rank's input alone
 *   makes it dense (k_max), the owners' union sizes are allgathered first,
 *   and a result that turns out sparse is gathered as SSAR_Split_allgather
 *   gathers it.
 * Restrictions (dsar_split_allgather_restriction): recvbuf holds the dense
 *   result (else MPI_ERR_TRUNCATE on every rank before anything runs).
 * Cost (dsar_split_allgather_cost): the reduce-scatter, then the
 *   allgather of D = N vs bytes by the gather the plan runs
 *   (cost_split_gather, split_gather.c: the vendor's, or the library's
 *   doubling or ring; about beta (P-1)/P D either way, plus their rounds'
 *   alpha), plus ceil(log2 P) alpha for the union sizes when the result's
 *   format is not certain.
 * Memory (dsar_split_allgather_scratch): the reduce-scatter's parts,
 *   sums and pending sums (a dense slice at most); the result in recvbuf;
 *   with QSGD the dense slice, encoded and gathered; while records ride,
 *   one in front of every part (split_ride_scratch).  At most 2 D (the
 *   row's memory_bound; D the dense result).
 * Rounds: P-1 point-to-point, then the allgather of the union sizes when
 *   the format is not certain, then the gather: one allgatherv, or the
 *   library's ceil(log2 P) or P - 1 rounds. */
#include "config.h"

#include <math.h>

#include <string.h>

#include "alg/algorithms.h"
#include "alg/split_phases.h"

/* The last step: every rank's dense slice is in place. */
static int dense_gathered(sched *s)
{
    (void)s;
    return MPI_SUCCESS;
}

static int allgather_dense(sched *s, sv *out)
{
    sparcml_call *c = s->c;
    sparcml_ctx *ctx = c->ctx;
    for (int r = 0; r < ctx->size; r++) {
        ctx->counts[r] = (MPI_Count)((ctx->offsets[r + 1] - ctx->offsets[r]) * out->vs);
        ctx->displs[r] = (MPI_Aint)(ctx->offsets[r] * out->vs);
    }
    return split_allgather_in_place(s, out->val, out->vs, dense_gathered);
}

/* Every rank's quantized slice arrived: decode them into recvbuf. */
static int quantized_gathered(sched *s)
{
    sparcml_call *c = s->c;
    sparcml_ctx *ctx = c->ctx;
    const split_state *st = sched_state(s);
    sv out = stream_view(c->recvbuf); /* the header gather_result wrote */
    for (int r = 0; r < ctx->size; r++) {
        const char *m = st->gathered + ctx->displs[r];
        void *tmp = ctx_buffer(ctx, POOL_QDEC, qsgd_is_message(m) ? qsgd_decoded_bytes(m) : 8);
        sv part;
        if (!tmp) return call_nomem(c);
        part = qsgd_is_message(m) ? qsgd_decode_message(m, tmp) : stream_view(m);
        memcpy((char *)out.val + ctx->offsets[r] * out.vs, part.val, part.dim * out.vs);
    }
    return MPI_SUCCESS;
}

static int allgather_quantized(sched *s)
{
    sparcml_call *c = s->c;
    sparcml_ctx *ctx = c->ctx;
    split_state *st = sched_state(s);
    uint64_t dim = ctx->offsets[ctx->rank + 1] - ctx->offsets[ctx->rank];
    void *dense = ctx_buffer(ctx, POOL_QOWN, sparcml_dense_bytes(dim, c->vtype));
    sv slice;
    int rc;
    if (!dense) return call_nomem(c);
    slice = stream_init(dense, dim, c->vtype, dim, 1);
    stream_densify(&st->mine.sum, slice.val);
    rc = p2p_encode(c, &slice, (uint64_t)ctx->rank, (uint64_t)TAG_ALLGATHER << 32, POOL_QMSG, &st->w);
    if (rc != MPI_SUCCESS) return rc;
    return split_allgather_messages(s, 0, quantized_gathered);
}

/* The union size is known, or the result is dense anyway. */
static int gather_result(sched *s)
{
    sparcml_call *c = s->c;
    const split_state *st = sched_state(s);
    sv out;
    if (!st->dense_certain && !sparcml_prefers_dense(c->dim, c->vtype, st->result_nnz))
        return split_gather(s);
    /* The input has been consumed: recvbuf may be written, and holds the
     * dense result (the restriction). */
    out = stream_init(c->recvbuf, c->dim, c->vtype, c->dim, 1);
    c->result_nnz = c->dim;
    c->result_dense = 1;
    if (c->q.bits) return allgather_quantized(s);
    stream_densify(&st->mine.sum, (char *)out.val + c->ctx->offsets[c->ctx->rank] * out.vs);
    return allgather_dense(s, &out);
}

static int dsar_split_allgather_after_reduce_scatter(sched *s)
{
    sparcml_call *c = s->c;
    split_state *st = sched_state(s);
    /* Every rank has the same k_max, and then the same union sizes. */
    st->dense_certain = sparcml_prefers_dense(c->dim, c->vtype, c->k_max);
    if (st->dense_certain) return gather_result(s);
    return split_union(s, gather_result);
}

static int sparcml_dsar_split_allgather(sched *s)
{
    return split_reduce_scatter(s, dsar_split_allgather_after_reduce_scatter);
}

/* Its result is written dense into recvbuf: that must hold it. */
static int dsar_split_allgather_restriction(const sparcml_problem *p)
{
    return p->dense_fits ? SPARCML_R_OK : SPARCML_R_CAPACITY;
}

static double dsar_split_allgather_cost(const cost_model *m, const sparcml_problem *p)
{
    double P = p->P, N = (double)p->dim, D = N * cost_wire_value_bytes(p, 1);
    /* quantized: the owner encodes its dense slice, every rank decodes all */
    double quantized = p->qbits ? N / P : 0;
    double unions = cost_format_uncertain(p) ? cost_ceil_log2(p->P) * m->alpha : 0;
    return split_reduce_scatter_cost(m, p) + cost_split_gather(m, p, D) + unions
           + m->gamma * cost_qsgd(quantized, P * quantized);
}

/* Besides the split phases' pools: with QSGD the owner's dense slice, its
 * codes, every rank's codes gathered and one decoded at a time. */
static void dsar_split_allgather_scratch(const sparcml_call *c, const sparcml_problem *p, uint64_t *need)
{
    uint64_t d = (p->dim + (uint64_t)p->P - 1) / (uint64_t)p->P, coded;
    qsgd_params q = scratch_wire_q(p);
    split_scratch(c, p, need);
    if (!q.bits) return;
    coded = scratch_coded_bytes(d, p->vtype, d, &q, 1);
    scratch_need(need, POOL_QOWN, sparcml_dense_bytes(d, p->vtype));
    scratch_need(need, POOL_QMSG, coded);
    scratch_need(need, POOL_SLOT, sparcml_round8(coded));
    scratch_need(need, POOL_QDEC, sparcml_dense_bytes(d, p->vtype));
    coded = qsgd_grid_bound(p->dim, sparcml_index_width(p->dim), p->vtype, &q, (uint64_t)p->P);
    scratch_need(need, POOL_GATHER, coded + coded / 16 + 8 * (uint64_t)p->P);
}

const sparcml_algorithm_desc sparcml_alg_dsar_split_allgather = {
    .name = "dsar_split_allgather",
    .memory_bound = 2,
    .sparse = 1,
    .first = sparcml_dsar_split_allgather,
    .restriction = dsar_split_allgather_restriction,
    .cost = dsar_split_allgather_cost,
    .scratch = dsar_split_allgather_scratch,
    .ride = ALG_RIDES_PHASE,
    .ride_scratch = split_ride_scratch,
    .ride_phase = split_reduce_scatter,
    .resume = dsar_split_allgather_after_reduce_scatter,
};
