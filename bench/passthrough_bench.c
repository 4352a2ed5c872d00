/* passthrough_bench.c -- what an untagged call costs: CALLS back-to-back
 * 8-byte MPI_FLOAT MPI_SUM MPI_Allreduce calls on MPI_COMM_WORLD (with
 * --nonblocking MPI_Iallreduce and MPI_Wait), timed in BATCHES batches
 * after a warm-up (scripts/bench_passthrough.sh runs it with the library
 * preloaded and with an empty preload, in turn).
 *   passthrough_bench [--nonblocking | --inproc] [CALLS [BATCHES]]
 * (100000, 21) prints "ns_per_call,<the fastest batch's time per call,
 * its slowest rank's>": on a shared machine the fastest batch is the one
 * the other processes disturbed least.  --inproc: BATCHES pairs of batches
 * through MPI_Allreduce (whatever is preloaded) and straight to
 * PMPI_Allreduce, alternating, which goes first alternating too; prints
 * "inproc,<fastest MPI_Allreduce batch>,<fastest PMPI_Allreduce batch>".
 * The exit status is 1 when a sum is wrong.  The calls themselves are in
 * allreduce_calls (not inlined), the function callgrind's --toggle-collect
 * counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

enum { WARMUP_CALLS = 1000 };
enum way { VIA_MPI, VIA_PMPI, VIA_NONBLOCKING };

static int one_call(enum way way, const float *in, float *out)
{
    MPI_Request r;
    int rc;
    if (way == VIA_MPI) return MPI_Allreduce(in, out, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (way == VIA_PMPI) return PMPI_Allreduce(in, out, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    rc = MPI_Iallreduce(in, out, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
    return rc == MPI_SUCCESS ? MPI_Wait(&r, MPI_STATUS_IGNORE) : rc;
}

__attribute__((noinline)) int allreduce_calls(enum way way, const float *in, float *out, long calls);
__attribute__((noinline)) int allreduce_calls(enum way way, const float *in, float *out, long calls)
{
    int rc = MPI_SUCCESS;
    for (long i = 0; i < calls && rc == MPI_SUCCESS; i++) rc = one_call(way, in, out);
    return rc;
}

/* The time per call of one batch, its slowest rank's; *bad set when a call
 * failed. */
static double timed_batch(enum way way, const float *in, float *out, long calls, int *bad)
{
    double t0, dt, slowest;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    *bad |= allreduce_calls(way, in, out, calls) != MPI_SUCCESS;
    dt = (MPI_Wtime() - t0) / (double)calls;
    MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

int main(int argc, char **argv)
{
    int arg = argc > 1 && (strcmp(argv[1], "--nonblocking") == 0 || strcmp(argv[1], "--inproc") == 0);
    int inproc = arg && strcmp(argv[1], "--inproc") == 0;
    enum way way = arg && !inproc ? VIA_NONBLOCKING : VIA_MPI;
    long calls = argc > arg + 1 ? atol(argv[arg + 1]) : 100000;
    int batches = argc > arg + 2 ? atoi(argv[arg + 2]) : 21, rank, size, bad = 0;
    float in[2] = {1.0f, 2.0f}, out[2] = {0};
    double fastest[2] = {0, 0}; /* [VIA_PMPI]: --inproc's */
    if (calls < 1 || batches < 1 || argc > arg + 3) {
        fprintf(stderr, "usage: passthrough_bench [--nonblocking | --inproc] [CALLS [BATCHES]]\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bad |= allreduce_calls(way, in, out, WARMUP_CALLS) != MPI_SUCCESS;
    for (int b = 0; b < batches; b++) {
        for (int k = 0; k <= inproc; k++) {
            enum way w = inproc ? ((k ^ b) & 1 ? VIA_PMPI : VIA_MPI) : way;
            int slot = w == VIA_PMPI;
            double t = timed_batch(w, in, out, calls, &bad);
            if (b == 0 || t < fastest[slot]) fastest[slot] = t;
        }
    }
    bad |= out[0] != (float)size || out[1] != 2.0f * (float)size;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0 && bad) fprintf(stderr, "passthrough_bench: a call failed or its sum is wrong\n");
    else if (rank == 0 && inproc) printf("inproc,%.2f,%.2f\n", fastest[0] * 1e9, fastest[1] * 1e9);
    else if (rank == 0) printf("ns_per_call,%.2f\n", fastest[0] * 1e9);
    MPI_Finalize();
    return bad ? 1 : 0;
}
