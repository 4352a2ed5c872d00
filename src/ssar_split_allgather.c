/* ssar_split_allgather.c -- SSAR_Split_allgather (SparCML, SC'19, 5.2).
 *
 * Sparse reduce-scatter (split_phases.c), then an allgather of the reduced
 * slices, which stay sparse where that is smaller.  Bandwidth-optimal for
 * large k while the result is still sparse: every byte of the result
 * crosses each link about once.  With QSGD, each owner quantizes its slice
 * once and every rank -- the owner too -- decodes the same bits. */
#include "config.h"

#include "call.h"

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

int sparcml_ssar_split_allgather(sparcml_call *c)
{
    sparcml_ctx *ctx = c->ctx;
    int P = ctx->size, rc;
    sv mine, *parts;
    wire w;
    char *gathered;

    rc = split_reduce_scatter(c, &mine);
    if (rc == MPI_SUCCESS) rc = p2p_encode(c, &mine, (uint64_t)ctx->rank, (uint64_t)TAG_ALLGATHER << 32, POOL_QMSG, &w);
    if (rc == MPI_SUCCESS) rc = split_allgather_messages(c, &w, &gathered);
    parts = ctx->pool[POOL_PARTS];
    if (rc == MPI_SUCCESS) rc = gathered_parts(c, gathered, parts);
    if (rc != MPI_SUCCESS) return rc;
    if (stream_concat_bytes(parts, P, c->dim) > c->recv_bytes) {
        c->reason = SPARCML_R_CAPACITY;
        return MPI_SUCCESS;
    }
    /* The input has been consumed by the reduce-scatter, so recvbuf (which
     * holds it under MPI_IN_PLACE) may now be written. */
    mine = stream_concat(parts, ctx->offsets, P, c->dim, c->recvbuf);
    c->result_nnz = mine.nnz;
    c->result_dense = mine.dense;
    return MPI_SUCCESS;
}
