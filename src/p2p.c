/* p2p.c -- point-to-point exchange of streams on the private communicator,
 * and delivery of the result. */
#include "config.h"

#include <string.h>

#include "call.h"

void call_deliver(sparcml_call *c, const sv *result)
{
    uint64_t bytes = stream_bytes(result);
    c->result_nnz = result->nnz;
    c->result_dense = result->dense;
    /* Every rank holds the same result and the same capacity, so every rank
     * takes the same branch here. */
    if (bytes > c->recv_bytes) {
        c->reason = SPARCML_R_CAPACITY;
        return;
    }
    if (result->base != c->recvbuf) memmove(c->recvbuf, result->base, bytes);
}

int p2p_send(sparcml_call *c, const sv *s, int dest, int tag)
{
    MPI_Count n = (MPI_Count)stream_bytes(s);
    c->bytes_sent += (uint64_t)n;
    return PMPI_Send_c(s->base, n, MPI_BYTE, dest, tag, c->ctx->comm);
}

int p2p_isend(sparcml_call *c, const sv *s, int dest, int tag, MPI_Request *req)
{
    MPI_Count n = (MPI_Count)stream_bytes(s);
    c->bytes_sent += (uint64_t)n;
    return PMPI_Isend_c(s->base, n, MPI_BYTE, dest, tag, c->ctx->comm, req);
}

int p2p_recv(sparcml_call *c, int src, int tag, int which, sv *out)
{
    MPI_Message msg;
    MPI_Status st;
    MPI_Count n;
    void *buf;
    int rc = PMPI_Mprobe(src, tag, c->ctx->comm, &msg, &st);
    if (rc != MPI_SUCCESS) return rc;
    PMPI_Get_count_c(&st, MPI_BYTE, &n);
    buf = ctx_buffer(c->ctx, which, (uint64_t)n);
    if (!buf) {
        /* Still take the message off the queue so the sender completes. */
        char drain;
        PMPI_Mrecv_c(&drain, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        return CALL_NOMEM(c);
    }
    rc = PMPI_Mrecv_c(buf, n, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
    *out = stream_view(buf);
    return MPI_SUCCESS;
}
