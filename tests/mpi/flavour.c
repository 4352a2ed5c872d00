/* flavour.c -- the MPI-3 stand-ins of src/base/mpi_flavour.c (what Open MPI 4.1
 * runs instead of the MPI-4 large-count functions) with small int limits,
 * so that their chunks and blocks are exercised without 2^31-element
 * buffers, in their blocking and non-blocking forms.  Linked with the library's core (not preloaded).  Checked
 * against plain PMPI calls on the same data.  Needs P >= 2.
 * Prints "flavour: P=.. failures=N". */
#include <string.h>

#include "base/mpi_flavour.h"
#include "testlib.h"

static int failures, rank, P;

static void expect(int cond, const char *what)
{
    if (cond) return;
    fprintf(stderr, "FAIL rank %d: %s\n", rank, what);
    failures++;
}

/* The non-blocking form: in place, 7 per chunk, at most 15 chunks. */
static void nonblocking_in_chunks(const double *in, double *out, int n)
{
    MPI_Request reqs[15];
    int nreqs = -1, rc;
    memcpy(out, in, (size_t)n * sizeof *in);
    rc = flv3_iallreduce(out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, reqs, 15, &nreqs, 7);
    expect(rc == MPI_SUCCESS && nreqs == (n + 6) / 7 + (n == 0), "chunked iallreduce failed");
    for (int i = 0; rc == MPI_SUCCESS && i < nreqs; i++) MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
    /* More chunks than requests: refused before anything is started. */
    if (n > 7) {
        rc = flv3_iallreduce(out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, reqs, 1, &nreqs, 7);
        expect(rc == MPI_ERR_COUNT && nreqs == 0, "iallreduce: too many chunks not refused");
    }
}

/* Sums of `count` doubles in chunks of at most 7, in place and not. */
static void allreduce_in_chunks(void)
{
    static const int counts[] = {0, 1, 7, 8, 100};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int n = counts[c];
        double in[100], a[100], b[100], nb[100];
        for (int i = 0; i < n; i++) in[i] = a[i] = (double)(rank * 1000 + i);
        expect(flv3_allreduce(in, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, 7) == MPI_SUCCESS,
               "chunked allreduce failed");
        expect(flv3_allreduce(MPI_IN_PLACE, a, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, 7) == MPI_SUCCESS,
               "chunked in-place allreduce failed");
        nonblocking_in_chunks(in, nb, n);
        for (int i = 0; i < n; i++) {
            double want = 1000.0 * P * (P - 1) / 2 + (double)P * i;
            expect(b[i] == want && a[i] == want && nb[i] == want, "chunked allreduce: wrong sum");
        }
    }
}

/* Messages above the limit (600 here) travel in blocks of 600 bytes and
 * the rest, below it as bytes: exactly their bytes either way.  The
 * receiver learns the size from the status (tags 1 and 2), or knows it and
 * receives without a probe (tag 3).  From (limit + 1) limit bytes on (with
 * a limit of 20: 420, 21 blocks) neither end sends: MPI_ERR_COUNT on both;
 * 419 bytes (20 blocks and 19) travel. */
static void messages_in_blocks(void)
{
    static const MPI_Count sizes[] = {50, 600, 1003, 1200, 4000};
    unsigned char buf[4008];
    MPI_Request req = MPI_REQUEST_NULL;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        MPI_Count bytes = sizes[s], got = 0;
        if (rank == 0) {
            for (MPI_Count i = 0; i < bytes; i++) buf[i] = (unsigned char)(i * 7 + s);
            for (int tag = 1; tag <= 3; tag++) {
                expect(flv3_isend_bytes(buf, bytes, 1, tag, MPI_COMM_WORLD, &req, 600) == MPI_SUCCESS,
                       "isend failed");
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
        } else if (rank == 1) {
            MPI_Request known;
            unsigned char sized[4008] = {0};
            expect(flv3_irecv_bytes(sized, bytes, 0, 3, MPI_COMM_WORLD, &known, 600) == MPI_SUCCESS, "irecv failed");
            for (int tag = 1; tag <= 2; tag++) {
                MPI_Message msg;
                MPI_Status st;
                memset(buf, 0, sizeof buf);
                MPI_Mprobe(0, tag, MPI_COMM_WORLD, &msg, &st);
                expect(flv_message_bytes(&st, &got) == MPI_SUCCESS, "message size unknown");
                expect(got == bytes, "message size wrong");
                if (tag == 1) {
                    expect(flv3_mrecv_bytes(buf, got, &msg, 600) == MPI_SUCCESS, "mrecv failed");
                } else {
                    expect(flv3_imrecv_bytes(buf, got, &msg, &req, 600) == MPI_SUCCESS, "imrecv failed");
                    MPI_Wait(&req, MPI_STATUS_IGNORE);
                }
                for (MPI_Count i = 0; i < bytes; i++)
                    if (buf[i] != (unsigned char)(i * 7 + s)) { expect(0, "message bytes wrong"); break; }
            }
            MPI_Wait(&known, MPI_STATUS_IGNORE);
            for (MPI_Count i = 0; i < bytes; i++)
                if (sized[i] != (unsigned char)(i * 7 + s)) { expect(0, "received bytes wrong"); break; }
        }
    }
    if (rank == 0) expect(flv3_isend_bytes(buf, 420, 1, 4, MPI_COMM_WORLD, &req, 20) == MPI_ERR_COUNT, "420 bytes sent");
    if (rank == 1) expect(flv3_irecv_bytes(buf, 420, 0, 4, MPI_COMM_WORLD, &req, 20) == MPI_ERR_COUNT, "420 bytes posted");
    expect(req == MPI_REQUEST_NULL, "a request for a message beyond the limit");
    for (MPI_Count i = 0; rank == 0 && i < 419; i++) buf[i] = (unsigned char)(i * 5 + 1);
    if (rank == 0) expect(flv3_isend_bytes(buf, 419, 1, 5, MPI_COMM_WORLD, &req, 20) == MPI_SUCCESS, "419 bytes not sent");
    if (rank == 1) {
        memset(buf, 0, 419);
        expect(flv3_irecv_bytes(buf, 419, 0, 5, MPI_COMM_WORLD, &req, 20) == MPI_SUCCESS, "419 bytes not posted");
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (MPI_Count i = 0; rank == 1 && i < 419; i++)
        if (buf[i] != (unsigned char)(i * 5 + 1)) { expect(0, "419 bytes wrong"); break; }
}


/* Allgatherv of P slices of `each` bytes: bytes when everything fits the
 * limit, words when all are whole words, else MPI_ERR_COUNT on every rank. */
static void allgather(MPI_Count each, MPI_Count limit, int expect_rc)
{
    MPI_Count counts[64];
    MPI_Aint displs[64];
    unsigned char mine[64], all[64 * 64];
    int rc;
    for (int r = 0; r < P; r++) {
        counts[r] = each;
        displs[r] = (MPI_Aint)(r * each);
    }
    for (MPI_Count i = 0; i < each; i++) mine[i] = (unsigned char)(rank * 31 + i);
    for (int nonblocking = 0; nonblocking <= 1; nonblocking++) {
        int ints[128];
        MPI_Request req;
        memset(all, 0, sizeof all);
        rc = nonblocking ? flv3_iallgatherv_bytes(mine, each, all, counts, displs, MPI_COMM_WORLD, ints, &req, limit)
                         : flv3_allgatherv_bytes(mine, each, all, counts, displs, MPI_COMM_WORLD, limit);
        expect(rc == expect_rc, "allgatherv: unexpected return code");
        if (rc != MPI_SUCCESS) continue;
        if (nonblocking) MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int r = 0; r < P; r++)
            for (MPI_Count i = 0; i < each; i++)
                if (all[r * each + i] != (unsigned char)(r * 31 + i)) { expect(0, "allgatherv: wrong bytes"); return; }
    }
}

int main(int argc, char **argv)
{
    int all;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (P < 2 || P > 64) {
        if (rank == 0) fprintf(stderr, "flavour: needs 2..64 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    allreduce_in_chunks();
    messages_in_blocks();
    allgather(5, 100, MPI_SUCCESS);          /* bytes */
    allgather(24, 20, MPI_SUCCESS);          /* words: counts beyond the limit, whole words */
    allgather(21, 20, MPI_ERR_COUNT);        /* neither */
    PMPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("flavour: P=%d failures=%d\n", P, all);
    MPI_Finalize();
    return all != 0;
}
