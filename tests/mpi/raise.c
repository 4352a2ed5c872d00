/* raise.c -- where and how a failed call of the library is raised.
 *
 *   raise fatal CASE HOW   the default handler everywhere
 *                          (MPI_ERRORS_ARE_FATAL); one bad call of CASE,
 *                          completed as HOW (blocking: MPI_Allreduce; wait:
 *                          MPI_Iallreduce + MPI_Wait).  The job must abort:
 *                          printing "raise: survived" is a failure the
 *                          script sees.  CASE: truncate (count fits each
 *                          rank's input, not the sum), badstream (an index
 *                          >= dim on the last rank), count (the last rank
 *                          passes a larger count).
 *   raise handler          a handler of the program's own on a duplicate of
 *                          MPI_COMM_WORLD, the default (fatal) one on
 *                          MPI_COMM_WORLD and MPI_COMM_SELF; a malformed
 *                          stream on the last rank, in a blocking call and
 *                          in non-blocking and persistent calls completed by
 *                          each completion call.  The handler must run once
 *                          per failed call, on that communicator, on the
 *                          calling thread, with a code of class MPI_ERR_ARG,
 *                          inside the call the program made to complete the
 *                          request; the completion call returns that code
 *                          (MPI_ERR_IN_STATUS with the code in the status
 *                          for the calls on several requests); a correct call
 *                          after each works.  Initialised with
 *                          MPI_THREAD_MULTIPLE, so that the script can run it
 *                          with the library's progress thread on too.
 * Prints "raise handler: P=N checked=C failures=F" on rank 0. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#if MPI_VERSION < 4
#include <mpi-ext.h> /* Open MPI 4.1: MPIX_Allreduce_init */
#endif

enum { DIM = 1000, K = 3 };

static int rank, size, failures, checked;
static MPI_Datatype tfloat;
static MPI_Count cap;
static uint64_t *send, *recv;

static void expect(int cond, const char *what)
{
    checked++;
    if (cond) return;
    failures++;
    fprintf(stderr, "FAIL rank %d: %s\n", rank, what);
}

/* K entries of this rank's own indices (disjoint across ranks). */
static void good_input(void *buf)
{
    uint64_t idx[K];
    float v[K] = {1, 2, 3};
    for (int i = 0; i < K; i++) idx[i] = (uint64_t)(rank * K + i);
    sparcml_stream_from_sorted(buf, cap, DIM, SPARCML_FLOAT, K, idx, v);
}

/* The last rank's stream gets an index >= dim. */
static void input(void *buf, int bad)
{
    good_input(buf);
    if (bad && rank == size - 1) sparcml_put_index((char *)buf + SPARCML_HEADER_BYTES, sparcml_index_width(DIM), K - 1, DIM);
}

/* ---- fatal ---------------------------------------------------------- */

static int run_fatal(const char *what, const char *how)
{
    /* Words of a rank's own stream: enough for the input, not for the sum
     * of P disjoint inputs (nor for the dense result). */
    int count = (int)(sparcml_round8(sparcml_sparse_bytes(DIM, SPARCML_FLOAT, K)) / 8);
    MPI_Request req;
    int rc;
    good_input(send);
    if (strcmp(what, "badstream") == 0) input(send, 1);
    else if (strcmp(what, "count") == 0) count = (int)cap + (rank == size - 1);
    else if (strcmp(what, "truncate") != 0) return 2;
    if (strcmp(how, "blocking") == 0) {
        rc = MPI_Allreduce(send, recv, count, tfloat, MPI_SUM, MPI_COMM_WORLD);
    } else {
        rc = MPI_Iallreduce(send, recv, count, tfloat, MPI_SUM, MPI_COMM_WORLD, &req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    printf("raise: survived (rank %d, rc %d)\n", rank, rc);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}

/* ---- handler -------------------------------------------------------- */

static struct {
    int calls, code;
    MPI_Comm comm;
    pthread_t thread;
} seen;
static MPI_Comm app; /* the program's duplicate, with its own handler */

static void on_error(MPI_Comm *comm, int *code, ...)
{
    seen.calls++;
    seen.code = *code;
    seen.comm = *comm;
    seen.thread = pthread_self();
}

enum { BY_BLOCKING, BY_WAIT, BY_TEST, BY_WAITALL, BY_TESTALL, BY_WAITANY, BY_TESTANY, BY_WAITSOME, BY_TESTSOME,
       BY_PERSISTENT, NBY };
static const char *const by_names[] = {"MPI_Allreduce", "MPI_Wait", "MPI_Test", "MPI_Waitall", "MPI_Testall",
                                       "MPI_Waitany", "MPI_Testany", "MPI_Waitsome", "MPI_Testsome",
                                       "persistent + MPI_Wait"};

static int start(int by, MPI_Request *req)
{
    if (by != BY_PERSISTENT) return MPI_Iallreduce(send, recv, (int)cap, tfloat, MPI_SUM, app, req);
#if MPI_VERSION >= 4
    int rc = MPI_Allreduce_init(send, recv, (int)cap, tfloat, MPI_SUM, app, MPI_INFO_NULL, req);
#else
    int rc = MPIX_Allreduce_init(send, recv, (int)cap, tfloat, MPI_SUM, app, MPI_INFO_NULL, req);
#endif
    return rc == MPI_SUCCESS ? MPI_Start(req) : rc;
}

/* Complete reqs[0] (a tagged call) beside reqs[1] (an untagged one) as
 * `by` does; the completion call's return value, with the tagged call's
 * status in *st. */
static int complete(int by, MPI_Request reqs[2], MPI_Status *st)
{
    MPI_Status sts[2];
    int rc = MPI_SUCCESS, flag = 0, index = -1, out = 0, idx[2], done0 = 0;
    switch (by) {
    case BY_WAIT: case BY_PERSISTENT:
        rc = MPI_Wait(&reqs[0], st);
        return rc == MPI_SUCCESS || reqs[1] == MPI_REQUEST_NULL ? rc : (MPI_Wait(&reqs[1], MPI_STATUS_IGNORE), rc);
    case BY_TEST:
        while (rc == MPI_SUCCESS && !flag) rc = MPI_Test(&reqs[0], &flag, st);
        return rc;
    case BY_WAITALL: case BY_TESTALL:
        if (by == BY_WAITALL) rc = MPI_Waitall(2, reqs, sts);
        else
            while (rc == MPI_SUCCESS && !flag) rc = MPI_Testall(2, reqs, &flag, sts);
        *st = sts[0];
        return rc;
    default: break;
    }
    while (!done0) { /* the "any" and "some" calls, until the tagged call is among the completed */
        if (by == BY_WAITANY || by == BY_TESTANY) {
            flag = 1;
            rc = by == BY_WAITANY ? MPI_Waitany(2, reqs, &index, &sts[0]) : MPI_Testany(2, reqs, &index, &flag, &sts[0]);
            if (!flag || index == MPI_UNDEFINED) continue;
            out = 1;
            idx[0] = index;
        } else {
            rc = by == BY_WAITSOME ? MPI_Waitsome(2, reqs, &out, idx, sts) : MPI_Testsome(2, reqs, &out, idx, sts);
            if (out == MPI_UNDEFINED) break;
        }
        for (int j = 0; j < out; j++)
            if (idx[j] == 0) done0 = 1, *st = sts[j];
        if (rc != MPI_SUCCESS && !done0) return rc;
    }
    return rc;
}

/* Entries in recv's stream (0: not a stream). */
static uint64_t result_nnz(void)
{
    sparcml_header h;
    return sparcml_stream_header(recv, &h) == SPARCML_OK ? h.nnz : 0;
}

static void check_one(int by)
{
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL}, handle = MPI_REQUEST_NULL;
    MPI_Status st;
    int rc, cls = -1, vin = rank + 1, vout = 0, several = by == BY_WAITALL || by == BY_TESTALL ||
                                                       by == BY_WAITSOME || by == BY_TESTSOME;
    char msg[256];
    memset(&seen, 0, sizeof seen);
    memset(&st, 0, sizeof st);
    input(send, 1);
    if (by == BY_BLOCKING) {
        rc = MPI_Allreduce(send, recv, (int)cap, tfloat, MPI_SUM, app);
    } else {
        rc = start(by, &reqs[0]);
        handle = reqs[0];
        snprintf(msg, sizeof msg, "%s: the bad call's start returned %d (its error is the completion's)",
                 by_names[by], rc);
        expect(rc == MPI_SUCCESS && seen.calls == 0, msg);
        if (by != BY_WAIT && by != BY_TEST && by != BY_PERSISTENT)
            MPI_Iallreduce(&vin, &vout, 1, MPI_INT, MPI_SUM, app, &reqs[1]);
        rc = complete(by, reqs, &st);
    }
    snprintf(msg, sizeof msg, "%s: the handler ran %d times (once), on %s, on %s thread", by_names[by], seen.calls,
             seen.comm == app ? "the call's communicator" : "another communicator",
             seen.calls && pthread_equal(seen.thread, pthread_self()) ? "the calling" : "another");
    expect(seen.calls == 1 && seen.comm == app && pthread_equal(seen.thread, pthread_self()), msg);
    if (several) {
        snprintf(msg, sizeof msg, "%s returned %d, not MPI_ERR_IN_STATUS; the handler got %d", by_names[by], rc,
                 seen.code);
        expect(rc == MPI_ERR_IN_STATUS && seen.code == MPI_ERR_IN_STATUS, msg);
        rc = st.MPI_ERROR;
    } else {
        snprintf(msg, sizeof msg, "%s returned %d, the handler got %d", by_names[by], rc, seen.code);
        expect(rc != MPI_SUCCESS && rc == seen.code, msg);
    }
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    snprintf(msg, sizeof msg, "%s: the error's class is %d, not MPI_ERR_ARG (%d)", by_names[by], cls, MPI_ERR_ARG);
    expect(cls == MPI_ERR_ARG, msg);
    if (reqs[1] != MPI_REQUEST_NULL) MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
    if (by != BY_BLOCKING && by != BY_WAIT && by != BY_TEST && by != BY_PERSISTENT) {
        snprintf(msg, sizeof msg, "%s: the untagged sum beside it is %d", by_names[by], vout);
        expect(vout == size * (size + 1) / 2, msg);
    }
    /* A correct call after it, on the same request where persistent. */
    input(send, 0);
    seen.calls = 0;
    if (by == BY_PERSISTENT) {
        rc = MPI_Start(&handle);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&handle, MPI_STATUS_IGNORE);
        MPI_Request_free(&handle);
    } else {
        rc = MPI_Allreduce(send, recv, (int)cap, tfloat, MPI_SUM, app);
    }
    snprintf(msg, sizeof msg, "%s: the correct call after it returned %d (handler %d times)", by_names[by], rc,
             seen.calls);
    expect(rc == MPI_SUCCESS && seen.calls == 0 && result_nnz() == (uint64_t)(K * size), msg);
}

static int run_handler(void)
{
    MPI_Errhandler eh;
    MPI_Comm_dup(MPI_COMM_WORLD, &app);
    MPI_Comm_create_errhandler(on_error, &eh);
    MPI_Comm_set_errhandler(app, eh);
    MPI_Errhandler_free(&eh);
    for (int by = 0; by < NBY; by++) check_one(by);
    MPI_Comm_free(&app);
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &checked, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("raise handler: P=%d checked=%d failures=%d\n", size, checked, failures);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    int provided, rc;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sparcml_type_create(SPARCML_FLOAT, &tfloat);
    cap = sparcml_capacity(DIM, SPARCML_FLOAT);
    send = malloc((size_t)cap * 8 + 64);
    recv = malloc((size_t)cap * 8 + 64);
    if (!send || !recv) MPI_Abort(MPI_COMM_WORLD, 2);
    if (argc == 4 && strcmp(argv[1], "fatal") == 0) return run_fatal(argv[2], argv[3]);
    if (argc != 2 || strcmp(argv[1], "handler") != 0) {
        if (rank == 0) fprintf(stderr, "usage: raise fatal truncate|badstream|count blocking|wait | raise handler\n");
        MPI_Finalize();
        return 2;
    }
    rc = run_handler();
    MPI_Type_free(&tfloat);
    free(send);
    free(recv);
    MPI_Finalize();
    return rc;
}
