/* overlap_bench.c -- how much of a non-blocking tagged allreduce hides
 * behind computation, side by side in one run:
 *
 *   comm      MPI_Allreduce alone                      -> t_comm
 *   compute   the computation alone                    -> t_compute
 *   blocking  compute, then MPI_Allreduce              -> t_blocking
 *   testing   MPI_Iallreduce, compute with an MPI_Test every --test-us
 *             microseconds, MPI_Wait                   -> t_testing
 *   silent    MPI_Iallreduce, compute, MPI_Wait        -> t_silent
 *
 * The modes alternate iteration by iteration, so drift of the shared
 * machine hits all alike; an iteration's time is the slowest rank's;
 * medians are reported.  The computation is a fixed amount of arithmetic
 * per rank (what an application's layer would do), calibrated so that,
 * with every rank computing at once, it takes about --compute-ms (default:
 * the measured t_comm).  Overlap efficiency of a mode m:
 *   (t_blocking - t_m) / min(t_comm, t_compute)
 * 1 = the shorter of the two is hidden completely, 0 = nothing is.
 * With --compute=sleep the "computation" sleeps instead (in steps of
 * --test-us when testing): work done elsewhere, e.g. on an accelerator,
 * which leaves the CPU to communication.  Rank 0 reports how busy the
 * machine's CPUs were (/proc/stat) during each mode.
 *
 *   overlap_bench [--dim=N] [--density=D] [--iters=K] [--compute-ms=T]
 *                 [--test-us=U] [--compute=spin|sleep] [--multiple] [--csv]
 * --multiple initialises MPI with MPI_THREAD_MULTIPLE (for the library's
 * progress thread, SPARCML_PROGRESS_US).
 * Streams: float values, random indices (a different set per rank). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>
#include "sparcml.h"

enum { MODE_COMM, MODE_COMPUTE, MODE_BLOCKING, MODE_TESTING, MODE_SILENT, MODES };
static const char *const mode_names[MODES] = {"comm", "compute", "blocking", "testing", "silent"};

static volatile double sink; /* keeps the arithmetic from being optimised away */
static int sleeping;           /* --compute=sleep: one unit is a microsecond of sleep */

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* `units` units of arithmetic, testing *req every `test_units` units. */
static void compute(long units, long test_units, MPI_Request *req)
{
    double x = 1.0;
    if (sleeping) { /* to a deadline: a sleep overshoots by tens of microseconds */
        double end = MPI_Wtime() + (double)units * 1e-6;
        long step = req && test_units > 0 ? test_units : units;
        for (double now = MPI_Wtime(); now < end; now = MPI_Wtime()) {
            int flag;
            double left_us = (end - now) * 1e6;
            sleep_us(left_us < (double)step ? (long)left_us + 1 : step);
            if (req && test_units > 0) MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        }
        return;
    }
    for (long u = 0; u < units; u++) {
        for (int i = 0; i < 1000; i++) x = x * 1.0000001 + 1e-9;
        if (req && test_units > 0 && u % test_units == test_units - 1) {
            int flag;
            MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        }
    }
    sink = x;
}

static double slowest(double dt)
{
    double worst;
    MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

typedef struct setup {
    void *in, *out;
    MPI_Count cap;
    MPI_Datatype t;
    long units, test_units;
} setup;

/* Busy and total CPU time of the machine so far (jiffies, /proc/stat). */
static void cpu_jiffies(double *busy, double *total)
{
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    *busy = *total = 0;
    if (!f) return;
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
               &v[6], &v[7]) == 8) {
        for (int i = 0; i < 8; i++) *total += (double)v[i];
        *busy = *total - (double)v[3] - (double)v[4]; /* less idle and iowait */
    }
    fclose(f);
}

static double busy_jiffies[MODES], total_jiffies[MODES];

static double iteration(const setup *s, int mode)
{
    MPI_Request req;
    double t0, b0, j0, b1, j1;
    MPI_Barrier(MPI_COMM_WORLD);
    cpu_jiffies(&b0, &j0);
    t0 = MPI_Wtime();
    switch (mode) {
    case MODE_COMM: MPI_Allreduce(s->in, s->out, (int)s->cap, s->t, MPI_SUM, MPI_COMM_WORLD); break;
    case MODE_COMPUTE: compute(s->units, 0, NULL); break;
    case MODE_BLOCKING:
        compute(s->units, 0, NULL);
        MPI_Allreduce(s->in, s->out, (int)s->cap, s->t, MPI_SUM, MPI_COMM_WORLD);
        break;
    default:
        MPI_Iallreduce(s->in, s->out, (int)s->cap, s->t, MPI_SUM, MPI_COMM_WORLD, &req);
        compute(s->units, mode == MODE_TESTING ? s->test_units : 0, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    t0 = MPI_Wtime() - t0;
    cpu_jiffies(&b1, &j1);
    busy_jiffies[mode] += b1 - b0;
    total_jiffies[mode] += j1 - j0;
    return slowest(t0);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Units of arithmetic that take `ms` with every rank computing. */
static long calibrate(double ms)
{
    long units = 100;
    if (sleeping) return (long)(ms * 1e3);
    for (;;) {
        double dt;
        MPI_Barrier(MPI_COMM_WORLD);
        dt = MPI_Wtime();
        compute(units, 0, NULL);
        dt = slowest(MPI_Wtime() - dt);
        if (dt > 0.02 || dt * 1e3 > ms) {
            long want = (long)((double)units * ms / (dt * 1e3));
            MPI_Bcast(&want, 1, MPI_LONG, 0, MPI_COMM_WORLD);
            return want > 0 ? want : 1;
        }
        units *= 4;
    }
}

/* A random sparse float stream of about density * dim entries. */
static void make_stream(void *buf, MPI_Count cap, uint64_t dim, double density, int rank)
{
    uint64_t k = (uint64_t)(density * (double)dim), *idx = malloc((k + 1) * sizeof *idx), n = 0;
    float *val = malloc((k + 1) * sizeof *val);
    uint64_t state = 0x9e3779b97f4a7c15ull * (uint64_t)(rank + 1);
    /* k distinct sorted indices: one per stride, at a random offset in it. */
    for (uint64_t i = 0; i < k; i++) {
        uint64_t stride = dim / k;
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        idx[n] = i * stride + (state >> 33) % stride;
        val[n++] = 1.0f + (float)(state >> 40) / (float)(1 << 24);
    }
    if (sparcml_stream_from_sorted(buf, cap, dim, SPARCML_FLOAT, n, idx, val) != SPARCML_OK) {
        fprintf(stderr, "overlap_bench: cannot build the stream\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    free(idx);
    free(val);
}

int main(int argc, char **argv)
{
    uint64_t dim = 1u << 24;
    double density = 1e-3, compute_ms = 0, test_us = 100, *times[MODES], med[MODES];
    int iters = 10, csv = 0, rank, P;
    int multiple = 0, provided;
    setup s;
    for (int i = 1; i < argc; i++) multiple |= !strcmp(argv[i], "--multiple");
    if (multiple) MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--dim=", 6)) dim = strtoull(argv[i] + 6, NULL, 10);
        else if (!strncmp(argv[i], "--density=", 10)) density = atof(argv[i] + 10);
        else if (!strncmp(argv[i], "--iters=", 8)) iters = atoi(argv[i] + 8);
        else if (!strncmp(argv[i], "--compute-ms=", 13)) compute_ms = atof(argv[i] + 13);
        else if (!strncmp(argv[i], "--test-us=", 10)) test_us = atof(argv[i] + 10);
        else if (!strcmp(argv[i], "--compute=sleep")) sleeping = 1;
        else if (!strcmp(argv[i], "--compute=spin")) sleeping = 0;
        else if (!strcmp(argv[i], "--csv")) csv = 1;
        else if (!strcmp(argv[i], "--multiple")) continue;
        else {
            if (rank == 0) fprintf(stderr, "overlap_bench: unknown option %s\n", argv[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    s.cap = sparcml_capacity(dim, SPARCML_FLOAT);
    s.in = aligned_alloc(8, (size_t)s.cap * 8);
    s.out = aligned_alloc(8, (size_t)s.cap * 8);
    sparcml_type_create(SPARCML_FLOAT, &s.t);
    make_stream(s.in, s.cap, dim, density, rank);
    for (int m = 0; m < MODES; m++) times[m] = malloc((size_t)iters * sizeof(double));
    s.units = 1;
    for (int i = 0; i < 3; i++) times[MODE_COMM][i % iters] = iteration(&s, MODE_COMM); /* warm-up */
    if (compute_ms <= 0) {
        for (int i = 0; i < iters; i++) times[MODE_COMM][i] = iteration(&s, MODE_COMM);
        compute_ms = median(times[MODE_COMM], iters) * 1e3;
    }
    s.units = calibrate(compute_ms);
    {
        double unit_us = compute_ms * 1e3 / (double)s.units;
        s.test_units = test_us > 0 ? (long)fmax(1, test_us / unit_us) : 0;
    }
    for (int m = 0; m < MODES; m++) busy_jiffies[m] = total_jiffies[m] = 0;
    for (int i = 0; i < iters; i++) {
        if (rank == 0 && !csv) fprintf(stderr, "\roverlap_bench: iteration %d/%d", i + 1, iters);
        for (int m = 0; m < MODES; m++) times[m][i] = iteration(&s, m);
    }
    if (rank == 0 && !csv) fprintf(stderr, "\n");
    for (int m = 0; m < MODES; m++) med[m] = median(times[m], iters) * 1e3;
    if (rank == 0) {
        double hidden = fmin(med[MODE_COMM], med[MODE_COMPUTE]);
        double e_test = (med[MODE_BLOCKING] - med[MODE_TESTING]) / hidden;
        double e_silent = (med[MODE_BLOCKING] - med[MODE_SILENT]) / hidden;
        double busy[MODES];
        for (int m = 0; m < MODES; m++) busy[m] = total_jiffies[m] > 0 ? 100 * busy_jiffies[m] / total_jiffies[m] : 0;
        if (csv) {
            printf("P,dim,density,compute,iters,test_us,comm_ms,compute_ms,blocking_ms,testing_ms,silent_ms,"
                   "eff_testing,eff_silent,cpu_comm,cpu_compute,cpu_blocking,cpu_testing,cpu_silent\n");
            printf("%d,%llu,%g,%s,%d,%g,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.0f,%.0f,%.0f,%.0f,%.0f\n", P,
                   (unsigned long long)dim, density, sleeping ? "sleep" : "spin", iters, test_us, med[0], med[1],
                   med[2], med[3], med[4], e_test, e_silent, busy[0], busy[1], busy[2], busy[3], busy[4]);
        } else {
            for (int m = 0; m < MODES; m++) printf("%-9s %10.3f ms  (CPUs %3.0f %% busy)\n", mode_names[m], med[m], busy[m]);
            printf("overlap efficiency: testing every %g us %.2f, not testing %.2f\n", test_us, e_test, e_silent);
        }
    }
    MPI_Type_free(&s.t);
    MPI_Finalize();
    return 0;
}
