/* ssar_split_allgather.c -- SSAR_Split_allgather (SparCML, SC'19, 5.2).
 *
 * Sparse reduce-scatter (split_reduce_scatter.c), then an allgather of the
 * reduced slices, which stay sparse where that is smaller.  Slices differ in
 * size, so their sizes are allgathered first and the slices go with
 * MPI_Allgatherv.  Bandwidth-optimal for large k while the result is still
 * sparse: every byte of the result crosses each link about once. */
#include "config.h"

#include <string.h>

#include "call.h"

int sparcml_ssar_split_allgather(sparcml_call *c)
{
    sparcml_ctx *ctx = c->ctx;
    int P = ctx->size, rc;
    MPI_Count my_bytes, total = 0;
    sv mine, *parts;
    char *gathered;

    rc = split_reduce_scatter(c, &mine);
    if (rc != MPI_SUCCESS) return rc;
    /* Send whole words so every gathered slice starts 8-byte aligned; zero
     * the tail so no uninitialised byte goes on the wire. */
    my_bytes = (MPI_Count)stream_bytes8(&mine);
    memset((char *)mine.base + stream_bytes(&mine), 0, (size_t)my_bytes - stream_bytes(&mine));
    rc = PMPI_Allgather(&my_bytes, 1, MPI_COUNT, ctx->counts, 1, MPI_COUNT, ctx->comm);
    if (rc != MPI_SUCCESS) return rc;
    for (int r = 0; r < P; r++) {
        ctx->displs[r] = (MPI_Aint)total;
        total += ctx->counts[r];
    }
    /* A ring allgather sends every slice but the last one it receives:
     * per rank about the total less its own slice. */
    c->bytes_sent += (uint64_t)(total - my_bytes);
    gathered = ctx_buffer(ctx, POOL_GATHER, (uint64_t)total);
    if (!gathered) return CALL_NOMEM(c);
    rc = PMPI_Allgatherv_c(mine.base, my_bytes, MPI_BYTE, gathered, ctx->counts, ctx->displs,
                           MPI_BYTE, ctx->comm);
    if (rc != MPI_SUCCESS) return rc;

    parts = ctx->pool[POOL_PARTS];
    for (int r = 0; r < P; r++) parts[r] = stream_view(gathered + ctx->displs[r]);
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
