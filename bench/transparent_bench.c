/* transparent_bench.c -- transparent mode against the vendor, side by side
 * in one run: the same untagged MPI_Allreduce of a dense float buffer, once
 * through the shim (MPI_Allreduce, SPARCML_TRANSPARENT=1 set by the caller)
 * and once straight to the vendor (PMPI_Allreduce), alternating call by
 * call so that both see the same machine noise.
 *
 *   transparent_bench BYTES[,BYTES...] DENSITY[,DENSITY...] [CALLS] [inplace] [warmup=W]
 *
 * Each rank holds nonzeros at independent random positions (density d of
 * the floats).  A call's time is the slowest rank's, after a barrier.  The
 * mean over CALLS consecutive calls is what a training loop sees (it
 * includes the calls transparent mode sends straight to the vendor after an
 * agreed vendor choice); the median too.  With "inplace" both sum with
 * MPI_IN_PLACE, the buffer refilled from the input before each call
 * (untimed).  W untimed calls through the shim (default 1) come first: with
 * W = 17, a run after a vendor choice times what follows the agreement
 * that carries the vendor's time (the steady state).  CSV on stdout,
 * progress on stderr. */
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

static int inplace, warmup = 1;

/* A timed call (side_by_side.h), in place when asked. */
static double call(int through_shim, const float *in, float *out, int n)
{
    if (!inplace) return timed(through_shim, in, out, n);
    memcpy(out, in, (size_t)n * sizeof *out);
    return timed(through_shim, MPI_IN_PLACE, out, n);
}

static void run(long bytes, double d, int calls, int rank, int P)
{
    int n = (int)(bytes / 4);
    float *in = calloc((size_t)n, 4), *out = malloc((size_t)n * 4);
    double *tv = malloc((size_t)calls * sizeof *tv), *tt = malloc((size_t)calls * sizeof *tt);
    for (int i = 0; i < n; i++)
        if ((double)(mix((uint64_t)rank << 40 ^ (uint64_t)i) >> 11) / 9007199254740992.0 < d)
            in[i] = 1.0f + (float)(i % 5);
    call(0, in, out, n); /* warm-up: first-call costs (pools, the duplicate) */
    for (int w = 0; w < warmup; w++) call(1, in, out, n);
    for (int c = 0; c < calls; c++) {
        int shim_first = c % 2;
        if (shim_first) tt[c] = call(1, in, out, n);
        tv[c] = call(0, in, out, n);
        if (!shim_first) tt[c] = call(1, in, out, n);
    }
    if (rank == 0) {
        double mv = mean(tv, calls), mt = mean(tt, calls);
        printf("%ld,%g,%d,%d,%.4f,%.4f,%.3f,%.4f,%.4f,%d\n", bytes, d, P, calls, mv * 1e3, mt * 1e3, mt / mv,
               median(tv, calls) * 1e3, median(tt, calls) * 1e3, inplace);
        fflush(stdout);
        fprintf(stderr, "transparent_bench: %ld bytes, d=%g: vendor %.3f ms, transparent %.3f ms\n", bytes, d,
                mv * 1e3, mt * 1e3);
    }
    free(in); free(out); free(tv); free(tt);
}

int main(int argc, char **argv)
{
    int rank, P, calls = argc > 3 ? atoi(argv[3]) : 32;
    char *sizes, *dens;
    for (int a = 4; a < argc; a++) {
        if (strcmp(argv[a], "inplace") == 0) inplace = 1;
        else if (strncmp(argv[a], "warmup=", 7) == 0) warmup = atoi(argv[a] + 7);
        else calls = 0; /* the usage */
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (argc < 3 || calls < 1 || warmup < 0) {
        if (rank == 0)
            fprintf(stderr, "usage: transparent_bench BYTES[,BYTES...] DENSITY[,...] [CALLS] [inplace] [warmup=W]\n");
        MPI_Finalize();
        return 2;
    }
    if (rank == 0)
        printf("bytes,density,P,calls,vendor_mean_ms,transparent_mean_ms,ratio_mean,vendor_median_ms,"
               "transparent_median_ms,inplace\n");
    sizes = strdup(argv[1]);
    for (char *b = strtok(sizes, ","); b; b = strtok(NULL, ",")) {
        long bytes = atol(b);
        dens = strdup(argv[2]);
        for (char *save = NULL, *d = strtok_r(dens, ",", &save); d; d = strtok_r(NULL, ",", &save))
            run(bytes, atof(d), calls, rank, P);
        free(dens);
    }
    free(sizes);
    MPI_Finalize();
    return 0;
}
