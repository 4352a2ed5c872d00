/*
 * dense_allreduce_time.c - time a dense MPI_Allreduce (MPI_FLOAT, MPI_SUM),
 * used to validate the netsim rig against the link model (docs/netsim.md).
 *
 * Usage: dense_allreduce_time [COUNT=16777216] [REPS=3]
 * One untimed warm-up, then REPS timed calls, each preceded by a barrier;
 * a call's time is the maximum over ranks.  The result is checked.
 * Output (rank 0, key=value per line):
 *   rep_s=...  (one per rep)  dense_allreduce_s_median=  _min=  algbw_MBps=
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rank, size, r, reps = 3, bad = 0, allbad = 0;
    long count = 16L * 1024 * 1024, i;
    float *in, *out;
    double *t;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1) count = atol(argv[1]);
    if (argc > 2) reps = atoi(argv[2]);
    if (count < 1 || count > 0x7fffffffL || reps < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: %s [COUNT] [REPS]\n", argv[0]);
        MPI_Finalize();
        return 1;
    }
    in = malloc(sizeof(float) * (size_t)count);
    out = malloc(sizeof(float) * (size_t)count);
    t = malloc(sizeof(double) * (size_t)reps);
    if (in == NULL || out == NULL || t == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (i = 0; i < count; i++)
        in[i] = (float)(rank + 1); /* small integers: sum is exact */

    MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (r = 0; r < reps; r++) {
        double t0, dt, dtmax;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        dt = MPI_Wtime() - t0;
        MPI_Reduce(&dt, &dtmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        t[r] = dtmax;
    }
    for (i = 0; i < count; i += 4093)
        if (out[i] != (float)size * (float)(size + 1) / 2.0f)
            bad = 1;
    MPI_Reduce(&bad, &allbad, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        double bytes = (double)count * sizeof(float);
        printf("ranks=%d\ncount=%ld\nbytes=%.0f\n", size, count, bytes);
        for (r = 0; r < reps && r < 10; r++) /* keep the output short */
            printf("rep_s=%.6f\n", t[r]);
        qsort(t, (size_t)reps, sizeof(double), cmp_double);
        printf("dense_allreduce_s_min=%.6f\n", t[0]);
        printf("dense_allreduce_s_median=%.6f\n", t[reps / 2]);
        /* bus bandwidth as a ring would need it: 2(P-1)/P * bytes / time */
        printf("ring_busbw_MBps=%.1f\n",
               2.0 * (size - 1) / size * bytes / t[reps / 2] / 1e6);
        printf("result=%s\n", allbad ? "WRONG" : "ok");
        fflush(stdout);
    }
    free(in);
    free(out);
    free(t);
    MPI_Finalize();
    return allbad ? 3 : 0;
}
