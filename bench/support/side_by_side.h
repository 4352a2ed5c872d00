/* side_by_side.h -- the timing of the benchmarks that run the same
 * MPI_FLOAT MPI_SUM allreduce through the shim (MPI_Allreduce) and straight
 * to the vendor (PMPI_Allreduce), alternating call by call in one run
 * (transparent_bench.c, compress_bench.c): a call's time is the slowest
 * rank's, after a barrier; means and medians of the calls. */
#ifndef SPARCML_BENCH_SIDE_BY_SIDE_H
#define SPARCML_BENCH_SIDE_BY_SIDE_H

#include <mpi.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One timed call: the slowest rank's seconds. */
static double timed(int through_shim, const float *in, float *out, int n)
{
    double t, worst;
    PMPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    if (through_shim) MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else PMPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t = MPI_Wtime() - t;
    PMPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

static double mean(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i];
    return s / n;
}

static double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

#endif
