/* split_phases.c -- the two phases the split algorithms share (SparCML,
 * SC'19, 5.2 "split allgather").
 *
 * Reduce-scatter: [0, dim) is cut into P nearly equal ranges; rank r owns
 * range r.  Every rank sends the part of its stream in range r to rank r
 * (each part is a stream of its own: sparse or dense, whichever is smaller,
 * QSGD-quantized by its sender when enabled) and sums what it receives for
 * its own range.  Parts are added in rank order, so the sum -- and with it
 * the final result -- does not depend on message arrival order: runs are
 * reproducible.
 *
 * Allgather of messages of different sizes: the sizes first (one
 * MPI_Allgather), then MPI_Allgatherv. */
#include "config.h"

#include <string.h>

#include "call.h"
#include "mpi_flavour.h"

void split_bounds(uint64_t dim, int P, uint64_t *offsets)
{
    uint64_t base = dim / (uint64_t)P, extra = dim % (uint64_t)P;
    for (int r = 0; r <= P; r++)
        offsets[r] = (uint64_t)r * base + ((uint64_t)r < extra ? (uint64_t)r : extra);
}

/* Write every rank's part of the input into the send pool, and its wire
 * form (quantized into POOL_QMSG where that applies) into wires[]. */
static int pack_parts(sparcml_call *c, sv *parts, wire *wires)
{
    sparcml_ctx *ctx = c->ctx;
    const uint64_t *lo = ctx->offsets;
    uint64_t total = 0, qtotal = 0;
    char *buf, *qbuf = NULL;
    for (int r = 0; r < ctx->size; r++) {
        ctx->displs[r] = (MPI_Aint)total;
        total += sparcml_round8(stream_slice_bytes(&c->input, lo[r], lo[r + 1]));
    }
    buf = ctx_buffer(ctx, POOL_SEND, total);
    if (!buf) return CALL_NOMEM(c);
    for (int r = 0; r < ctx->size; r++) {
        parts[r] = stream_slice(&c->input, lo[r], lo[r + 1], buf + ctx->displs[r]);
        wires[r] = wire_of(&parts[r]);
        if (r != ctx->rank && call_quantizes(c, &parts[r]))
            qtotal += sparcml_round8(qsgd_message_bound(&parts[r], &c->q));
    }
    if (qtotal == 0) return MPI_SUCCESS;
    qbuf = ctx_buffer(ctx, POOL_QMSG, qtotal);
    if (!qbuf) return CALL_NOMEM(c);
    for (int r = 0; r < ctx->size; r++) {
        qsgd_key key = {c->q.seed, (uint64_t)ctx->rank, ctx->calls,
                        (uint64_t)TAG_REDUCE_SCATTER << 32 | (uint64_t)r};
        if (r == ctx->rank || !call_quantizes(c, &parts[r])) continue;
        wires[r].buf = qbuf;
        wires[r].bytes = qsgd_encode_message(&parts[r], &c->q, &key, qbuf);
        wires[r].quantized = 1;
        qbuf += sparcml_round8(qsgd_message_bound(&parts[r], &c->q));
    }
    return MPI_SUCCESS;
}

static void swap_pools(sparcml_ctx *ctx, int a, int b)
{
    void *p = ctx->pool[a];
    size_t n = ctx->pool_bytes[a];
    ctx->pool[a] = ctx->pool[b];
    ctx->pool_bytes[a] = ctx->pool_bytes[b];
    ctx->pool[b] = p;
    ctx->pool_bytes[b] = n;
}

static uint64_t *presence_start(sparcml_call *c, uint64_t dim)
{
    uint64_t bytes = (dim + 63) / 64 * 8;
    uint64_t *present = ctx_buffer(c->ctx, POOL_PRESENCE, bytes);
    if (present) memset(present, 0, bytes);
    return present;
}

/* sum (in pool *sum_pool, or -1: our own part in the send pool) += part.
 * A sparse sum's indices are the union of the parts so far.  A dense sum
 * carries *present, the union's bitmap, or NULL once a dense part (every
 * index) came in: its zeros cannot say which indices were supplied. */
static int add_part(sparcml_call *c, sv *sum, int *sum_pool, uint64_t **present, const sv *part)
{
    if (sum->dense) {
        /* Our own part is never sent, so it may be summed into in place too. */
        stream_accumulate(sum, part, 0);
    } else {
        sv before = *sum;
        int out_pool = *sum_pool == POOL_ACC0 ? POOL_ACC1 : POOL_ACC0;
        void *out = ctx_buffer(c->ctx, out_pool, stream_merge_bound(sum, part));
        if (!out) return CALL_NOMEM(c);
        *sum = stream_merge_add(sum, part, out);
        *sum_pool = out_pool;
        if (sum->dense && !part->dense) { /* two sparse operands, a dense sum */
            *present = presence_start(c, sum->dim);
            if (!*present) return CALL_NOMEM(c);
            stream_mark_present(&before, *present);
        }
    }
    if (part->dense) *present = NULL;
    else if (sum->dense && *present) stream_mark_present(part, *present);
    return MPI_SUCCESS;
}

/* The part from rank src, or our own (left in the send pool: *where = -1). */
static int next_part(sparcml_call *c, const sv *parts, int src, sv *part, int *where)
{
    if (src == c->ctx->rank) {
        *part = parts[src];
        *where = -1;
        return MPI_SUCCESS;
    }
    return p2p_recv(c, src, TAG_REDUCE_SCATTER, POOL_RECV, POOL_QDEC, part, where);
}

int split_reduce_scatter(sparcml_call *c, split_slice *mine)
{
    sparcml_ctx *ctx = c->ctx;
    int P = ctx->size, me = ctx->rank, rc, nreq = 0, sum_pool = -1, where;
    char *scratch = ctx_buffer(ctx, POOL_PARTS, (uint64_t)P * (sizeof(sv) + sizeof(wire)));
    sv *parts = (sv *)scratch, part, sum = sv_absent();
    wire *wires = (wire *)(scratch + (size_t)P * sizeof(sv));
    uint64_t *present = NULL;
    if (!scratch) return CALL_NOMEM(c);
    split_bounds(c->dim, P, ctx->offsets);
    rc = pack_parts(c, parts, wires);
    if (rc != MPI_SUCCESS) return rc;
    for (int i = 1; i < P && rc == MPI_SUCCESS; i++) {
        int r = (me + i) % P; /* staggered, so not everyone hits rank 0 first */
        rc = p2p_isend(c, &wires[r], r, TAG_REDUCE_SCATTER, &ctx->reqs[nreq++]);
    }
    for (int src = 0; src < P && rc == MPI_SUCCESS; src++) {
        rc = next_part(c, parts, src, &part, &where);
        if (rc != MPI_SUCCESS) break;
        if (src > 0) {
            rc = add_part(c, &sum, &sum_pool, &present, &part);
            continue;
        }
        sum = part;
        if (where >= 0) { /* keep it out of the way of the next receive */
            swap_pools(ctx, where, POOL_ACC0);
            sum_pool = POOL_ACC0;
        }
    }
    for (int i = 0; i < nreq; i++) {
        int wrc = PMPI_Wait(&ctx->reqs[i], MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS) rc = wrc;
    }
    mine->sum = sum;
    mine->present = sum.dense ? present : NULL;
    mine->union_nnz = !sum.dense ? sum.nnz : present ? stream_count_present(present, sum.dim) : sum.dim;
    return rc;
}

int split_union(sparcml_call *c, const split_slice *mine, uint64_t *total)
{
    sparcml_ctx *ctx = c->ctx;
    uint64_t u = mine->union_nnz;
    int rc = PMPI_Allgather(&u, 1, MPI_UINT64_T, ctx->unions, 1, MPI_UINT64_T, ctx->comm);
    *total = 0;
    for (int r = 0; r < ctx->size; r++) *total += ctx->unions[r];
    return rc;
}

/* Slice r travels sparse when the result is sparse, else in the smaller
 * form: known to every rank from the owners' union sizes. */
static int travels_dense(const sparcml_call *c, int r, int result_dense)
{
    uint64_t dim = c->ctx->offsets[r + 1] - c->ctx->offsets[r];
    return result_dense && sparcml_prefers_dense(dim, c->vtype, c->ctx->unions[r]);
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
    if (!buf) return CALL_NOMEM(c);
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
    if (!dec) return CALL_NOMEM(c);
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
                                              : sparcml_sparse_bytes(dim, c->vtype, ctx->unions[r]));
    }
}

int split_gather(sparcml_call *c, const split_slice *mine, uint64_t result_nnz)
{
    sparcml_ctx *ctx = c->ctx;
    int dense = sparcml_prefers_dense(c->dim, c->vtype, result_nnz), rc;
    uint64_t bytes = dense ? sparcml_dense_bytes(c->dim, c->vtype)
                           : sparcml_sparse_bytes(c->dim, c->vtype, result_nnz);
    sv msg, *parts = ctx->pool[POOL_PARTS], result;
    char *gathered;
    wire w;
    if (bytes > c->recv_bytes) { /* every rank knows the same sizes */
        c->reason = SPARCML_R_CAPACITY;
        return MPI_SUCCESS;
    }
    rc = slice_message(c, mine, travels_dense(c, ctx->rank, dense), &msg);
    if (rc == MPI_SUCCESS)
        rc = p2p_encode(c, &msg, (uint64_t)ctx->rank, (uint64_t)TAG_ALLGATHER << 32, POOL_QMSG, &w);
    if (rc != MPI_SUCCESS) return rc;
    if (!c->q.bits) known_sizes(c, dense);
    rc = split_allgather_messages(c, &w, !c->q.bits, &gathered);
    if (rc == MPI_SUCCESS) rc = gathered_parts(c, gathered, parts);
    if (rc != MPI_SUCCESS) return rc;
    /* The input has been consumed by the reduce-scatter, so recvbuf (which
     * holds it under MPI_IN_PLACE) may now be written. */
    result = stream_concat(parts, ctx->offsets, ctx->size, c->dim, dense, c->recvbuf);
    c->result_nnz = result.nnz;
    c->result_dense = result.dense;
    return MPI_SUCCESS;
}

int split_allgather_messages(sparcml_call *c, const wire *mine, int sizes_known, char **gathered)
{
    sparcml_ctx *ctx = c->ctx;
    MPI_Count my_bytes = (MPI_Count)sparcml_round8(mine->bytes), total = 0;
    int rc = MPI_SUCCESS;
    /* Whole words, so every gathered message starts 8-byte aligned; zero the
     * tail so no uninitialised byte goes on the wire (every pool buffer is
     * allocated in multiples of 64 bytes, so the tail is there). */
    memset((char *)mine->buf + mine->bytes, 0, (size_t)my_bytes - mine->bytes);
    if (!sizes_known) rc = PMPI_Allgather(&my_bytes, 1, MPI_COUNT, ctx->counts, 1, MPI_COUNT, ctx->comm);
    if (rc != MPI_SUCCESS) return rc;
    for (int r = 0; r < ctx->size; r++) {
        ctx->displs[r] = (MPI_Aint)total;
        total += ctx->counts[r];
    }
    /* A ring allgather sends every message but the last one it receives:
     * per rank about the total less its own. */
    c->bytes_sent += (uint64_t)(total - my_bytes);
    *gathered = ctx_buffer(ctx, POOL_GATHER, (uint64_t)total);
    if (!*gathered) return CALL_NOMEM(c);
    return flv_allgatherv_bytes(mine->buf, my_bytes, *gathered, ctx->counts, ctx->displs, ctx->comm);
}
