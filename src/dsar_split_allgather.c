/* dsar_split_allgather.c -- DSAR_Split_allgather (SparCML, SC'19, 5.2).
 *
 * Sparse reduce-scatter as in SSAR_Split_allgather, but each owner turns its
 * reduced slice dense, written straight into its place in recvbuf, and a
 * dense in-place MPI_Allgatherv completes the result.  The choice once the
 * sum has filled in: the allgather moves (P-1)/P * N values per rank with
 * no index overhead and no local assembly. */
#include "config.h"

#include "call.h"

int sparcml_dsar_split_allgather(sparcml_call *c)
{
    sparcml_ctx *ctx = c->ctx;
    int P = ctx->size, me = ctx->rank, rc;
    sv mine, out;

    /* Decided before any message: every rank has the same dim and count. */
    if (sparcml_dense_bytes(c->dim, c->vtype) > c->recv_bytes) {
        c->reason = SPARCML_R_CAPACITY;
        return MPI_SUCCESS;
    }
    rc = split_reduce_scatter(c, &mine);
    if (rc != MPI_SUCCESS) return rc;
    out = stream_init(c->recvbuf, c->dim, c->vtype, c->dim, 1);
    stream_densify(&mine, (char *)out.val + ctx->offsets[me] * out.vs);
    for (int r = 0; r < P; r++) {
        ctx->counts[r] = (MPI_Count)((ctx->offsets[r + 1] - ctx->offsets[r]) * out.vs);
        ctx->displs[r] = (MPI_Aint)(ctx->offsets[r] * out.vs);
    }
    /* As for a ring allgather: everything but this rank's own slice. */
    c->bytes_sent += c->dim * out.vs - (uint64_t)ctx->counts[me];
    rc = PMPI_Allgatherv_c(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out.val, ctx->counts, ctx->displs,
                           MPI_BYTE, ctx->comm);
    c->result_nnz = c->dim;
    c->result_dense = 1;
    return rc;
}
