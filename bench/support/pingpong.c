/*
 * pingpong.c - measure the alpha/beta of the netsim rig (docs/netsim.md).
 *
 * Ranks 0 and 1 ping-pong; all other ranks only wait in the final barrier
 * (so that `netsim.sh measure P` can run with the same P as the real job).
 *
 *   alpha = median over iterations of (round trip of SMALL bytes) / 2
 *   t_big = median over iterations of (round trip of BIG bytes) / 2
 *   beta  = (t_big - alpha) / BIG          [seconds per byte]
 *
 * Usage: pingpong [SMALL=8] [BIG=16777216] [SMALL_ITERS=1000] [BIG_ITERS=7]
 * Output (rank 0, machine readable, one key=value per line):
 *   alpha_us=  beta_ns_per_byte=  bandwidth_MBps=  big_oneway_us=  ...
 *
 * Usage: pingpong --sizes MIN MAX
 *   the median one-way time of every power-of-two size from MIN to MAX
 *   bytes, as CSV lines "size_bytes,oneway_us" (rank 0): the rig's
 *   message-size curve (docs/netsim.md: with the default tbf burst, sizes
 *   up to 128 KiB pass faster than the line rate; NETSIM_TBF=line not).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Returns the median one-way time (half round trip) in seconds on rank 0. */
static double pingpong(int rank, char *buf, int bytes, int iters, int warmup)
{
    double *t = malloc(sizeof(double) * (size_t)iters);
    double res = 0.0;
    int i;

    if (t == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (i = -warmup; i < iters; i++) {
        double t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
        if (i >= 0)
            t[i] = (MPI_Wtime() - t0) / 2.0;
    }
    if (rank == 0)
        res = median(t, iters);
    free(t);
    return res;
}

/* Iterations per size: about 0.3 s of transfers, at least 7, at most 300. */
static int sweep_iters(int bytes)
{
    long it = 300000L / (1 + bytes / 1000);
    return it < 7 ? 7 : it > 300 ? 300 : (int)it;
}

static void size_sweep(int rank, int min, int max)
{
    char *buf = malloc((size_t)max);
    int bytes;

    if (buf == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    memset(buf, 1, (size_t)max);
    if (rank == 0)
        printf("size_bytes,oneway_us\n");
    for (bytes = min; bytes <= max && bytes > 0; bytes *= 2) {
        double t = pingpong(rank, buf, bytes, sweep_iters(bytes), 3);
        if (rank == 0)
            printf("%d,%.2f\n", bytes, t * 1e6);
    }
    if (rank == 0)
        fflush(stdout);
    free(buf);
}

int main(int argc, char **argv)
{
    int rank, size;
    int small = 8, big = 16 * 1024 * 1024, small_iters = 1000, big_iters = 7;
    char *buf;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc == 4 && strcmp(argv[1], "--sizes") == 0) {
        int min = atoi(argv[2]), max = atoi(argv[3]);
        if (size < 2 || min < 1 || max < min) {
            if (rank == 0)
                fprintf(stderr, "pingpong: --sizes needs >= 2 ranks and 1 <= MIN <= MAX\n");
            MPI_Finalize();
            return 1;
        }
        if (rank < 2)
            size_sweep(rank, min, max);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        return 0;
    }
    if (argc > 1) small = atoi(argv[1]);
    if (argc > 2) big = atoi(argv[2]);
    if (argc > 3) small_iters = atoi(argv[3]);
    if (argc > 4) big_iters = atoi(argv[4]);
    if (size < 2 || small < 1 || big < 1 || small_iters < 1 || big_iters < 1) {
        if (rank == 0)
            fprintf(stderr, "pingpong: need >= 2 ranks and positive args\n");
        MPI_Finalize();
        return 1;
    }
    buf = malloc((size_t)(big > small ? big : small));
    if (buf == NULL)
        MPI_Abort(MPI_COMM_WORLD, 2);
    memset(buf, 1, (size_t)(big > small ? big : small));

    if (rank < 2) {
        double a = pingpong(rank, buf, small, small_iters, 100);
        double tb = pingpong(rank, buf, big, big_iters, 1);
        if (rank == 0) {
            double beta = (tb - a) / (double)big;
            printf("ranks=%d\n", size);
            printf("small_bytes=%d\nbig_bytes=%d\n", small, big);
            printf("alpha_us=%.2f\n", a * 1e6);
            printf("big_oneway_us=%.1f\n", tb * 1e6);
            printf("beta_ns_per_byte=%.4f\n", beta * 1e9);
            printf("bandwidth_MBps=%.1f\n", (double)big / tb / 1e6);
            fflush(stdout);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    MPI_Finalize();
    return 0;
}
