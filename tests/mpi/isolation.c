/* isolation.c -- library traffic never matches the application's receives.
 *
 * Before any tagged call, every rank posts P wildcard receives
 * (MPI_ANY_SOURCE, MPI_ANY_TAG) on MPI_COMM_WORLD and on a duplicate of it,
 * the very communicators the tagged allreduces then run on; they stay
 * pending during a series of tagged allreduces (every value type, dims from
 * 1 to 20011, densities 0 to 1, in place or not, and one call that fails
 * because one rank's input is malformed, which exercises the error path),
 * run with whatever SPARCML_ALGORITHM the script sets.  Then:
 *  - MPI_Test on every pending receive: none may have completed, and
 *    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG) finds no message;
 *  - every rank sends each rank one message per communicator whose payload
 *    names (sender, receiver, communicator, tag); every rank must receive
 *    exactly the P payloads addressed to it on each communicator, with
 *    matching status source and tag.
 * Every allreduce result is also checked exactly (refsum.h). */
#include "refsum.h"

#define MAGIC 0x150a7e
#define CALLS 60

static int rank, size, failures;

static void expect(int cond, const char *what)
{
    if (cond) return;
    if (failures++ < 10) fprintf(stderr, "isolation: rank %d: %s\n", rank, what);
}

int main(int argc, char **argv)
{
    static const uint64_t dims[] = {1, 64, 1000, 20011};
    static const double densities[] = {0, 1e-3, 0.05, 0.5, 1};
    MPI_Comm comms[2];
    MPI_Datatype types[5];
    MPI_Request *reqs;
    int (*payload)[4];
    MPI_Count maxcount = sparcml_capacity(20011, SPARCML_DOUBLE);
    void *send, *recv, *scratch, *dense;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    for (int k = 0; k < 2; k++) MPI_Comm_set_errhandler(comms[k], MPI_ERRORS_RETURN);
    for (int v = 1; v <= 4; v++) sparcml_type_create(v, &types[v]);
    send = t_alloc_words(maxcount);
    recv = t_alloc_words(maxcount);
    scratch = malloc(20011 * 16);
    dense = malloc(20011 * 8);
    reqs = malloc(sizeof *reqs * 2 * (size_t)size);
    payload = malloc(sizeof *payload * 2 * (size_t)size);
    if (!scratch || !dense || !reqs || !payload) MPI_Abort(MPI_COMM_WORLD, 2);

    /* The application's wildcard receives, posted before the library has
     * created anything on these communicators. */
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < size; j++) {
            int *pl = payload[k * size + j];
            pl[0] = pl[1] = pl[2] = pl[3] = -1;
            expect(MPI_Irecv(pl, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comms[k],
                             &reqs[k * size + j]) == MPI_SUCCESS, "MPI_Irecv failed");
        }

    for (int c = 0; c < CALLS; c++) {
        uint64_t h = t_rand(99, (uint64_t)c);
        rs_problem p = {(uint64_t)c, dims[h % 4], 1 + c % 4, densities[(h >> 8) % 5]};
        MPI_Count count = sparcml_capacity(p.dim, p.vtype);
        MPI_Comm comm = comms[c % 2];
        int inplace = (c / 2) % 2, rc;
        rs_build(&p, rank, inplace ? recv : send, count, scratch);
        rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : send, recv, (int)count, types[p.vtype], MPI_SUM,
                           comm);
        expect(rc == MPI_SUCCESS, "tagged MPI_Allreduce failed");
        if (rc == MPI_SUCCESS) expect(rs_check(&p, size, recv, dense) == 0, "wrong allreduce result");
        if (c == CALLS / 2) {
            /* A failing call: the last rank's stream claims nnz > dim. */
            uint64_t bad = p.dim + 1;
            rs_build(&p, rank, send, count, scratch);
            if (rank == size - 1) memcpy((char *)send + 16, &bad, 8);
            rc = MPI_Allreduce(send, recv, (int)count, types[p.vtype], MPI_SUM, comm);
            expect(rc != MPI_SUCCESS, "a malformed input was accepted");
        }
    }

    /* Nothing the library sent may have matched. */
    for (int i = 0; i < 2 * size; i++) {
        int flag = 1;
        expect(MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Test failed");
        expect(!flag, "a pending application receive was matched by library traffic");
    }
    for (int k = 0; k < 2; k++) {
        int flag = 1;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comms[k], &flag, MPI_STATUS_IGNORE);
        expect(!flag, "a library message is visible on the application's communicator");
    }
    /* Everyone is past the tests before anyone sends. */
    MPI_Barrier(MPI_COMM_WORLD);

    /* The application's own messages: exactly these must arrive. */
    {
        int (*out)[4] = malloc(sizeof *out * 2 * (size_t)size), seen[2][64] = {{0}};
        MPI_Request *sreqs = malloc(sizeof *sreqs * 2 * (size_t)size);
        MPI_Status *st = malloc(sizeof *st * 2 * (size_t)size);
        if (!out || !sreqs || !st || size > 64) MPI_Abort(MPI_COMM_WORLD, 2);
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < size; j++) {
                int *m = out[k * size + j], tag = 1000 + 10 * rank + k;
                m[0] = MAGIC; m[1] = rank; m[2] = j; m[3] = k;
                MPI_Isend(m, 4, MPI_INT, j, tag, comms[k], &sreqs[k * size + j]);
            }
        expect(MPI_Waitall(2 * size, reqs, st) == MPI_SUCCESS, "MPI_Waitall (receives) failed");
        for (int i = 0; i < 2 * size; i++) {
            int k = i / size, *m = payload[i], cnt = -1;
            MPI_Get_count(&st[i], MPI_INT, &cnt);
            expect(cnt == 4, "received a message of the wrong size");
            expect(m[0] == MAGIC, "received a payload that is not the application's");
            expect(m[2] == rank && m[3] == k, "received a payload addressed elsewhere");
            expect(m[1] >= 0 && m[1] < size && st[i].MPI_SOURCE == m[1], "status source mismatch");
            expect(st[i].MPI_TAG == 1000 + 10 * m[1] + k, "status tag mismatch");
            if (m[1] >= 0 && m[1] < size && m[3] >= 0 && m[3] < 2) seen[m[3]][m[1]]++;
        }
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < size; j++) expect(seen[k][j] == 1, "a payload missing or duplicated");
        MPI_Waitall(2 * size, sreqs, st); /* (MPI_STATUSES_IGNORE trips gcc 12 -Wstringop-overflow) */
        free(out); free(sreqs); free(st);
    }

    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("isolation: P=%d calls=%d pending_receives=%d failures=%d\n", size, CALLS + 1,
               2 * size, failures);
    for (int v = 1; v <= 4; v++) MPI_Type_free(&types[v]);
    MPI_Comm_free(&comms[1]);
    free(send); free(recv); free(scratch); free(dense); free(reqs); free(payload);
    MPI_Finalize();
    return failures ? 1 : 0;
}
