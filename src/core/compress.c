/* compress.c -- SPARCML_COMPRESS: untagged MPI_SUM allreduces of dense
 * float and double gradients, sparsified with error feedback (SparCML,
 * SC'19, section 2.2; CLT-k from ScaleCom, NeurIPS'20), with no change to
 * the program.  Lossy by design, and only when asked for.
 *
 * Contract (sparcml(7), COMPRESSION):
 *  - A call qualifies on arguments MPI requires to be equal on all ranks
 *    (op MPI_SUM, predefined float or double type, count at or above
 *    SPARCML_COMPRESS_MIN_BYTES, an intracommunicator), so every rank takes
 *    the same branch.  Everything else stays exact.
 *  - Each rank forms acc = eps + g (eps: what it held back of this buffer
 *    before, core/feedback.h) and contributes S(acc): topk, the k entries
 *    of largest magnitude of its own acc (its nonzeros only); cltk, its acc
 *    at the k indices of largest magnitude of the leader's acc (zeros of
 *    the leader's fill up, lowest index first), so the sum stays k-sparse
 *    for any P; the leader rotates with the buffer's agreed call number.
 *    k = ceil(SPARCML_COMPRESS_DENSITY * count).  With SPARCML_QSGD_BITS
 *    the contribution is quantized before it leaves the rank.  Then
 *    eps = acc - S(acc), so nothing is lost, only delayed: over T calls,
 *    sum of results + sum over ranks of eps = sum of every input.
 *  - The result, the exact sum of the contributions (a sparse algorithm
 *    the selector picks), is written dense into recvbuf on every rank,
 *    bitwise alike.
 *  - Compression runs only where it pays: where the cost model, with the
 *    timed prices of both routes (core/op.c), predicts that the selection
 *    route (the rank's passes over its buffer and the sparse algorithm)
 *    beats the vendor's dense allreduce of the buffer.  Elsewhere S(acc) =
 *    acc: the vendor sums every rank's acc exactly and eps becomes zero;
 *    the next calls of the count and type take that route without an
 *    agreement (learnt_vendor), every rank alike.
 *  - Everything that could differ between ranks is decided through the
 *    agreement: argument checks, scratch memory (reserved before it),
 *    whether every rank keeps feedback for the buffer (when one does not,
 *    its memory cap reached, the vendor sums acc as above), the route and
 *    the CLT-k leader.  acc and eps change only after the agreement
 *    succeeded, so a call that fails there leaves the residual as it was.
 *  - It is a kind of op (op.h): blocking, non-blocking and persistent calls
 *    run the same steps. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/compress.h"
#include "core/feedback.h"
#include "core/stats.h"
#include "kernel/residual.h"
#include "kernel/topk.h"
#include "runtime/progress.h"

/* The random numbers of a contribution's QSGD: a message number of its
 * own (the messages of compressed calls are never quantized again). */
enum { COMPRESS_QSGD_MESSAGE = 1 };

int compress_qualifies(MPI_Count count, int vtype, MPI_Op op, MPI_Comm comm)
{
    const sparcml_settings *s = settings_get();
    if (s->compress == COMPRESS_OFF || !op_value_is_float(vtype)) return 0;
    return op_dense_qualifies(count, vtype, op, comm, s->compress_min_bytes);
}

uint64_t compress_k(uint64_t n, double density)
{
    double k = ceil(density * (double)n);
    return k < 1 ? 1 : k >= (double)n ? n : (uint64_t)k;
}

/* A compressed call's own state (the op's kind state): the buffer's
 * residual (NULL: none kept), ||eps + g||^2 and ||eps||^2 after the call
 * on this rank, when its agreement began (a selection route is timed from
 * there), and a vendor route's kind. */
typedef struct compress_state {
    feedback_entry *feedback;
    double acc_norm2, held_norm2;
    double route_t0;
    stats_compress_route route;
} compress_state;
OP_KIND_STATE_FITS(compress_state);

static compress_state *cs(sparcml_op *op) { return op_kind_state(op); }
static const compress_state *cs_c(const sparcml_op *op) { return op_kind_state_c(op); }

/* The kind's state on a communicator: what this rank held back of each
 * buffer (its own, but for each entry's agreed sequence) and the learnt
 * vendor choice (the same on every rank). */
typedef struct compress_comm {
    feedback_table feedback;
    select_learnt learnt;
} compress_comm;
OP_KIND_COMM_FITS(compress_comm);

static compress_comm *comm_of(sparcml_ctx *ctx) { return op_kind_comm(ctx, &sparcml_op_compressed); }
static feedback_table *feedback_of(sparcml_ctx *ctx) { return &comm_of(ctx)->feedback; }

/* The application's gradient: sendbuf, or recvbuf in place. */
static const void *gradient(const sparcml_op *op)
{
    return op_input(op->sendbuf, op->recvbuf);
}

/* The buffer's residual, NULL without feedback (its entry then only
 * counts the calls). */
static void *residual(const sparcml_op *op)
{
    return cs_c(op)->feedback ? cs_c(op)->feedback->eps : NULL;
}

/* acc: the residual once g is added to it (compress_agreed), the gradient
 * itself without feedback. */
static const void *acc_of(const sparcml_op *op) { return residual(op) ? residual(op) : gradient(op); }

static int cltk_leader(const sparcml_op *op)
{
    return (int)(op->agreed.sequence % (uint64_t)op->c.ctx->size);
}

/* --- acc = eps + g, and after the selection eps = acc - S(acc) ----------- */

/* The first call's residual, held aside until the rhythm is confirmed
 * (core/feedback.h), joins the residual. */
static void join_held(sparcml_op *op)
{
    feedback_entry *e = cs(op)->feedback;
    if (!e || !e->held || !e->confirmed) return;
    residual_add(e->eps, e->eps, e->held, op->c.dim, op->c.vtype);
    e->zero = 0;
    feedback_release_held(feedback_of(op->c.ctx), e);
}

/* QSGD of the contribution's values, in place: they are summed as they
 * are now, eps keeps the quantization error too, and the messages that
 * carry them travel as these codes (c->input_block; sums travel exact). */
static void quantize(sparcml_op *op)
{
    sparcml_call *c = &op->c;
    qsgd_params q = op_qsgd_params(op->set);
    qsgd_key key = {.seed = q.seed, .rank = (uint64_t)c->ctx->rank, .call = c->ctx->calls,
                    .message = COMPRESS_QSGD_MESSAGE};
    void *block = ctx_buffer(c->ctx, POOL_QIN, qsgd_block_bound(c->input.nnz, c->vtype, &q)); /* reserved */
    qsgd_encode_block(c->input.val, c->input.nnz, c->vtype, &q, &key, block);
    qsgd_decode_block(block, c->input.nnz, c->vtype, &q, c->input.val);
    c->input_block = block;
}

/* The lowest index at or after which `extra` zeros of acc (indices not in
 * the n selected, ascending in s) lie below; as an exclusive bound. */
static uint64_t zeros_bound(const sv *s, uint64_t n, uint64_t extra)
{
    uint64_t i = 0, j = 0, zeros = 0;
    for (; zeros < extra; i++) {
        if (j < n && sparcml_get_index(s->idx, s->iw, j) == i) j++;
        else zeros++;
    }
    return i;
}

/* CLT-k's leader picks k indices even when its acc has only n < k
 * nonzeros (all selected): the lowest of its zeros fill up, since the
 * other ranks' values there count (at density 1 the sum is exact).  A
 * backward merge in place: the entry written at p never lies below the
 * selected entry j still to be read. */
static void fill_up_with_zeros(sv *s, uint64_t n, uint64_t k, const void *acc)
{
    uint64_t bound = zeros_bound(s, n, k - n), p = k, j = n;
    for (uint64_t i = s->dim; i-- > 0 && p > 0;) {
        int selected = j > 0 && sparcml_get_index(s->idx, s->iw, j - 1) == i;
        if (!selected && i >= bound) continue;
        p--;
        if (selected) memmove((char *)s->val + p * s->vs, (char *)s->val + --j * s->vs, s->vs);
        else memcpy((char *)s->val + p * s->vs, (const char *)acc + i * s->vs, s->vs);
        sparcml_put_index(s->idx, s->iw, p, i);
    }
}

/* acc = eps + g, alone (a CLT-k rank that does not select): its norm for
 * SPARCML_STATS. */
static void form_acc(sparcml_op *op)
{
    if (!residual(op)) return;
    cs(op)->acc_norm2 = topk_accumulate(residual(op), gradient(op), op->c.dim, op->c.vtype);
    cs(op)->feedback->zero = 0;
}

/* The k entries of largest magnitude of acc, as a sparse stream at buf
 * (topk: the nonzeros among them; cltk: k entries, see above); acc =
 * eps + g is formed in the selection's pass. */
static sv select_topk(sparcml_op *op, uint64_t k, void *buf)
{
    sparcml_call *c = &op->c;
    sv s = stream_init(buf, c->dim, c->vtype, k, 0);
    void *scratch = ctx_buffer(c->ctx, POOL_TOPK, topk_scratch_bytes(c->dim, k, c->vtype)); /* reserved */
    void *val_k = s.val;
    uint64_t n;
    if (residual(op)) {
        n = topk_select_sum(residual(op), gradient(op), c->dim, c->vtype, k, scratch, s.idx, s.iw, s.val,
                            &cs(op)->acc_norm2);
        cs(op)->feedback->zero = 0;
    } else {
        n = topk_select(gradient(op), c->dim, c->vtype, k, scratch, s.idx, s.iw, s.val);
    }
    if (n == k) return s;
    if (op->set->compress == COMPRESS_CLTK) {
        fill_up_with_zeros(&s, n, k, acc_of(op));
        return s;
    }
    /* Fewer nonzeros than k: the values move up behind fewer indices. */
    s = stream_init(buf, c->dim, c->vtype, n, 0);
    memmove(s.val, val_k, n * s.vs);
    return s;
}

/* --- the steps ----------------------------------------------------------- */

static int vendor_done(sched *s)
{
    sparcml_op *op = op_of(s);
    stats_record_compressed(op->set, &op->c, cs(op)->route, -1, op_vendor_timed(op));
    return MPI_SUCCESS;
}

/* S(acc) = acc: the vendor sums every rank's acc = eps + g exactly, and
 * the residual becomes zero.  acc is written into recvbuf, which the
 * vendor then sums in place; where the residual is zero already (or none
 * is kept), acc is g (up to the sign of a zero) and the vendor takes the
 * buffers as given: calls that keep to this route pass over nothing. */
static int vendor_route(sched *s, stats_compress_route route)
{
    sparcml_op *op = op_of(s);
    feedback_entry *e = cs(op)->feedback;
    cs(op)->route = route;
    if (residual(op) && !e->zero) {
        residual_move(op->recvbuf, e->eps, gradient(op), op->c.dim, op->c.vtype);
        e->zero = 1;
        op->sendbuf = MPI_IN_PLACE; /* the call's input is acc, in recvbuf */
    }
    return op_vendor(s, vendor_done);
}

/* The concluded call's sum is in the result pool: write it into the
 * application's buffer.  The route is timed whole against its whole price
 * (select_compressed): from the agreement, which the vendor's learnt route
 * skips (learnt_vendor), to here. */
static int compressed_written(sched *s)
{
    sparcml_op *op = op_of(s);
    double held_back = -1;
    op_dense_write(op);
    if (op_timing(op)) {
        sparcml_problem p = op_problem(op);
        op_time_run(op, op->alg, PMPI_Wtime() - cs(op)->route_t0,
                    select_price(op->set, &p, op->alg) + select_compress_detour(op->set, &p));
    }
    if (residual(op) && cs(op)->acc_norm2 > 0) held_back = sqrt(fmax(cs(op)->held_norm2, 0) / cs(op)->acc_norm2);
    stats_record_compressed(op->set, &op->c, COMPRESS_ROUTE_SELECTED, held_back, 0);
    return MPI_SUCCESS;
}

static int compressed_done(sched *s)
{
    return op_conclude(s, compressed_written);
}

/* Once every rank has the algorithm's scratch: quantize the contribution
 * and hold back the rest (the residual changes only now). */
static void contribution_ready(sparcml_op *op)
{
    if (op->set->qsgd_bits) quantize(op);
    if (residual(op)) cs(op)->held_norm2 = cs(op)->acc_norm2 + residual_hold_back(residual(op), &op->c.input);
}

/* This rank's contribution is in c->input: run the sparse algorithm the
 * selector picked.  With QSGD the contribution travels as its codes
 * (c->input_q), which the algorithm's scratch bound counts. */
static int contribute(sched *s)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    sparcml_problem p;
    if (op->set->qsgd_bits) c->input_q = op_qsgd_params(op->set);
    c->recvbuf = ctx_buffer(c->ctx, POOL_DENSE_OUT, c->recv_bytes); /* reserved */
    p = op_problem(op);
    op->ready = contribution_ready;
    return op_run(s, &p, compressed_done);
}

/* CLT-k: the leader's indices have arrived; the others take their acc's
 * values there. */
static int cltk_indexed(sched *s)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    void *buf = ctx_buffer(c->ctx, POOL_DENSE_IN, 8); /* reserved, larger */
    if (c->ctx->rank != cltk_leader(op)) {
        sv view = stream_view(buf);
        c->input = stream_init(buf, c->dim, c->vtype, view.nnz, 0);
        residual_gather(&c->input, acc_of(op));
    }
    return contribute(s);
}

/* The route, from agreed numbers: the vendor's exact sum where some rank
 * keeps no feedback for the buffer or where the model (with timed prices)
 * says the selections do not pay, else the selections.  The model's choice
 * for the call's count and type is learnt: after the vendor, the next
 * calls skip the agreement (select_learnt). */
static int compress_agreed(sched *s)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    sparcml_problem p = op_problem(op);
    uint64_t k = op->local.nnz, words;
    cost_route route;
    void *buf;
    if (cs(op)->feedback) cs(op)->feedback->sequence = op->agreed.sequence + 1;
    join_held(op);
    if (op->agreed.exact) return vendor_route(s, COMPRESS_ROUTE_EXACT);
    route = op_select(op, &p);
    select_learn(&comm_of(c->ctx)->learnt, op->count, c->vtype, route);
    if (route == COST_VENDOR) return vendor_route(s, COMPRESS_ROUTE_VENDOR);
    op->alg = route;
    buf = ctx_buffer(c->ctx, POOL_DENSE_IN, sparcml_sparse_bytes(c->dim, c->vtype, k)); /* reserved */
    if (op->set->compress == COMPRESS_TOPK) {
        c->input = select_topk(op, k, buf);
        return contribute(s);
    }
    if (c->ctx->rank == cltk_leader(op)) c->input = select_topk(op, k, buf);
    else form_acc(op);
    sched_next(s, cltk_indexed);
    /* The header and the indices: the broadcast's size is known to all. */
    words = (SPARCML_HEADER_BYTES + sparcml_round8(k * sparcml_index_width(c->dim))) / 8;
    return sched_bcast_words(s, buf, words, cltk_leader(op));
}

/* This rank's entry for the buffer (without feedback, one that only
 * counts its calls), or why it has none. */
static void find_feedback(sparcml_op *op)
{
    sparcml_local *local = &op->local;
    feedback_table *t = feedback_of(op->c.ctx);
    switch (feedback_lookup(t, op->recvbuf, op->count, op->datatype, op->c.vtype,
                            op->set->compress_feedback, op->set->compress_max_bytes, &cs(op)->feedback)) {
    case FEEDBACK_RESET: stats_record_feedback_reset(op->set, op->rank, op->recvbuf, op->count); break;
    case FEEDBACK_CAPPED:
        local->exact = 1;
        stats_record_feedback_full(op->set, op->rank, op->recvbuf, op->count, t->capped == 1);
        break;
    case FEEDBACK_NOMEM: local->reason = SPARCML_R_NOMEM; break;
    default: break;
    }
    local->sequence = cs(op)->feedback ? cs(op)->feedback->sequence : 0;
}

/* Scratch of the agreed path, reserved before the agreement: does this
 * rank have it all? */
static int reserve(sparcml_op *op, uint64_t k)
{
    sparcml_call *c = &op->c;
    qsgd_params q = op_qsgd_params(op->set);
    unsigned iw = sparcml_index_width(c->dim);
    return ctx_buffer(c->ctx, POOL_DENSE_IN, sparcml_sparse_bytes(c->dim, c->vtype, k))
           && ctx_buffer(c->ctx, POOL_DENSE_OUT, c->recv_bytes)
           && ctx_buffer(c->ctx, POOL_TOPK, topk_scratch_bytes(c->dim, k, c->vtype))
           && (!q.bits || ctx_buffer(c->ctx, POOL_QIN, qsgd_block_bound(k, c->vtype, &q)))
           && (!q.bits || ctx_buffer(c->ctx, POOL_QMSG, qsgd_grid_bound(k, iw, c->vtype, &q, (uint64_t)c->ctx->size)));
}

/* A call after a learnt vendor choice: no agreement, yet this rank's acc
 * = eps + g as on the agreed route (its residual is its own), the call
 * counted on the buffer as the agreement would (every rank skips alike). */
static int learnt_vendor(sched *s, uint64_t k)
{
    sparcml_op *op = op_of(s);
    op->c.k_max = k; /* what the verbose line shows */
    find_feedback(op);
    if (cs(op)->feedback) cs(op)->feedback->sequence++;
    join_held(op);
    return vendor_route(s, COMPRESS_ROUTE_LEARNT);
}

/* The prologue: a learnt vendor choice, or this rank's checks, feedback
 * entry and scratch, then the agreement.  Nothing changes before the
 * agreement says every rank can. */
static int compress_begin(sched *s)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    sparcml_local *local = &op->local;
    uint64_t k = compress_k(c->dim, op->set->compress_density);
    if (select_learnt_skips(&comm_of(c->ctx)->learnt, op->count, c->vtype)) return learnt_vendor(s, k);
    /* The contribution is quantized here (quantize), never again on the wire. */
    c->q.bits = 0;
    c->q_sparse = 0;
    c->input_block = NULL;
    op_dense_local(op, k);
    if (local->reason != SPARCML_R_OK) return op_agree(s, compress_agreed);
    find_feedback(op);
    if (local->reason == SPARCML_R_OK && !local->exact && !reserve(op, k)) local->reason = SPARCML_R_NOMEM;
    cs(op)->route_t0 = PMPI_Wtime();
    return op_agree(s, compress_agreed);
}

static void forget_feedback(void *comm_state) { feedback_table_free(&((compress_comm *)comm_state)->feedback); }

const sparcml_op_kind sparcml_op_compressed = {.fill = op_fill_dense, .begin = compress_begin,
                                               .select = select_compressed, .times_route = 1,
                                               .slot = OP_KIND_COMPRESSED, .forget = forget_feedback};

int compress_residual(MPI_Comm comm, const void *recvbuf, MPI_Count count, MPI_Datatype datatype, void *out)
{
    sparcml_ctx *ctx;
    feedback_entry *e;
    int rc = comm == MPI_COMM_NULL ? MPI_ERR_COMM : ctx_find(comm, &ctx);
    if (rc != MPI_SUCCESS) return rc;
    if (!ctx) return MPI_ERR_ARG;
    progress_drain(&ctx->pending_calls);
    e = feedback_find(feedback_of(ctx), recvbuf, count, datatype);
    if (!e || !e->eps || !out) return MPI_ERR_ARG;
    if (e->held) residual_add(out, e->eps, e->held, (uint64_t)count, e->vtype);
    else memcpy(out, e->eps, (size_t)e->bytes);
    return MPI_SUCCESS;
}
