/* allgatherv_counts.c -- time one MPI_Allgatherv of blocks of BYTES bytes
 * per rank, all equal or differing by less than VARY bytes (block r is
 * BYTES - (7919 r mod VARY)), against the link time (P-1) BYTES / 125 MB/s
 * of the Gigabit platform.  It shows why the split algorithms gather in
 * equal slots (src/alg/split_gather.c; bench/RESULTS.md, "Split gathers",
 * equal slots): MPICH's ring allgatherv, as SimGrid copies it, runs at
 * half the link when the counts differ.
 *
 *   smpicc -O2 bench/smpi/allgatherv_counts.c -o build-smpi/allgatherv_counts
 *   smpirun -np 64 -platform build-smpi/gige.xml -hostfile build-smpi/gige.hosts \
 *       --cfg=smpi/lat-factor:0:1 --cfg=smpi/bw-factor:0:1 --cfg=network/crosstraffic:0 \
 *       --cfg=smpi/coll-selector:mpich build-smpi/allgatherv_counts 1048576 8
 *
 * (the platform files are written by scripts/smpi_sweep.sh sweep gige ...). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int P, rank, bytes, vary, offset = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    bytes = argc > 1 ? atoi(argv[1]) : 1048576;
    vary = argc > 2 ? atoi(argv[2]) : 0;
    int *counts = malloc((size_t)P * sizeof *counts), *displs = malloc((size_t)P * sizeof *displs);
    for (int r = 0; r < P; r++) {
        counts[r] = bytes - (vary > 0 ? (7919 * r) % vary : 0);
        displs[r] = offset;
        offset += counts[r];
    }
    char *mine = calloc((size_t)bytes, 1), *all = malloc((size_t)offset);
    if (!mine || !all) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    MPI_Allgatherv(mine, counts[rank], MPI_BYTE, all, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
    t = MPI_Wtime() - t;
    if (rank == 0)
        printf("P=%d bytes=%d vary=%d time_s=%.4f link_s=%.4f\n", P, bytes, vary, t, (double)bytes * (P - 1) / 125e6);
    free(mine);
    free(all);
    free(counts);
    free(displs);
    MPI_Finalize();
    return 0;
}
