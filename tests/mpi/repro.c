/* repro.c -- a run whose result bits depend on the algorithms it ran
 * (tests/scripts/reproducible.sh).
 *
 * Tagged float sums of dim 65536 on MPI_COMM_WORLD, three calls at each
 * of the densities 1e-3, 1e-2, 0.1 and 0.3 (the selector's regimes: recursive
 * doubling to the split algorithms), then the sequence once more (the
 * timed prices' second look).  Values are random fractions, so a sum's
 * last bits follow the order of its additions, which is the algorithm's.
 * Rank 0 prints, per call, a hash of the dense result ("repro call I
 * hash=H"), which the script compares between runs; every rank checks its
 * result against a sum in double precision (at most 1e-5 relative, whatever
 * the order) and that the hash is the same on every rank. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

enum { DIM = 65536 };

/* Rank r's value at index i in call c, or 0 where it holds none. */
static float value(int r, int c, double density, uint64_t i)
{
    uint64_t h = t_rand(1000003u * (uint64_t)c + (uint64_t)r, i);
    if ((double)(h >> 11) * 0x1p-53 >= density) return 0;
    return (float)((double)(t_rand(7 + (uint64_t)r, i ^ ((uint64_t)c << 32)) >> 11) * 0x1p-53 - 0.25);
}

int main(int argc, char **argv)
{
    static const double densities[] = {1e-3, 1e-2, 0.1, 0.3};
    int rank, size, failures = 0, call = 0;
    MPI_Datatype t_float;
    MPI_Count count;
    float *dense, *sum;
    void *send, *recv;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sparcml_type_create(SPARCML_FLOAT, &t_float);
    count = sparcml_capacity(DIM, SPARCML_FLOAT);
    send = t_alloc_words(count);
    recv = t_alloc_words(count);
    dense = malloc(DIM * sizeof *dense);
    sum = malloc(DIM * sizeof *sum);
    for (int pass = 0; pass < 2; pass++)
        for (size_t d = 0; d < sizeof densities / sizeof densities[0]; d++)
            for (int k = 0; k < 3; k++, call++) {
                double worst = 0;
                uint64_t h;
                for (uint64_t i = 0; i < DIM; i++) dense[i] = value(rank, call, densities[d], i);
                if (sparcml_stream_from_dense(send, count, DIM, SPARCML_FLOAT, dense) != SPARCML_OK
                    || MPI_Allreduce(send, recv, (int)count, t_float, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS
                    || sparcml_stream_to_dense(recv, sum, DIM) != SPARCML_OK) {
                    failures++;
                    continue;
                }
                for (uint64_t i = 0; i < DIM; i++) {
                    double ref = 0, mag = 0;
                    for (int r = 0; r < size; r++) {
                        ref += value(r, call, densities[d], i);
                        mag += fabs(value(r, call, densities[d], i));
                    }
                    worst = fmax(worst, fabs(sum[i] - ref) / (mag > 0 ? mag : 1));
                }
                h = t_hash(sum, DIM * sizeof *sum);
                if (worst > 1e-5 || !t_same_everywhere(h, MPI_COMM_WORLD)) {
                    failures++;
                    fprintf(stderr, "rank %d: call %d: relative error %g or a hash unlike other ranks'\n", rank, call,
                            worst);
                }
                if (rank == 0) printf("repro call %d hash=%016llx\n", call, (unsigned long long)h);
            }
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("repro: P=%d calls=%d failures=%d\n", size, call, failures);
    MPI_Type_free(&t_float);
    free(send);
    free(recv);
    free(dense);
    free(sum);
    MPI_Finalize();
    return failures ? 1 : 0;
}
