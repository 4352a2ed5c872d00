/* dense_allreduce.c -- the dense path: densify into recvbuf and let the
 * vendor's MPI_Allreduce do the rest.  Chosen when the cost model predicts
 * that the sum is (or quickly becomes) dense enough that index overhead and
 * merging cost more than they save. */
#include "config.h"

#include "call.h"

static MPI_Datatype mpi_value_type(int vtype)
{
    switch (vtype) {
    case SPARCML_FLOAT: return MPI_FLOAT;
    case SPARCML_DOUBLE: return MPI_DOUBLE;
    case SPARCML_INT32: return MPI_INT32_T;
    default: return MPI_INT64_T;
    }
}

int sparcml_dense_allreduce(sparcml_call *c)
{
    int P = c->ctx->size;
    uint64_t dense = sparcml_dense_bytes(c->dim, c->vtype);
    sv src = c->input, out;
    if (dense > c->recv_bytes) {
        c->reason = SPARCML_R_CAPACITY;
        return MPI_SUCCESS;
    }
    /* Under MPI_IN_PLACE a sparse input would be overwritten while it is
     * being expanded: expand from a copy. */
    if (src.base == c->recvbuf && !src.dense) {
        void *copy = ctx_buffer(c->ctx, POOL_SEND, stream_bytes(&src));
        if (!copy) return CALL_NOMEM(c);
        src = stream_copy(&src, copy);
    }
    out = stream_init(c->recvbuf, c->dim, c->vtype, c->dim, 1);
    stream_densify(&src, out.val);
    /* What a bandwidth-optimal (ring / Rabenseifner) allreduce sends. */
    c->bytes_sent += 2 * (uint64_t)(P - 1) * (c->dim * out.vs) / (uint64_t)P;
    c->result_nnz = c->dim;
    c->result_dense = 1;
    return PMPI_Allreduce_c(MPI_IN_PLACE, out.val, (MPI_Count)c->dim, mpi_value_type(c->vtype),
                            MPI_SUM, c->ctx->comm);
}
