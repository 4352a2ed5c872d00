/* piggyback.c -- calls whose data travels with the agreement records.
 *
 * A sequence on one communicator that makes the prediction of
 * src/core/select.h's memo right and wrong in turn: for two buffers A and B of
 * different counts (dim 65536 and 32768), small sparse calls (recursive
 * doubling), then at A's count a dense input (where recursive doubling is
 * the wrong choice), interleaved with B, in place and not, float and
 * int32, and densities that grow by less than twice from call to call
 * across the selector's boundaries (recursive doubling, then a split
 * algorithm at P = 3 and 4).  Every result is checked against the exact
 * sum (refsum.h).  The script reads the library's verbose lines (rank 0)
 * and checks each call's agreement mode against the rule of sparcml(7):
 * piggybacked exactly when the latest call with the same count and value
 * type chose recursive doubling, unless an input is beyond what that call
 * reserved for (declined).  It also prints the sequence of (count,
 * vtype) so the script can derive the expected modes itself.
 * With densities as arguments it makes float calls at A's count, one at
 * each density in turn, instead (tests/scripts/timed.sh: the timed
 * multiples' density bands); a density written "bD" is a call at B's
 * count. */
#include "refsum.h"

static int rank, size, failures;

static void one_call(uint64_t dim, int vtype, MPI_Datatype t, double density, int in_place,
                     uint64_t seed, MPI_Count count, void *send, void *recv, void *scratch)
{
    rs_problem p = {seed, dim, vtype, density};
    uint64_t bad;
    int rc = rs_build(&p, rank, in_place ? recv : send, count, scratch);
    if (rc != SPARCML_OK) { failures++; return; }
    rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : send, recv, (int)count, t, MPI_SUM, MPI_COMM_WORLD);
    bad = rc == MPI_SUCCESS ? rs_check(&p, size, recv, scratch) : dim + 1;
    if (bad) {
        failures++;
        fprintf(stderr, "rank %d: dim %llu density %g: %llu wrong entries (rc %d)\n", rank,
                (unsigned long long)dim, density, (unsigned long long)bad, rc);
    }
    if (rank == 0) printf("call count=%lld vtype=%d\n", (long long)count, vtype);
}

int main(int argc, char **argv)
{
    /* (buffer, density, in place, int32) in call order */
    static const struct { int buf; double density; int in_place, ints; } seq[] = {
        {0, 1e-4, 0, 0}, {0, 1e-4, 0, 0}, {1, 2e-4, 1, 0}, {0, 1e-4, 1, 0}, {1, 2e-4, 0, 0},
        {0, 1.0, 0, 0},  {0, 1.0, 1, 0},  {1, 2e-4, 0, 0}, {0, 1e-4, 0, 0}, {0, 1e-4, 0, 0},
        {0, 1e-4, 0, 1}, {0, 1e-4, 0, 1}, {0, 1e-4, 0, 0}, {0, 1.0, 0, 0},  {1, 2e-4, 1, 0},
        {0, 1e-4, 1, 0}, {0, 1e-4, 0, 0}, {0, 6e-3, 0, 0}, {0, 1e-2, 0, 0}, {0, 0.15, 0, 0},
        {0, 0.25, 0, 0}, {0, 0.25, 1, 0},
    };
    static const uint64_t dims[2] = {65536, 32768};
    MPI_Datatype t_float, t_int;
    MPI_Count counts[2];
    void *send, *recv, *scratch;
    size_t calls;
    MPI_Init(&argc, &argv);
    calls = argc > 1 ? (size_t)argc - 1 : sizeof seq / sizeof seq[0];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sparcml_type_create(SPARCML_FLOAT, &t_float);
    sparcml_type_create(SPARCML_INT32, &t_int);
    for (int b = 0; b < 2; b++) counts[b] = sparcml_capacity(dims[b], SPARCML_FLOAT);
    send = t_alloc_words(counts[0]);
    recv = t_alloc_words(counts[0]);
    scratch = t_alloc_words((MPI_Count)dims[0] * 2);
    for (size_t i = 0; i < calls; i++) {
        int listed = argc > 1, ints = !listed && seq[i].ints;
        int buf = listed ? argv[i + 1][0] == 'b' : seq[i].buf;
        one_call(dims[buf], ints ? SPARCML_INT32 : SPARCML_FLOAT, ints ? t_int : t_float,
                 listed ? atof(argv[i + 1] + buf) : seq[i].density, !listed && seq[i].in_place, 1000 + i,
                 counts[buf], send, recv, scratch);
    }
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("piggyback: P=%d calls=%zu failures=%d\n", size, calls, failures);
    MPI_Type_free(&t_float);
    MPI_Type_free(&t_int);
    free(send);
    free(recv);
    free(scratch);
    MPI_Finalize();
    return failures ? 1 : 0;
}
