/* dsar_split_allgather.c -- DSAR_Split_allgather (SparCML, SC'19, 5.2).
 *
 * Algorithm: sparse reduce-scatter as in SSAR_Split_allgather, but each
 *   owner turns its reduced slice dense, written straight into its place in
 *   recvbuf, and a dense in-place MPI_Allgatherv completes the result.  The
 *   choice once the sum has filled in: the allgather moves (P-1)/P N values
 *   per rank with no index overhead and no local assembly.  With QSGD the
 *   dense slices travel quantized instead: each owner encodes its slice
 *   once, the messages are allgathered, and every rank (the owner too)
 *   decodes all of them, so all hold the same bits.
 *   The result must still follow the size rule: when no rank's input alone
 *   makes it dense (k_max), the owners' union sizes are allgathered first,
 *   and a result that turns out sparse is gathered as SSAR_Split_allgather
 *   gathers it.
 * Restrictions: a dense result must fit recvbuf (else MPI_ERR_TRUNCATE).
 * Cost (select.c, cost_dsar_split): the reduce-scatter, ceil(log2 P) alpha
 *   + beta (P-1)/P N vs, plus ceil(log2 P) alpha for the union sizes when
 *   the result's format is not certain.
 * Memory: the reduce-scatter's parts and sums; the result in recvbuf.
 * Rounds: P-1 point-to-point, then one allgather (two when the format is
 *   not certain). */
#include "config.h"

#include <string.h>

#include "call.h"
#include "mpi_flavour.h"

static int allgather_dense(sparcml_call *c, sv *out)
{
    sparcml_ctx *ctx = c->ctx;
    for (int r = 0; r < ctx->size; r++) {
        ctx->counts[r] = (MPI_Count)((ctx->offsets[r + 1] - ctx->offsets[r]) * out->vs);
        ctx->displs[r] = (MPI_Aint)(ctx->offsets[r] * out->vs);
    }
    /* As for a ring allgather: everything but this rank's own slice. */
    c->bytes_sent += c->dim * out->vs - (uint64_t)ctx->counts[ctx->rank];
    return flv_allgatherv_bytes(MPI_IN_PLACE, 0, out->val, ctx->counts, ctx->displs, ctx->comm);
}

static int allgather_quantized(sparcml_call *c, const sv *mine, sv *out)
{
    sparcml_ctx *ctx = c->ctx;
    uint64_t dim = ctx->offsets[ctx->rank + 1] - ctx->offsets[ctx->rank];
    void *dense = ctx_buffer(ctx, POOL_QOWN, sparcml_dense_bytes(dim, c->vtype));
    char *gathered;
    sv slice;
    wire w;
    int rc;
    if (!dense) return CALL_NOMEM(c);
    slice = stream_init(dense, dim, c->vtype, dim, 1);
    stream_densify(mine, slice.val);
    rc = p2p_encode(c, &slice, (uint64_t)ctx->rank, (uint64_t)TAG_ALLGATHER << 32, POOL_QMSG, &w);
    if (rc == MPI_SUCCESS) rc = split_allgather_messages(c, &w, 0, &gathered);
    if (rc != MPI_SUCCESS) return rc;
    for (int r = 0; r < ctx->size; r++) {
        const char *m = gathered + ctx->displs[r];
        void *tmp = ctx_buffer(ctx, POOL_QDEC, qsgd_is_message(m) ? qsgd_decoded_bytes(m) : 8);
        sv part;
        if (!tmp) return CALL_NOMEM(c);
        part = qsgd_is_message(m) ? qsgd_decode_message(m, tmp) : stream_view(m);
        memcpy((char *)out->val + ctx->offsets[r] * out->vs, part.val, part.dim * out->vs);
    }
    return MPI_SUCCESS;
}

int sparcml_dsar_split_allgather(sparcml_call *c)
{
    sparcml_ctx *ctx = c->ctx;
    split_slice mine;
    uint64_t result_nnz;
    int rc;
    sv out;

    rc = split_reduce_scatter(c, &mine);
    if (rc != MPI_SUCCESS) return rc;
    /* Every rank has the same k_max, and then the same union sizes. */
    if (!sparcml_prefers_dense(c->dim, c->vtype, c->k_max)) {
        rc = split_union(c, &mine, &result_nnz);
        if (rc != MPI_SUCCESS) return rc;
        if (!sparcml_prefers_dense(c->dim, c->vtype, result_nnz)) return split_gather(c, &mine, result_nnz);
    }
    if (sparcml_dense_bytes(c->dim, c->vtype) > c->recv_bytes) {
        c->reason = SPARCML_R_CAPACITY;
        return MPI_SUCCESS;
    }
    /* The input has been consumed: recvbuf may be written. */
    out = stream_init(c->recvbuf, c->dim, c->vtype, c->dim, 1);
    c->result_nnz = c->dim;
    c->result_dense = 1;
    if (c->q.bits) return allgather_quantized(c, &mine.sum, &out);
    stream_densify(&mine.sum, (char *)out.val + ctx->offsets[ctx->rank] * out.vs);
    return allgather_dense(c, &out);
}
