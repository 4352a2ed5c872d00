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

/* acc (in pool *acc_pool, or -1: our own part in the send pool) += part. */
static int add_part(sparcml_call *c, sv *acc, int *acc_pool, const sv *part)
{
    int out_pool;
    void *out;
    /* Our own part is never sent, so it may be summed into in place too. */
    if (acc->dense) {
        stream_accumulate(acc, part, 0);
        return MPI_SUCCESS;
    }
    out_pool = *acc_pool == POOL_ACC0 ? POOL_ACC1 : POOL_ACC0;
    out = ctx_buffer(c->ctx, out_pool, stream_merge_bound(acc, part));
    if (!out) return CALL_NOMEM(c);
    *acc = stream_merge_add(acc, part, out);
    *acc_pool = out_pool;
    return MPI_SUCCESS;
}

int split_reduce_scatter(sparcml_call *c, sv *mine)
{
    sparcml_ctx *ctx = c->ctx;
    int P = ctx->size, me = ctx->rank, rc, nreq = 0, acc_pool = -1, where;
    char *scratch = ctx_buffer(ctx, POOL_PARTS, (uint64_t)P * (sizeof(sv) + sizeof(wire)));
    sv *parts = (sv *)scratch, part;
    wire *wires = (wire *)(scratch + (size_t)P * sizeof(sv));
    if (!scratch) return CALL_NOMEM(c);
    split_bounds(c->dim, P, ctx->offsets);
    rc = pack_parts(c, parts, wires);
    if (rc != MPI_SUCCESS) return rc;
    for (int i = 1; i < P && rc == MPI_SUCCESS; i++) {
        int r = (me + i) % P; /* staggered, so not everyone hits rank 0 first */
        rc = p2p_isend(c, &wires[r], r, TAG_REDUCE_SCATTER, &ctx->reqs[nreq++]);
    }
    for (int src = 0; src < P && rc == MPI_SUCCESS; src++) {
        if (src == me) {
            part = parts[me];
            where = -1;
        } else {
            rc = p2p_recv(c, src, TAG_REDUCE_SCATTER, POOL_RECV, POOL_QDEC, &part, &where);
            if (rc != MPI_SUCCESS) break;
        }
        if (src == 0) {
            *mine = part;
            if (where >= 0) { /* keep it out of the way of the next receive */
                swap_pools(ctx, where, POOL_ACC0);
                acc_pool = POOL_ACC0;
            }
        } else {
            rc = add_part(c, mine, &acc_pool, &part);
        }
    }
    for (int i = 0; i < nreq; i++) PMPI_Wait(&ctx->reqs[i], MPI_STATUS_IGNORE);
    return rc;
}

int split_allgather_messages(sparcml_call *c, const wire *mine, char **gathered)
{
    sparcml_ctx *ctx = c->ctx;
    MPI_Count my_bytes = (MPI_Count)sparcml_round8(mine->bytes), total = 0;
    int rc;
    /* Whole words, so every gathered message starts 8-byte aligned; zero the
     * tail so no uninitialised byte goes on the wire (every pool buffer is
     * allocated in multiples of 64 bytes, so the tail is there). */
    memset((char *)mine->buf + mine->bytes, 0, (size_t)my_bytes - mine->bytes);
    rc = PMPI_Allgather(&my_bytes, 1, MPI_COUNT, ctx->counts, 1, MPI_COUNT, ctx->comm);
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
    return PMPI_Allgatherv_c(mine->buf, my_bytes, MPI_BYTE, *gathered, ctx->counts, ctx->displs,
                             MPI_BYTE, ctx->comm);
}
