/* split_phases.c -- the two phases the split algorithms share (SparCML,
 * SC'19, 5.2 "split allgather").
 *
 * Reduce-scatter: [0, dim) is cut into P nearly equal ranges; rank r owns
 * range r.  Every rank sends the part of its stream in range r to rank r
 * (each part is a stream of its own, in its input's format: sparse for
 * sparse input, dense for dense; QSGD-quantized by its sender when
 * enabled) and sums what it receives for
 * its own range.  Each owner takes the parts in an order of its own that
 * is fixed (its own part, then rank r-1's, r-2's, ...) and sums them in a
 * fixed tree (sum_part), so the sum -- and with it the final result --
 * does not depend on message arrival order: runs are reproducible.
 *
 * Allgather of the reduced slices: each owner's slice is one message
 * (split_gather.c gathers them), assembled in rank order into recvbuf. */
#include "config.h"

#include <math.h>

#include <string.h>

#include "alg/split_phases.h"

/* Every rank's part of the input into the send pool, each `head` bytes
 * after its place (ctx->displs[r]), which leaves room for a record. */
static int slice_parts(sparcml_call *c, uint64_t head, sv *parts)
{
    sparcml_ctx *ctx = c->ctx;
    const uint64_t *lo = ctx->offsets;
    uint64_t total = 0;
    char *buf;
    for (int r = 0; r < ctx->size; r++) {
        ctx->displs[r] = (MPI_Aint)total;
        total += head + sparcml_round8(stream_slice_bytes(&c->input, lo[r], lo[r + 1]));
    }
    buf = ctx_buffer(ctx, POOL_SEND, total);
    if (!buf) return call_nomem(c);
    for (int r = 0; r < ctx->size; r++) parts[r] = stream_slice(&c->input, lo[r], lo[r + 1], buf + ctx->displs[r] + head);
    return MPI_SUCCESS;
}

/* While the call's rider is set (the agreement rides on the parts:
 * core/op_ride.c) and this rank's data stays back, every part is absent and
 * the record goes alone. */
static int records_alone(sparcml_call *c, sv *parts, wire *wires)
{
    for (int r = 0; r < c->ctx->size; r++) {
        parts[r] = sv_absent();
        wires[r] = (wire){.buf = c->rider->own, .bytes = c->rider->bytes, .framed = 1};
    }
    return MPI_SUCCESS;
}

/* Write every rank's part of the input into the send pool, and its wire
 * form (quantized into POOL_QMSG where that applies) into wires[]; while
 * the call's rider is set, each behind this rank's record. */
static int pack_parts(sparcml_call *c, sv *parts, wire *wires)
{
    sparcml_ctx *ctx = c->ctx;
    uint64_t head = c->rider ? c->rider->bytes : 0, qtotal = 0;
    char *qbuf = NULL;
    int rc;
    if (c->rider && sv_is_absent(&c->input)) return records_alone(c, parts, wires);
    rc = slice_parts(c, head, parts);
    if (rc != MPI_SUCCESS) return rc;
    for (int r = 0; r < ctx->size; r++) {
        wires[r] = wire_of(&parts[r]);
        if (r != ctx->rank && call_quantizes(c, &parts[r]))
            qtotal += sparcml_round8(head + qsgd_message_bound(&parts[r], &c->q));
    }
    /* Compressed calls' input, which never rides (core/compress.c). */
    if (c->input_block) return p2p_encode_input_parts(c, parts, ctx->size, ctx->rank, wires);
    if (qtotal > 0 && !(qbuf = ctx_buffer(ctx, POOL_QMSG, qtotal))) return call_nomem(c);
    for (int r = 0; r < ctx->size; r++) {
        qsgd_key key = {.seed = c->q.seed, .rank = (uint64_t)ctx->rank, .call = ctx->calls,
                        .message = (uint64_t)TAG_REDUCE_SCATTER << 32 | (uint64_t)r};
        if (r != ctx->rank && call_quantizes(c, &parts[r])) {
            wires[r] = (wire){.buf = qbuf + head, .quantized = 1};
            wires[r].bytes = qsgd_encode_message(&parts[r], &c->q, &key, qbuf + head);
            qbuf += sparcml_round8(head + qsgd_message_bound(&parts[r], &c->q));
        }
        if (head) p2p_frame(c, &wires[r]); /* behind room for this rank's record */
    }
    return MPI_SUCCESS;
}

static uint64_t *presence_start(sparcml_call *c, uint64_t dim)
{
    uint64_t bytes = stream_presence_bytes(dim);
    uint64_t *present = ctx_buffer(c->ctx, POOL_PRESENCE, bytes);
    if (present) memset(present, 0, bytes);
    return present;
}

/* sum (in pool *sum_pool, or -1: our own part in the send pool) += part
 * (in pool part_pool; -1: not an accumulator's).  A merge writes into
 * the accumulator neither operand is in.  A sparse sum's indices are the
 * union of the parts so far.  A dense sum carries *present, the union's
 * bitmap, or NULL once a dense part (every index) came in: its zeros
 * cannot say which indices were supplied. */
static int add_part(sparcml_call *c, sv *sum, int *sum_pool, uint64_t **present, const sv *part, int part_pool)
{
    if (sum->dense) {
        /* Our own part is never sent, so it may be summed into in place too. */
        stream_accumulate(sum, part, 0);
    } else {
        sv before = *sum;
        int out_pool = *sum_pool != POOL_ACC0 && part_pool != POOL_ACC0 ? POOL_ACC0 : POOL_ACC1;
        void *out = ctx_buffer(c->ctx, out_pool, stream_merge_bound(sum, part));
        if (!out) return call_nomem(c);
        *sum = stream_merge_add(sum, part, out);
        *sum_pool = out_pool;
        if (sum->dense && !part->dense) { /* two sparse operands, a dense sum */
            *present = presence_start(c, sum->dim);
            if (!*present) return call_nomem(c);
            stream_mark_present(&before, *present);
        }
    }
    if (part->dense) *present = NULL;
    else if (sum->dense && *present) stream_mark_present(part, *present);
    return MPI_SUCCESS;
}

/* The owner's sums.  Adding each part into one growing sum would merge
 * the sum's entries once per part: P/2 times the slice's union when the
 * parts are disjoint.  The owner keeps sums of 1, 2, 4, ... parts
 * instead, as a binary counter of the parts in: a part merges with the
 * pending sums of the counter's carry, the smallest first, so an entry
 * is merged once per level, about log2(P) times.  A sum that comes out
 * dense or shows the parts overlapping, a dense part, or pending sums
 * that would outgrow one dense slice (or the pool) end that: every
 * pending sum is folded into one, and the rest of the parts are added
 * into it one by one (`sequential`). */

/* The most bytes the pending sums of a slice of d values may take: the
 * slice dense, and a header and padding per level. */
static uint64_t levels_slack(int P)
{
    uint64_t levels = 1;
    while ((UINT64_C(1) << levels) <= (uint64_t)P) levels++;
    return levels * (SPARCML_HEADER_BYTES + 16);
}

static uint64_t levels_cap(uint64_t d, int vtype, int P)
{
    return sparcml_dense_bytes(d, vtype) + levels_slack(P);
}

/* The pending sum on top, popped: the next push goes where it lay (our
 * own part lies in the send pool). */
static sv level_pop(split_state *st, const sparcml_ctx *ctx)
{
    const char *top = st->level[--st->depth];
    if (top != st->parts[ctx->rank].base) st->levels_used = (uint64_t)(top - (const char *)ctx->pool[POOL_LEVELS]);
    return stream_view(top);
}

/* Whether a merge of `in` entries into a sparse sum of n shows the parts
 * sharing their indices: the sum keeps less than 3/4 of its operands'
 * entries, so sums grow slowly, and one growing sum merges about as much
 * as the counter would, without its copies (identical indices: 2 k
 * either way). */
static int overlapping(double n, double in)
{
    return 4 * n < 3 * in;
}

/* Every pending sum into cur (in pool cur_pool), each the first operand
 * while cur is sparse, and cur becomes the sum the rest of the parts go
 * into one by one. */
static int go_sequential(sparcml_call *c, split_state *st, sv cur, int cur_pool)
{
    int rc = MPI_SUCCESS;
    while (st->depth > 0 && rc == MPI_SUCCESS) {
        sv older = level_pop(st, c->ctx);
        int older_pool = POOL_LEVELS;
        if (cur.dense) { /* summed into in place */
            rc = add_part(c, &cur, &cur_pool, &st->present, &older, POOL_LEVELS);
            continue;
        }
        rc = add_part(c, &older, &older_pool, &st->present, &cur, cur_pool);
        cur = older;
        cur_pool = older_pool;
    }
    st->sum = cur;
    st->sum_pool = cur_pool;
    st->sequential = 1;
    return rc;
}

/* The counter's carry: *cur (in pool *cur_pool) += the `count` pending
 * sums on top, each the first operand, unless a sum comes out dense or
 * shows its parts overlapping: then every pending sum goes into it, and
 * the sums turn sequential. */
static int carry(sparcml_call *c, split_state *st, int count, sv *cur, int *cur_pool)
{
    int rc = MPI_SUCCESS;
    while (count-- > 0 && rc == MPI_SUCCESS) {
        sv older = level_pop(st, c->ctx);
        uint64_t in = older.nnz + cur->nnz;
        int older_pool = POOL_LEVELS;
        rc = add_part(c, &older, &older_pool, &st->present, cur, *cur_pool);
        *cur = older;
        *cur_pool = older_pool;
        if (rc == MPI_SUCCESS && (cur->dense || overlapping(cur->nnz, in))) return go_sequential(c, st, *cur, *cur_pool);
    }
    return rc;
}

/* cur (a merged sum in cur_pool, or the part just in) as a pending sum,
 * copied where it can stay; `own`: our own part, which stays in the send
 * pool as it is.  Pending sums beyond a dense slice (or, were its scratch
 * bound wrong, the pool) turn the sums sequential instead. */
static int level_push(sparcml_call *c, split_state *st, sv cur, int cur_pool, int own)
{
    sparcml_ctx *ctx = c->ctx;
    uint64_t bytes = sparcml_round8(stream_bytes(&cur)), used = st->levels_used + bytes;
    if (!own && (used > levels_cap(cur.dim, cur.vtype, ctx->size) || !ctx_holds(ctx, POOL_LEVELS, used)))
        return go_sequential(c, st, cur, cur_pool);
    if (!own) {
        cur = stream_copy(&cur, (char *)ctx->pool[POOL_LEVELS] + st->levels_used);
        st->levels_used += bytes;
    }
    st->level[st->depth++] = cur.base;
    st->pushed++;
    return MPI_SUCCESS;
}

/* The part of this step into the owner's sums. */
static int sum_part(sparcml_call *c, split_state *st)
{
    sv cur = st->part;
    int cur_pool = -1, own = st->step == 0, rc;
    if (st->sequential) return add_part(c, &st->sum, &st->sum_pool, &st->present, &cur, -1);
    if (cur.dense) { /* every index: the pending sums into one, this part into it */
        if (st->depth == 0) { /* our own part */
            st->sum = cur;
            st->sequential = 1;
            return MPI_SUCCESS;
        }
        rc = go_sequential(c, st, level_pop(st, c->ctx), POOL_LEVELS);
        return rc == MPI_SUCCESS ? add_part(c, &st->sum, &st->sum_pool, &st->present, &cur, -1) : rc;
    }
    /* one merge per trailing one of the parts pushed */
    rc = carry(c, st, __builtin_ctzll(~st->pushed), &cur, &cur_pool);
    if (rc != MPI_SUCCESS || st->sequential) return rc;
    if (st->step == c->ctx->size - 1) return go_sequential(c, st, cur, cur_pool); /* the last part: the sum */
    return level_push(c, st, cur, cur_pool, own);
}

/* Reduce-scatter steps: parts are received and added one per round: our
 * own first, then rank me-1's, me-2's, ... (mod P).  That is the order in
 * which the senders' staggered sends reach us (rank r sends to r+1, r+2,
 * ... first), so in each round every rank pulls from a different sender:
 * receiving in rank order would make all P-1 owners pull from rank 0
 * first, then rank 1, ..., sharing one sender's link each round wherever a
 * transfer waits for its receive (rendezvous messages; every message in
 * SimGrid).  The order is fixed for each owner, so runs stay reproducible.
 *
 * Sends run RS_SENDS_AHEAD rounds ahead of receives: round j posts the
 * part for rank me+j+RS_SENDS_AHEAD-1 before it receives, so every part is
 * out before its owner asks for it (in round i for the part from me-i),
 * but a rank never floods the others with all P-1 parts at once (each
 * receiver would hold up to P-1 unexpected messages; MPICH throttles its
 * alltoall for the same reason).  In SimGrid, which keeps every detached
 * send of the simulation in one list, all at once made P >= 512 intractable
 * (bench/RESULTS.md); the simulated times do not change. */
enum { RS_SENDS_AHEAD = 8 };

static int rs_next_part(sched *s);

/* Post the part for rank me+i, if there is one. */
static int rs_send_part(sched *s, int i)
{
    split_state *st = sched_state(s);
    int P = s->c->ctx->size, dest = (s->c->ctx->rank + i) % P;
    return i < P ? sched_send(s, &st->wires[dest], dest, TAG_REDUCE_SCATTER) : MPI_SUCCESS;
}

static int rs_part_in(sched *s)
{
    split_state *st = sched_state(s);
    int rc = MPI_SUCCESS;
    /* Our own part comes first: it stays in the send pool.  An absent part
     * (a rank whose data stayed back while the agreement rode on the
     * parts) leaves the sum absent: the records tell every rank that this
     * reduce-scatter does not count. */
    if (sv_is_absent(&st->part)) st->absent = 1;
    else if (!st->absent) rc = sum_part(s->c, st);
    st->step++;
    return rc == MPI_SUCCESS ? rs_next_part(s) : rc;
}

/* The part of this step: our own (left in the send pool) or
 * rank me-step's. */
static int rs_next_part(sched *s)
{
    split_state *st = sched_state(s);
    sparcml_call *c = s->c;
    int P = c->ctx->size, src = (c->ctx->rank - st->step + P) % P;
    if (st->step == P) { /* the last part folded every pending sum into st->sum */
        split_slice *mine = &st->mine;
        if (st->absent) st->sum = sv_absent();
        mine->sum = st->sum;
        mine->present = st->sum.dense ? st->present : NULL;
        mine->union_nnz = !st->sum.dense || sv_is_absent(&st->sum) ? st->sum.nnz
                          : st->present  ? stream_count_present(st->present, st->sum.dim)
                                         : st->sum.dim;
        sched_next_after_sends(s, st->phase_then);
        return MPI_SUCCESS;
    }
    if (st->step == 0) {
        st->part = st->parts[src];
        return rs_part_in(s);
    }
    int rc = rs_send_part(s, st->step + RS_SENDS_AHEAD - 1);
    if (rc != MPI_SUCCESS) return rc;
    sched_next(s, rs_part_in);
    return sched_recv_stream(s, src, TAG_REDUCE_SCATTER, POOL_RECV, POOL_QDEC, &st->part, NULL);
}

int split_reduce_scatter(sched *s, sched_step then)
{
    split_state *st = sched_state(s);
    sparcml_call *c = s->c;
    sparcml_ctx *ctx = c->ctx;
    int P = ctx->size, rc;
    char *scratch = ctx_buffer(ctx, POOL_PARTS, (uint64_t)P * (sizeof(sv) + sizeof(wire)));
    if (!scratch) return call_nomem(c);
    *st = (struct split_state){.parts = (sv *)scratch, .wires = (wire *)(scratch + (size_t)P * sizeof(sv)),
                               .sum = sv_absent(), .sum_pool = -1, .phase_then = then};
    stream_split_bounds(c->dim, P, ctx->offsets);
    rc = pack_parts(c, st->parts, st->wires);
    /* staggered, so not everyone hits rank 0 first; the rest go out round
     * by round (rs_next_part) */
    for (int i = 1; i < RS_SENDS_AHEAD && rc == MPI_SUCCESS; i++) rc = rs_send_part(s, i);
    return rc == MPI_SUCCESS ? rs_next_part(s) : rc;
}

static int union_known(sched *s)
{
    split_state *st = sched_state(s);
    st->result_nnz = 0;
    for (int r = 0; r < s->c->ctx->size; r++) st->result_nnz += s->c->ctx->rank_words[r];
    return st->phase_then(s);
}

int split_union(sched *s, sched_step then)
{
    split_state *st = sched_state(s);
    st->phase_then = then;
    sched_next(s, union_known);
    return sched_allgather(s, &st->mine.union_nnz, (int)sizeof st->mine.union_nnz, s->c->ctx->rank_words);
}

/* Slice r travels sparse when the result is sparse, else in the smaller
 * form: known to every rank from the owners' union sizes. */
static int travels_dense(const sparcml_call *c, int r, int result_dense)
{
    uint64_t dim = c->ctx->offsets[r + 1] - c->ctx->offsets[r];
    return result_dense && sparcml_prefers_dense(dim, c->vtype, c->ctx->rank_words[r]);
}

/* This owner's slice in the form it travels in (in POOL_SLICE if changed). */
static int slice_message(sparcml_call *c, const split_slice *mine, int dense, sv *msg)
{
    const sv *sum = &mine->sum;
    uint64_t bytes = dense ? sparcml_dense_bytes(sum->dim, sum->vtype)
                           : sparcml_sparse_bytes(sum->dim, sum->vtype, mine->union_nnz);
    void *buf;
    if (sum->dense == dense) {
        *msg = *sum;
        return MPI_SUCCESS;
    }
    buf = ctx_buffer(c->ctx, POOL_SLICE, bytes);
    if (!buf) return call_nomem(c);
    if (!dense) {
        *msg = stream_select(sum, mine->present, mine->union_nnz, buf);
        return MPI_SUCCESS;
    }
    *msg = stream_init(buf, sum->dim, sum->vtype, sum->dim, 1);
    stream_densify(sum, msg->val);
    return MPI_SUCCESS;
}

/* Views of the gathered slices, decoding quantized ones into POOL_QDEC. */
static int gathered_parts(sparcml_call *c, char *gathered, sv *parts)
{
    sparcml_ctx *ctx = c->ctx;
    uint64_t decoded = 0;
    char *dec;
    for (int r = 0; r < ctx->size; r++) {
        const char *m = gathered + ctx->displs[r];
        if (qsgd_is_message(m)) decoded += sparcml_round8(qsgd_decoded_bytes(m));
        else parts[r] = stream_view(m);
    }
    if (decoded == 0) return MPI_SUCCESS;
    dec = ctx_buffer(ctx, POOL_QDEC, decoded);
    if (!dec) return call_nomem(c);
    for (int r = 0; r < ctx->size; r++) {
        const char *m = gathered + ctx->displs[r];
        if (!qsgd_is_message(m)) continue;
        parts[r] = qsgd_decode_message(m, dec);
        dec += sparcml_round8(qsgd_decoded_bytes(m));
    }
    return MPI_SUCCESS;
}

/* Unquantized messages have sizes every rank can compute. */
static void known_sizes(sparcml_call *c, int result_dense)
{
    sparcml_ctx *ctx = c->ctx;
    for (int r = 0; r < ctx->size; r++) {
        uint64_t dim = ctx->offsets[r + 1] - ctx->offsets[r];
        ctx->counts[r] = (MPI_Count)sparcml_round8(
            travels_dense(c, r, result_dense) ? sparcml_dense_bytes(dim, c->vtype)
                                              : sparcml_sparse_bytes(dim, c->vtype, ctx->rank_words[r]));
    }
}

/* The gathered slices into recvbuf. */
static int gather_assemble(sched *s)
{
    split_state *st = sched_state(s);
    sparcml_call *c = s->c;
    sv *parts = c->ctx->pool[POOL_PARTS], result;
    int rc = gathered_parts(c, st->gathered, parts);
    if (rc != MPI_SUCCESS) return rc;
    /* The input has been consumed by the reduce-scatter, so recvbuf (which
     * holds it under MPI_IN_PLACE) may now be written. */
    result = stream_concat(parts, c->ctx->offsets, c->ctx->size, c->dim, st->dense, c->recvbuf);
    c->result_nnz = result.nnz;
    c->result_dense = result.dense;
    return MPI_SUCCESS;
}

int split_gather(sched *s)
{
    split_state *st = sched_state(s);
    sparcml_call *c = s->c;
    sparcml_ctx *ctx = c->ctx;
    uint64_t bytes;
    int rc;
    st->dense = sparcml_prefers_dense(c->dim, c->vtype, st->result_nnz);
    bytes = st->dense ? sparcml_dense_bytes(c->dim, c->vtype) : sparcml_sparse_bytes(c->dim, c->vtype, st->result_nnz);
    if (!call_result_fits(c, bytes)) return MPI_SUCCESS; /* every rank knows the same sizes */
    rc = slice_message(c, &st->mine, travels_dense(c, ctx->rank, st->dense), &st->msg);
    if (rc == MPI_SUCCESS)
        rc = p2p_encode(c, &st->msg, (uint64_t)ctx->rank, (uint64_t)TAG_ALLGATHER << 32, POOL_QMSG, &st->w);
    if (rc != MPI_SUCCESS) return rc;
    if (!c->q.bits) known_sizes(c, st->dense);
    return split_allgather_messages(s, !c->q.bits, gather_assemble);
}

/* The entries of a sum of m parts on one slice: the union of m inputs,
 * a P-th of it. */
static double slice_union(const sparcml_problem *p, int m)
{
    return cost_union_estimate(p, m) / p->P;
}

/* One growing sum of the parts, k entries each, in entries merged: the
 * sum of j parts and the next part while the sum is sparse, the part's
 * copy once it is dense. */
static double rs_merged_growing(const sparcml_problem *p, double k, double d)
{
    double merged = 0;
    for (int j = 1; j < p->P; j++) {
        double sum = slice_union(p, j);
        merged += cost_msg_is_dense(p, sum, d) ? COST_COPY_PER_MERGE * k : sum + k;
    }
    return merged;
}

/* The owner's merging (sum_part) in entries merged, k per part: its sums
 * of 1, 2, 4, ... parts as a binary counter.  A merge costs the entries of
 * both operands, a sum kept pending the copy of its entries; once a sum
 * is dense (or the pending sums would outgrow a dense slice), the pending
 * sums go into it and each later part into one growing sum; parts that
 * overlap (a pair's union below 3/4 of their entries) make one growing
 * sum from the start. */
static double rs_merged(const sparcml_problem *p, double k)
{
    double d = (double)p->dim / p->P, merged = 0, pending = 0;
    int parts[SPLIT_LEVELS_MAX + 1], depth = 0, sequential = 0;
    if (overlapping(slice_union(p, 2), 2 * slice_union(p, 1)))
        return rs_merged_growing(p, k, d);
    for (int j = 0; j < p->P; j++) {
        int cur = 1;
        if (sequential) { /* into the sum of the j parts before it */
            merged += cost_msg_is_dense(p, slice_union(p, j), d) ? COST_COPY_PER_MERGE * k : slice_union(p, j) + k;
            continue;
        }
        while (depth > 0 && parts[depth - 1] == cur && !sequential) {
            pending -= slice_union(p, parts[depth - 1]);
            merged += slice_union(p, parts[depth - 1]) + slice_union(p, cur);
            cur += parts[--depth];
            sequential = cost_msg_is_dense(p, slice_union(p, cur), d);
        }
        /* the last part is folded at once: no copy, and no cap to hit */
        sequential |= j < p->P - 1 && cost_msg_is_dense(p, pending + slice_union(p, cur), d);
        if (sequential) { /* the pending sums into this one */
            merged += cost_msg_is_dense(p, slice_union(p, j + 1), d) ? COST_COPY_PER_MERGE * pending
                                                                      : pending + slice_union(p, cur);
            depth = 0;
            continue;
        }
        if (j > 0 && j < p->P - 1) merged += COST_COPY_PER_MERGE * slice_union(p, cur);
        pending += slice_union(p, cur);
        parts[depth++] = cur;
    }
    /* the pending sums folded, the smallest first */
    int cur = depth > 0 ? parts[--depth] : 0;
    while (depth > 0) {
        int older = parts[--depth];
        merged += cost_msg_is_dense(p, slice_union(p, cur), d)
                      ? COST_COPY_PER_MERGE * slice_union(p, older)
                      : slice_union(p, older) + slice_union(p, cur);
        cur += older;
    }
    return merged;
}

/* The sparse reduce-scatter both split algorithms share.  Every rank
 * first copies its input into the P parts (pack_parts: k_max entries
 * re-based).  The owner of a slice sums the P-1 incoming parts of about
 * k/P entries as a binary counter (sum_part): each entry is merged about
 * log2(P) times, k log2(P) entries in all when the parts are disjoint
 * (one growing sum would merge P k/2); parts that share their indices
 * go into one growing sum (2 k when identical); once the sum is dense a
 * part is added into it in place, at the cost of copying its entries. */
double split_reduce_scatter_cost(const cost_model *m, const sparcml_problem *p)
{
    double P = p->P, N = (double)p->dim, k = (double)p->k_max / P;
    /* A slice keeps its input's format (stream_slice): sparse input, when
     * k_max is, sends sparse parts even where a dense slice is smaller. */
    double part = cost_msg_bytes_as(p, cost_msg_is_dense(p, (double)p->k_max, N), k, N / P);
    double quantized = cost_msg_quantized_values(p, k, N / P);
    double packed = COST_COPY_PER_MERGE * (double)p->k_max;
    return (P - 1) * (m->alpha + m->beta * part) + m->gamma * (packed + rs_merged(p, k))
           + m->gamma * cost_qsgd((P - 1) * quantized, (P - 1) * quantized);
}

/* --- scratch (alg/scratch.h) ------------------------------------------- */

/* Pool bounds that depend on a slice's dimension d (stream_split_bounds
 * makes two: dim / P and one more). */
static void slice_scratch(const sparcml_call *c, const sparcml_problem *p, uint64_t d, uint64_t *need)
{
    uint64_t k = p->k_max < d ? p->k_max : d, u = p->k_sum < d ? p->k_sum : d, dense = sparcml_dense_bytes(d, p->vtype);
    uint64_t part = sparcml_sparse_bytes(d, p->vtype, k), sum = scratch_sum_bytes(d, p->vtype, p->k_sum);
    uint64_t slice = 0, msg = part, levels;
    int sum_dense = scratch_may_be_dense(d, p->vtype, p->k_sum);
    qsgd_params q = scratch_wire_q(p);
    if (p->k_max >= p->dim && part < dense) part = dense; /* a dense input's */
    /* A dense sum may travel sparse (selected), a sparse one dense (the
     * result is). */
    if (sum_dense) slice = sparcml_sparse_bytes(d, p->vtype, u);
    if (scratch_may_be_dense(p->dim, p->vtype, p->k_sum) && slice < dense) slice = dense;
    if (q.bits) msg = scratch_coded_bytes(d, p->vtype, p->k_max, &q, 1);
    if (c->input_q.bits) msg = qsgd_grid_bound(p->k_max, sparcml_index_width(p->dim), p->vtype, &c->input_q, 1);
    scratch_need(need, POOL_RECV, part);
    scratch_need(need, POOL_RECV, msg);
    if (q.bits || c->input_q.bits) scratch_need(need, POOL_QDEC, part); /* a part decoded */
    scratch_need(need, POOL_ACC0, sum);
    scratch_need(need, POOL_ACC1, sum);
    levels = levels_slack(p->P) + p->k_sum * (sparcml_index_width(d) + sparcml_value_size(p->vtype));
    scratch_need(need, POOL_LEVELS, levels < levels_cap(d, p->vtype, p->P) ? levels : levels_cap(d, p->vtype, p->P));
    scratch_need(need, POOL_SLICE, slice);
    if (sum_dense) scratch_need(need, POOL_PRESENCE, stream_presence_bytes(d));
    msg = slice > sum ? slice : sum;
    if (q.bits) {
        scratch_need(need, POOL_QMSG, scratch_coded_bytes(d, p->vtype, p->k_sum, &q, 1));
        if (need[POOL_QMSG] > msg) msg = need[POOL_QMSG];
    }
    scratch_need(need, POOL_SLOT, sparcml_round8(msg));
}

/* All P gathered slices: sparse ones hold the union (at most k_sum
 * entries), dense ones only where that is smaller, and a dense slice
 * quantized holds its d values, at most 3 times the union's entries there
 * (sparcml_prefers_dense); padded to a common slot by at most 1/16. */
static uint64_t gathered_bytes(const sparcml_problem *p)
{
    uint64_t iw = sparcml_index_width(p->dim), vs = sparcml_value_size(p->vtype), P = (uint64_t)p->P;
    uint64_t u = p->k_sum < p->dim ? p->k_sum : p->dim, plain = u * (iw + vs), total, coded_values;
    qsgd_params q = scratch_wire_q(p);
    if (plain > p->dim * vs) plain = p->dim * vs;
    total = P * (SPARCML_HEADER_BYTES + 16) + plain;
    coded_values = 3 * u < p->dim ? 3 * u : p->dim;
    if (q.bits && qsgd_grid_bound(coded_values, (unsigned)iw, p->vtype, &q, P) > total)
        total = qsgd_grid_bound(coded_values, (unsigned)iw, p->vtype, &q, P);
    return total + total / 16 + 8 * P;
}

void split_scratch(const sparcml_call *c, const sparcml_problem *p, uint64_t *need)
{
    uint64_t P = (uint64_t)p->P, iw = sparcml_index_width(p->dim), vs = sparcml_value_size(p->vtype);
    uint64_t d = p->dim / P;
    qsgd_params q = scratch_wire_q(p);
    slice_scratch(c, p, d, need);
    if (d * P < p->dim) slice_scratch(c, p, d + 1, need);
    scratch_need(need, POOL_PARTS, P * (sizeof(sv) + sizeof(wire)));
    scratch_need(need, POOL_SEND, P * (SPARCML_HEADER_BYTES + 16) + p->k_max * (iw + vs));
    if (q.bits) scratch_need(need, POOL_QMSG, qsgd_grid_bound(p->k_max, (unsigned)iw, p->vtype, &q, P));
    if (c->input_q.bits)
        scratch_need(need, POOL_QMSG, qsgd_grid_bound(p->k_max, (unsigned)iw, p->vtype, &c->input_q, P));
    scratch_need(need, POOL_GATHER, gathered_bytes(p));
    if (q.bits) scratch_need(need, POOL_QDEC, gathered_bytes(p)); /* the slices decoded */
}

/* Riding the reduce-scatter, every part (POOL_SEND), and its quantized form
 * (POOL_QMSG), is behind this rank's record, and every part received
 * behind its sender's (slice_parts, pack_parts). */
void split_ride_scratch(const sparcml_call *c, const sparcml_problem *p, uint64_t record, uint64_t *need)
{
    uint64_t P = (uint64_t)c->ctx->size;
    need[POOL_RECV] += record;
    need[POOL_SEND] += P * record;
    if (p->qbits) need[POOL_QMSG] += P * record;
}
