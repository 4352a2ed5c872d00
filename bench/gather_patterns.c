/* gather_patterns.c -- one in-place allgather of BYTES in all (an equal
 * share per rank), three ways side by side in one run: the vendor's
 * MPI_Allgatherv, recursive doubling (P a power of two: in round k a rank
 * swaps its group's 2^k shares with rank ^ 2^k, the pattern of the
 * library's own gather) and a ring (P - 1 rounds, each share passed on to
 * the next rank, the pattern of MPICH's allgatherv for long vectors).  The
 * three run in turn, the first of each repetition rotating; after one
 * untimed round, REPS timed ones, slowest rank's time; every run's
 * result is checked (share r holds bytes r + 1) before the next.
 *   gather_patterns BYTES [REPS]   prints "pattern,P,bytes,median_ms,mean_ms" */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

enum { VENDOR, RECURSIVE_DOUBLING, RING, PATTERNS };
static const char *const names[PATTERNS] = {"vendor", "recursive_doubling", "ring"};

static int recursive_doubling(char *buf, int share, int rank, int P)
{
    int rc = MPI_SUCCESS;
    for (int d = 1; d < P && rc == MPI_SUCCESS; d <<= 1) {
        int peer = rank ^ d;
        rc = MPI_Sendrecv(buf + (size_t)(rank & ~(d - 1)) * share, d * share, MPI_BYTE, peer, 0,
                          buf + (size_t)(peer & ~(d - 1)) * share, d * share, MPI_BYTE, peer, 0, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE);
    }
    return rc;
}

static int ring(char *buf, int share, int rank, int P)
{
    int rc = MPI_SUCCESS, next = (rank + 1) % P, prev = (rank + P - 1) % P;
    for (int s = 0; s < P - 1 && rc == MPI_SUCCESS; s++) {
        int out = (rank + P - s) % P, in = (rank + 2 * P - s - 1) % P;
        rc = MPI_Sendrecv(buf + (size_t)out * share, share, MPI_BYTE, next, 0, buf + (size_t)in * share, share,
                          MPI_BYTE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return rc;
}

static int run(int pattern, char *buf, int share, const int *counts, const int *displs, int rank, int P)
{
    switch (pattern) {
    case VENDOR:
        return MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
    case RECURSIVE_DOUBLING: return recursive_doubling(buf, share, rank, P);
    default: return ring(buf, share, rank, P);
    }
}

/* Share r holds byte r + 1 (mod 256) after the gather; before it, only
 * this rank's share does. */
static void fill(char *buf, int share, int rank, int P)
{
    memset(buf, 0, (size_t)share * (size_t)P);
    memset(buf + (size_t)rank * share, rank + 1, (size_t)share);
}

static int gathered(const char *buf, int share, int P)
{
    for (size_t i = 0; i < (size_t)share * (size_t)P; i++)
        if (buf[i] != (char)(i / (size_t)share + 1)) return 0;
    return 1;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rank, P, reps = argc > 2 ? atoi(argv[2]) : 10;
    long long bytes = argc > 1 ? atoll(argv[1]) : 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (bytes < P || bytes / P > 1 << 30 || reps < 1 || (P & (P - 1)) != 0) {
        if (rank == 0) fprintf(stderr, "usage: gather_patterns BYTES [REPS] (P a power of two, BYTES/P <= 1 GiB)\n");
        MPI_Finalize();
        return 2;
    }
    int share = (int)(bytes / P), *counts = malloc(2 * (size_t)P * sizeof *counts);
    char *buf = calloc((size_t)share * (size_t)P, 1);
    double *t = malloc(PATTERNS * (size_t)reps * sizeof *t);
    if (!counts || !buf || !t) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int r = 0; r < P; r++) {
        counts[r] = share;
        counts[P + r] = r * share;
    }
    for (int k = -1; k < reps; k++) /* k = -1: the untimed round */
        for (int i = 0; i < PATTERNS; i++) {
            int pattern = (i + (k < 0 ? 0 : k)) % PATTERNS;
            double dt;
            fill(buf, share, rank, P);
            MPI_Barrier(MPI_COMM_WORLD);
            dt = MPI_Wtime();
            if (run(pattern, buf, share, counts, counts + P, rank, P) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
            dt = MPI_Wtime() - dt;
            if (!gathered(buf, share, P)) {
                fprintf(stderr, "gather_patterns: rank %d: %s gathered wrong bytes\n", rank, names[pattern]);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (k >= 0) t[pattern * reps + k] = dt;
        }
    for (int p = 0; rank == 0 && p < PATTERNS; p++) {
        double *s = t + p * reps, sum = 0;
        for (int k = 0; k < reps; k++) sum += s[k];
        qsort(s, (size_t)reps, sizeof *s, cmp);
        printf("%s,%d,%lld,%.3f,%.3f\n", names[p], P, (long long)share * P,
               1e3 * (reps % 2 ? s[reps / 2] : (s[reps / 2 - 1] + s[reps / 2]) / 2), 1e3 * sum / reps);
    }
    free(counts);
    free(buf);
    free(t);
    MPI_Finalize();
    return 0;
}
