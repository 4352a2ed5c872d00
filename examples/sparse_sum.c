/* sparse_sum.c -- the smallest useful sparcml program.
 *
 * Every rank holds a sparse vector (k non-zeros out of N), sums it across
 * MPI_COMM_WORLD with one MPI_Allreduce on a tagged datatype, and checks the
 * sum against a dense MPI_Allreduce of the same data.  Built with plain
 * mpicc; run it with the shim preloaded:
 *
 *   mpiexec -n 4 env LD_PRELOAD=libsparcml.so SPARCML_VERBOSE=1 ./sparse_sum [N] [k]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <sparcml.h>

int main(int argc, char **argv)
{
    uint64_t N = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    uint64_t k = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000;
    int rank, size, rc;
    MPI_Datatype stream_type;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (N == 0 || k > N) {
        if (rank == 0) fprintf(stderr, "usage: sparse_sum [N > 0] [k <= N]\n");
        MPI_Finalize();
        return 2;
    }

    /* k random (index, value) pairs; duplicates are summed by the helper. */
    uint64_t *idx = malloc(k * sizeof *idx);
    float *val = malloc(k * sizeof *val), *dense = calloc(N, sizeof *dense);
    float *dense_sum = malloc(N * sizeof *dense_sum), *result = malloc(N * sizeof *result);
    srand(1234 + rank);
    for (uint64_t i = 0; i < k; i++) {
        idx[i] = ((uint64_t)rand() * RAND_MAX + (uint64_t)rand()) % N;
        val[i] = (float)rand() / (float)RAND_MAX;
        dense[idx[i]] += val[i];
    }

    /* 1. Tag a datatype (plain MPI: any language can do this). */
    sparcml_type_create(SPARCML_FLOAT, &stream_type);
    /* 2. Buffers of `count` 8-byte words; capacity() always suffices. */
    MPI_Count count = sparcml_capacity(N, SPARCML_FLOAT);
    void *send = aligned_alloc(8, (size_t)count * 8), *recv = aligned_alloc(8, (size_t)count * 8);
    sparcml_stream_from_pairs(send, count, N, SPARCML_FLOAT, k, idx, val);
    /* 3. One ordinary MPI_Allreduce. */
    double t0 = MPI_Wtime();
    rc = MPI_Allreduce(send, recv, (int)count, stream_type, MPI_SUM, MPI_COMM_WORLD);
    double t_sparse = MPI_Wtime() - t0;
    if (rc != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
    /* 4. Read the result back (it may be sparse or dense). */
    sparcml_header h;
    sparcml_stream_header(recv, &h);
    sparcml_stream_to_dense(recv, result, N);

    t0 = MPI_Wtime();
    MPI_Allreduce(dense, dense_sum, (int)N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t_dense = MPI_Wtime() - t0;
    double max_err = 0;
    for (uint64_t i = 0; i < N; i++) max_err = fmax(max_err, fabs(result[i] - dense_sum[i]));

    if (rank == 0)
        printf("sparse_sum: P=%d N=%llu k=%llu: result %s with %llu entries, max |sparse - dense| = %g, "
               "sparse %.3f ms, dense %.3f ms\n",
               size, (unsigned long long)N, (unsigned long long)k,
               h.format == SPARCML_DENSE ? "dense" : "sparse", (unsigned long long)h.nnz, max_err,
               t_sparse * 1e3, t_dense * 1e3);
    MPI_Type_free(&stream_type);
    free(idx); free(val); free(dense); free(dense_sum); free(result); free(send); free(recv);
    MPI_Finalize();
    return max_err < 1e-4 ? 0 : 1;
}
