/* forced.c -- a forced algorithm whose restriction rules the call out.
 *
 * dsar_split_allgather and dense write a dense result (dense also expands
 * every rank's input into a dense vector): both need a recv buffer that
 * holds the dense vector.  With a recv buffer that holds only the sparse
 * result, a forced one of them must fail on every rank with
 * MPI_ERR_TRUNCATE before it expands anything -- also at dimension 2^40,
 * where the dense vector would be 4 TiB (the process's peak memory stays
 * small) -- while SPARCML_ALGORITHM=auto (or a sparse algorithm) sums the
 * same call.  Every rank contributes 64 entries at the same indices, value
 * rank + 1, so the sum is P (P + 1) / 2 at each of them; a correct call
 * with a dense-size buffer follows every failure.  argv[1]: "refused"
 * (expect the error) or "summed" (expect the sum). */
#include <string.h>
#include <sys/resource.h>

#include "testlib.h"

#define NNZ 64

static int rank, size, failures;

static void expect(int cond, const char *what, uint64_t dim)
{
    if (cond) return;
    failures++;
    fprintf(stderr, "FAIL rank %d: dim %llu: %s\n", rank, (unsigned long long)dim, what);
}

/* This rank's input: NNZ entries spread over [0, dim). */
static void input(void *buf, MPI_Count count, uint64_t dim)
{
    uint64_t idx[NNZ];
    float v[NNZ];
    for (int i = 0; i < NNZ; i++) {
        idx[i] = (uint64_t)i * (dim / NNZ);
        v[i] = (float)(rank + 1);
    }
    sparcml_stream_from_sorted(buf, count, dim, SPARCML_FLOAT, NNZ, idx, v);
}

/* The result holds the NNZ indices, each with P (P + 1) / 2. */
static int is_sum(const void *buf, uint64_t dim)
{
    sparcml_header h;
    float want = (float)size * (float)(size + 1) / 2;
    if (sparcml_stream_header(buf, &h) != SPARCML_OK || h.dim != dim || h.nnz != NNZ) return 0;
    for (uint64_t i = 0; i < NNZ; i++) {
        uint64_t index;
        float v;
        sparcml_stream_entry(buf, i, &index, &v);
        if (index != i * (dim / NNZ) || v != want) return 0;
    }
    return 1;
}

static void one_call(MPI_Datatype t, uint64_t dim, int refused)
{
    MPI_Count count = sparcml_sparse_capacity(dim, SPARCML_FLOAT, NNZ);
    void *send = t_alloc_words(count), *recv = t_alloc_words(count);
    int rc, cls = MPI_SUCCESS;
    input(send, count, dim);
    memset(recv, 0, (size_t)count * 8);
    rc = t_allreduce_c(send, recv, count, t, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    if (refused) {
        expect(rc != MPI_SUCCESS && cls == MPI_ERR_TRUNCATE, "no MPI_ERR_TRUNCATE", dim);
    } else {
        expect(rc == MPI_SUCCESS, "the call failed", dim);
        expect(rc != MPI_SUCCESS || is_sum(recv, dim), "wrong sum", dim);
    }
    free(send);
    free(recv);
}

/* A call whose dense result fits: summed whatever the algorithm. */
static void fitting_call(MPI_Datatype t)
{
    uint64_t dim = 4096;
    MPI_Count count = sparcml_capacity(dim, SPARCML_FLOAT);
    void *send = t_alloc_words(count), *recv = t_alloc_words(count);
    float *dense = malloc(dim * sizeof *dense);
    int ok = 1, rc;
    input(send, count, dim);
    rc = MPI_Allreduce(send, recv, (int)count, t, MPI_SUM, MPI_COMM_WORLD);
    expect(rc == MPI_SUCCESS, "the call with room for a dense result failed", dim);
    if (rc == MPI_SUCCESS) {
        sparcml_stream_to_dense(recv, dense, dim);
        for (uint64_t i = 0; i < dim; i++)
            ok &= dense[i] == (i % (dim / NNZ) == 0 ? (float)size * (float)(size + 1) / 2 : 0.0f);
        expect(ok, "wrong sum with room for a dense result", dim);
    }
    free(dense);
    free(send);
    free(recv);
}

int main(int argc, char **argv)
{
    MPI_Datatype t;
    struct rusage ru;
    int refused = argc > 1 && strcmp(argv[1], "refused") == 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    sparcml_type_create(SPARCML_FLOAT, &t);
    for (int round = 0; round < 2; round++) { /* a failure leaves nothing behind */
        one_call(t, 1u << 20, refused);
        fitting_call(t);
        one_call(t, UINT64_C(1) << 40, refused);
        fitting_call(t);
    }
    getrusage(RUSAGE_SELF, &ru);
    expect(ru.ru_maxrss < 512 * 1024, "peak memory above 512 MiB", UINT64_C(1) << 40);
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("forced: P=%d %s failures=%d\n", size, refused ? "refused" : "summed", failures);
    MPI_Type_free(&t);
    MPI_Finalize();
    return failures ? 1 : 0;
}
