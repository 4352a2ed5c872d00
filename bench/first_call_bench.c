/* first_call_bench.c -- what the first tagged MPI_Allreduce on a new
 * communicator costs (the library duplicates the communicator and detects
 * the ranks per core there) against the next call on it, side by side:
 * for each of ROUNDS communicators (MPI_Comm_dup of MPI_COMM_WORLD), the
 * first and the second call of the same small sum, slowest rank's time.
 *   first_call_bench [ROUNDS]      prints medians in microseconds */
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>
#include "sparcml.h"

enum { DIM = 1000 };

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double timed_call(void *in, void *out, MPI_Count cap, MPI_Datatype t, MPI_Comm c)
{
    double dt, worst;
    PMPI_Barrier(c);
    dt = MPI_Wtime();
    MPI_Allreduce(in, out, (int)cap, t, MPI_SUM, c);
    dt = MPI_Wtime() - dt;
    PMPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, c);
    return worst;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20, rank, P;
    MPI_Datatype t;
    MPI_Count cap = sparcml_capacity(DIM, SPARCML_FLOAT);
    void *in = aligned_alloc(8, (size_t)cap * 8), *out = aligned_alloc(8, (size_t)cap * 8);
    double *first, *second;
    uint64_t idx[10];
    float val[10];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (rounds < 1) rounds = 1;
    first = malloc((size_t)rounds * sizeof *first);
    second = malloc((size_t)rounds * sizeof *second);
    sparcml_type_create(SPARCML_FLOAT, &t);
    for (int i = 0; i < 10; i++) { idx[i] = (uint64_t)(i * 97 + rank); val[i] = 1.0f; }
    sparcml_stream_from_sorted(in, cap, DIM, SPARCML_FLOAT, 10, idx, val);
    for (int r = 0; r < rounds; r++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        first[r] = timed_call(in, out, cap, t, c);
        second[r] = timed_call(in, out, cap, t, c);
        MPI_Comm_free(&c);
    }
    qsort(first, (size_t)rounds, sizeof *first, cmp);
    qsort(second, (size_t)rounds, sizeof *second, cmp);
    if (rank == 0)
        printf("first_call_bench: P=%d rounds=%d first_call_us=%.1f next_call_us=%.1f (medians)\n", P, rounds,
               first[rounds / 2] * 1e6, second[rounds / 2] * 1e6);
    MPI_Type_free(&t);
    MPI_Finalize();
    return 0;
}
