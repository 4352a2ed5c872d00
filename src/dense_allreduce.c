/* dense_allreduce.c -- the dense path: the vendor's MPI_Allreduce.
 *
 * Algorithm: each rank expands its stream into a dense vector and the
 *   vendor's MPI_Allreduce sums it (Rabenseifner or recursive doubling, the
 *   vendor's choice).  Chosen when the cost model predicts that the sum is
 *   (or quickly becomes) dense enough that index overhead and merging cost
 *   more than they save.  The result must still follow the size rule: when
 *   no rank's input alone makes it dense (k_max), the ranks' index sets are
 *   OR-ed as bitmaps (N/8 bytes, one more vendor allreduce), and a union
 *   whose sparse form is smaller makes the result sparse.
 * Restrictions: the dense vector must fit recvbuf, or, for a sparse
 *   result, a pool buffer.
 * Cost (select.c, cost_dense): the vendor's min(ceil(log2 P) (alpha + beta
 *   D), 2 ceil(log2 P) alpha + 2 (P-1)/P beta D), plus the same for D/(8 vs)
 *   bytes of bitmap when the format is not certain.
 * Memory: recvbuf; a pool copy of a sparse input under MPI_IN_PLACE; the
 *   bitmap and a dense pool vector when the result's format is not certain.
 * Rounds: the vendor's; twice when the format is not certain. */
#include "config.h"

#include <string.h>

#include "call.h"
#include "mpi_flavour.h"

static MPI_Datatype mpi_value_type(int vtype)
{
    switch (vtype) {
    case SPARCML_FLOAT: return MPI_FLOAT;
    case SPARCML_DOUBLE: return MPI_DOUBLE;
    case SPARCML_INT32: return MPI_INT32_T;
    default: return MPI_INT64_T;
    }
}

/* The union of every rank's indices, in POOL_PRESENCE; *n its size. */
static int union_bitmap(sparcml_call *c, uint64_t **present, uint64_t *n)
{
    uint64_t words = (c->dim + 63) / 64;
    int rc;
    *present = ctx_buffer(c->ctx, POOL_PRESENCE, words * 8);
    if (!*present) return CALL_NOMEM(c);
    memset(*present, 0, words * 8);
    stream_mark_present(&c->input, *present); /* sparse: k_max says so */
    c->bytes_sent += 2 * (uint64_t)(c->ctx->size - 1) * words * 8 / (uint64_t)c->ctx->size;
    rc = flv_allreduce(MPI_IN_PLACE, *present, (MPI_Count)words, MPI_UINT64_T, MPI_BOR,
                          c->ctx->comm);
    *n = stream_count_present(*present, c->dim);
    return rc;
}

/* The dense sum into out (a dense stream header and values at buf). */
static int dense_sum(sparcml_call *c, void *buf, sv *out)
{
    int P = c->ctx->size;
    sv src = c->input;
    /* Under MPI_IN_PLACE a sparse input would be overwritten while it is
     * being expanded into recvbuf: expand from a copy. */
    if (src.base == buf && !src.dense) {
        void *copy = ctx_buffer(c->ctx, POOL_SEND, stream_bytes(&src));
        if (!copy) return CALL_NOMEM(c);
        src = stream_copy(&src, copy);
    }
    *out = stream_init(buf, c->dim, c->vtype, c->dim, 1);
    stream_densify(&src, out->val);
    /* What a bandwidth-optimal (ring / Rabenseifner) allreduce sends. */
    c->bytes_sent += 2 * (uint64_t)(P - 1) * (c->dim * out->vs) / (uint64_t)P;
    return flv_allreduce(MPI_IN_PLACE, out->val, (MPI_Count)c->dim, mpi_value_type(c->vtype),
                            MPI_SUM, c->ctx->comm);
}

int sparcml_dense_allreduce(sparcml_call *c)
{
    uint64_t dense = sparcml_dense_bytes(c->dim, c->vtype), n = c->dim;
    uint64_t *present = NULL;
    void *buf;
    int rc;
    sv out;
    /* Every rank has the same k_max, and then the same union. */
    if (!sparcml_prefers_dense(c->dim, c->vtype, c->k_max)) {
        rc = union_bitmap(c, &present, &n);
        if (rc != MPI_SUCCESS) return rc;
    }
    if (!sparcml_prefers_dense(c->dim, c->vtype, n)) {
        if (sparcml_sparse_bytes(c->dim, c->vtype, n) > c->recv_bytes) {
            c->reason = SPARCML_R_CAPACITY;
            return MPI_SUCCESS;
        }
        buf = ctx_buffer(c->ctx, POOL_ACC0, dense);
        if (!buf) return CALL_NOMEM(c);
        rc = dense_sum(c, buf, &out);
        if (rc != MPI_SUCCESS) return rc;
        out = stream_select(&out, present, n, c->recvbuf);
    } else {
        if (dense > c->recv_bytes) {
            c->reason = SPARCML_R_CAPACITY;
            return MPI_SUCCESS;
        }
        rc = dense_sum(c, c->recvbuf, &out);
        if (rc != MPI_SUCCESS) return rc;
    }
    c->result_nnz = out.nnz;
    c->result_dense = out.dense;
    return MPI_SUCCESS;
}
