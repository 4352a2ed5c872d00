/*
 * exchange_floor.c - the communication floor of a collective's message
 * pattern on the rig, with no computation (bench/RESULTS.md, "gap to the
 * bound").
 *
 * Replays, with plain MPI_Sendrecv of raw bytes on MPI_COMM_WORLD, the
 * messages that sparcml's recursive doubling sends for disjoint indices:
 * round j (j = 0 .. log2(P)-1) exchanges BYTES * 2^j bytes with rank XOR 2^j
 * (P must be a power of two).  With --ring it instead replays a ring
 * allgather of P-1 steps of BYTES each (the shape of the split algorithms'
 * second phase and of the Lemma 5.1 bandwidth term).
 *
 * Every repetition starts with a barrier; its time is the maximum over ranks.
 * Output (rank 0): pattern, P, bytes, median seconds, the model
 * rounds*alpha + sent*beta for --alpha-us/--beta-ns, and their ratio.
 *
 * Usage: exchange_floor [--ring] --bytes B [--reps R] [--alpha-us A] [--beta-ns B]
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

/* One repetition; returns bytes this rank sent and the rounds it took. */
static long long run_once(int ring, long long bytes, char *sbuf, char *rbuf, int rank, int P,
                          int *rounds)
{
    long long sent = 0;
    *rounds = 0;
    if (ring) {
        int right = (rank + 1) % P, left = (rank + P - 1) % P;
        for (int step = 0; step < P - 1; step++, ++*rounds) {
            MPI_Sendrecv(sbuf, (int)bytes, MPI_BYTE, right, 1, rbuf, (int)bytes, MPI_BYTE, left, 1,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            sent += bytes;
        }
        return sent;
    }
    for (int mask = 1; mask < P; mask <<= 1, ++*rounds) {
        long long b = bytes * mask;
        MPI_Sendrecv(sbuf, (int)b, MPI_BYTE, rank ^ mask, 2, rbuf, (int)b, MPI_BYTE, rank ^ mask, 2,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        sent += b;
    }
    return sent;
}

int main(int argc, char **argv)
{
    int rank, P, ring = 0, reps = 20, rounds = 0;
    long long bytes = 0, sent = 0;
    double alpha_us = 0, beta_ns = 0, *t;
    char *sbuf, *rbuf;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ring") == 0) ring = 1;
        else if (i + 1 < argc && strcmp(argv[i], "--bytes") == 0) bytes = atoll(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--reps") == 0) reps = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--alpha-us") == 0) alpha_us = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--beta-ns") == 0) beta_ns = atof(argv[++i]);
        else bytes = -1;
    }
    if (bytes <= 0 || reps < 1 || P < 2 || (!ring && (P & (P - 1))) ||
        bytes * (ring ? 1 : P / 2) > 1 << 30) {
        if (rank == 0)
            fprintf(stderr, "usage: exchange_floor [--ring] --bytes B [--reps R] [--alpha-us A] "
                            "[--beta-ns B]  (P >= 2; a power of two without --ring)\n");
        MPI_Finalize();
        return 2;
    }
    sbuf = malloc((size_t)bytes * (ring ? 1 : (size_t)P / 2));
    rbuf = malloc((size_t)bytes * (ring ? 1 : (size_t)P / 2));
    t = malloc(sizeof(double) * (size_t)reps);
    if (!sbuf || !rbuf || !t) MPI_Abort(MPI_COMM_WORLD, 2);
    memset(sbuf, 7, (size_t)bytes * (ring ? 1 : (size_t)P / 2));

    for (int r = -2; r < reps; r++) {
        double t0, dt, mx;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        sent = run_once(ring, bytes, sbuf, rbuf, rank, P, &rounds);
        dt = MPI_Wtime() - t0;
        MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (r >= 0) t[r] = mx;
    }
    if (rank == 0) {
        double med, model = rounds * alpha_us * 1e-6 + (double)sent * beta_ns * 1e-9;
        qsort(t, (size_t)reps, sizeof(double), cmp_double);
        med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
        printf("pattern=%s P=%d bytes=%lld sent_per_rank=%lld median_s=%.6f min_s=%.6f "
               "model_s=%.6f ratio=%.2f\n",
               ring ? "ring" : "recursive_doubling", P, bytes, sent, med, t[0], model,
               model > 0 ? med / model : 0.0);
    }
    free(sbuf);
    free(rbuf);
    free(t);
    MPI_Finalize();
    return 0;
}
