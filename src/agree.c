/* agree.c -- one allreduce of a fixed record: maxima, minima (as maxima of
 * negated values) and sums, combined by a user-defined operation. */
#include "config.h"

#include <pthread.h>

#include "agree.h"
#include "errors.h"

enum {
    F_REASON, /* reason << 24 | (2^24 - 1 - rank): the lowest rank wins ties */
    F_DIM_MAX, F_DIM_NEG,
    F_VTYPE_MAX, F_VTYPE_NEG,
    F_COUNT_MAX, F_COUNT_NEG,
    F_NNZ_MAX, F_NNZ_NEG,
    F_DENSE_MAX,
    F_HASH_MAX, F_HASH_NEG,
    F_NNZ_SUM, /* the summed fields: keep them last */
    F_UNION_SUM,
    F_COUNT_
};

#define RANK_BITS 24

static MPI_Op agree_op = MPI_OP_NULL;
static MPI_Datatype agree_type = MPI_DATATYPE_NULL;
static pthread_once_t agree_once = PTHREAD_ONCE_INIT;

static void agree_combine(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const int64_t *a = in;
    int64_t *b = inout;
    (void)dt;
    for (int e = 0; e < *len; e++, a += F_COUNT_, b += F_COUNT_) {
        for (int f = 0; f < F_NNZ_SUM; f++)
            if (a[f] > b[f]) b[f] = a[f];
        for (int f = F_NNZ_SUM; f < F_COUNT_; f++)
            b[f] = (int64_t)((uint64_t)a[f] + (uint64_t)b[f]);
    }
}

static void agree_init(void)
{
    /* One element is the whole record, so MPI never splits it. */
    PMPI_Type_contiguous(F_COUNT_, MPI_INT64_T, &agree_type);
    PMPI_Type_commit(&agree_type);
    PMPI_Op_create(agree_combine, 1, &agree_op);
}

static int64_t reason_field(int reason, int rank)
{
    if (reason == 0) return 0;
    return ((int64_t)reason << RANK_BITS) | (int64_t)((1 << RANK_BITS) - 1 - rank);
}

int agree(MPI_Comm comm, int rank, const sparcml_local *l, sparcml_agreed *out)
{
    int64_t v[F_COUNT_] = {0};
    int rc;
    pthread_once(&agree_once, agree_init);
    v[F_REASON] = reason_field(l->reason, rank);
    v[F_DIM_MAX] = (int64_t)l->dim;        v[F_DIM_NEG] = -(int64_t)l->dim;
    v[F_VTYPE_MAX] = l->vtype;             v[F_VTYPE_NEG] = -l->vtype;
    v[F_COUNT_MAX] = (int64_t)l->count;    v[F_COUNT_NEG] = -(int64_t)l->count;
    v[F_NNZ_MAX] = (int64_t)l->nnz;        v[F_NNZ_NEG] = -(int64_t)l->nnz;
    v[F_DENSE_MAX] = l->dense;
    v[F_HASH_MAX] = (int64_t)l->settings_hash; v[F_HASH_NEG] = -(int64_t)l->settings_hash;
    v[F_NNZ_SUM] = (int64_t)l->nnz;
    v[F_UNION_SUM] = (int64_t)l->union_part;
    rc = PMPI_Allreduce(MPI_IN_PLACE, v, 1, agree_type, agree_op, comm);
    if (rc != MPI_SUCCESS) return rc;

    out->reason = (int)(v[F_REASON] >> RANK_BITS);
    out->reason_rank = out->reason ? (1 << RANK_BITS) - 1 - (int)(v[F_REASON] & ((1 << RANK_BITS) - 1)) : -1;
    out->dim = (uint64_t)v[F_DIM_MAX];
    out->vtype = (int)v[F_VTYPE_MAX];
    out->count = (MPI_Count)v[F_COUNT_MAX];
    out->k_max = (uint64_t)v[F_NNZ_MAX];
    out->k_min = (uint64_t)-v[F_NNZ_NEG];
    out->k_sum = (uint64_t)v[F_NNZ_SUM];
    out->any_dense = (int)v[F_DENSE_MAX];
    out->union_sum = (uint64_t)v[F_UNION_SUM];
    if (out->reason) return MPI_SUCCESS;
    /* Arguments valid everywhere: do the ranks agree with each other? */
    if (v[F_DIM_MAX] != -v[F_DIM_NEG]) out->reason = SPARCML_R_DIM_MISMATCH;
    else if (v[F_VTYPE_MAX] != -v[F_VTYPE_NEG]) out->reason = SPARCML_R_VALUE_TYPE_MISMATCH;
    else if (v[F_COUNT_MAX] != -v[F_COUNT_NEG]) out->reason = SPARCML_R_COUNT_MISMATCH;
    else if (v[F_HASH_MAX] != -v[F_HASH_NEG]) out->reason = SPARCML_R_CONFIG_MISMATCH;
    return MPI_SUCCESS;
}

void agree_finalize(void)
{
    /* Only this thread runs MPI_Finalize, and no allreduce runs any more. */
    if (agree_op != MPI_OP_NULL) PMPI_Op_free(&agree_op);
    if (agree_type != MPI_DATATYPE_NULL) PMPI_Type_free(&agree_type);
}
