/* compress_bench.c -- SPARCML_COMPRESS against the vendor, side by side in
 * one run: the same untagged MPI_Allreduce(g, out, N, MPI_FLOAT, MPI_SUM)
 * of a dense gradient, once through the shim (MPI_Allreduce, compressed
 * when the caller sets SPARCML_COMPRESS=topk or cltk) and once straight to
 * the vendor (PMPI_Allreduce), alternating call by call so that both see
 * the same machine noise.
 *
 *   compress_bench N[,N...] [CALLS [WARMUP]]
 *
 * N counts floats.  Every entry of g is nonzero: an approximately normal
 * value (mean 0, variance 1) from a counter-based generator, different on
 * each rank and at each call, so the error feedback accumulates fresh data
 * every time (the gradient is drawn outside the timed region).  WARMUP
 * pairs of calls (default 2) come first and are not timed: first-call
 * costs (pools, the duplicate, the residual's allocation).  A call's time
 * is the slowest rank's, after a barrier.  The result of every compressed
 * call is read on rank 0 for its nonzeros (how far the sum densified).
 * CSV on stdout, one row per N; progress on stderr.  The mode and density
 * columns repeat SPARCML_COMPRESS and SPARCML_COMPRESS_DENSITY (their
 * defaults when unset: off and 0.01). */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/side_by_side.h"

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The gradient of (rank, call): per entry the sum of four 16-bit uniforms
 * (Irwin-Hall, close to a normal), centred and scaled to variance 1.  The
 * half step keeps every value away from 0. */
static void gradient(float *g, long n, int rank, int call)
{
    uint64_t key = mix(((uint64_t)(unsigned)rank << 32) ^ (uint64_t)(unsigned)call);
    const float scale = sqrtf(3.0f) / 65536.0f;
    for (long i = 0; i < n; i++) {
        uint64_t r = mix(key + (uint64_t)i);
        uint32_t s = (uint32_t)(r & 0xffff) + (uint32_t)(r >> 16 & 0xffff) + (uint32_t)(r >> 32 & 0xffff)
                     + (uint32_t)(r >> 48);
        g[i] = ((float)s + 0.5f - 131072.0f) * scale;
    }
}

static long nonzeros(const float *x, long n)
{
    long c = 0;
    for (long i = 0; i < n; i++) c += x[i] != 0.0f;
    return c;
}

/* One timed compressed call; rank 0 adds its result's nonzeros to *nnz. */
static double compressed(const float *in, float *out, long n, int rank, double *nnz)
{
    double t = timed(1, in, out, (int)n);
    if (rank == 0) *nnz += (double)nonzeros(out, n);
    return t;
}

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return v && *v ? v : fallback;
}

static int run(long n, int calls, int warmup, int rank, int P)
{
    float *g = malloc((size_t)n * sizeof *g), *out = malloc((size_t)n * sizeof *out);
    double *tv = malloc((size_t)calls * sizeof *tv), *tc = malloc((size_t)calls * sizeof *tc);
    double nnz_sum = 0;
    int ok = g && out && tv && tc, all_ok;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        if (rank == 0) fprintf(stderr, "compress_bench: N=%ld: out of memory\n", n);
        free(g); free(out); free(tv); free(tc);
        return 1;
    }
    for (int c = 0; c < warmup; c++) {
        gradient(g, n, rank, c);
        timed(0, g, out, (int)n);
        timed(1, g, out, (int)n);
    }
    for (int c = 0; c < calls; c++) {
        int shim_first = c % 2;
        gradient(g, n, rank, warmup + c);
        if (shim_first) tc[c] = compressed(g, out, n, rank, &nnz_sum);
        tv[c] = timed(0, g, out, (int)n);
        if (!shim_first) tc[c] = compressed(g, out, n, rank, &nnz_sum);
    }
    if (rank == 0) {
        const char *mode = env_or("SPARCML_COMPRESS", "off"), *density = env_or("SPARCML_COMPRESS_DENSITY", "0.01");
        double mv = median(tv, calls), mc = median(tc, calls);
        printf("%d,%ld,%s,%s,%d,%.3f,%.3f,%.3f,%.3f,%.2f,%.0f\n", P, n, mode, density, calls, mv * 1e3,
               mean(tv, calls) * 1e3, mc * 1e3, mean(tc, calls) * 1e3, mv / mc, nnz_sum / calls);
        fflush(stdout);
        fprintf(stderr, "compress_bench: P=%d N=%ld %s d=%s: vendor %.3f ms, compressed %.3f ms (medians)\n", P, n,
                mode, density, mv * 1e3, mc * 1e3);
    }
    free(g); free(out); free(tv); free(tc);
    return 0;
}

int main(int argc, char **argv)
{
    int rank, P, rc = 0;
    int calls = argc > 2 ? atoi(argv[2]) : 10, warmup = argc > 3 ? atoi(argv[3]) : 2;
    char *list;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (argc < 2 || argc > 4 || calls < 1 || warmup < 0) {
        if (rank == 0) fprintf(stderr, "usage: compress_bench N[,N...] [CALLS [WARMUP]]\n");
        MPI_Finalize();
        return 2;
    }
    if (rank == 0)
        printf("P,N,mode,density,calls,vendor_median_ms,vendor_mean_ms,compressed_median_ms,compressed_mean_ms,"
               "speedup,result_nnz\n");
    list = strdup(argv[1]);
    for (char *save = NULL, *s = strtok_r(list, ",", &save); s && !rc; s = strtok_r(NULL, ",", &save)) {
        long n = atol(s);
        if (n < 1 || n > 2147483647L) {
            if (rank == 0) fprintf(stderr, "compress_bench: N=%s: not a count in 1..2^31-1\n", s);
            rc = 2;
            break;
        }
        rc = run(n, calls, warmup, rank, P);
    }
    free(list);
    MPI_Finalize();
    return rc;
}
