/* nonblocking.c -- non-blocking tagged allreduces (MPI_Iallreduce,
 * MPI_Iallreduce_c) as MPI requests, among the application's own requests.
 *
 * usage: nonblocking many|free|bad
 *        nonblocking threads [THREADS [CALLS]]   (defaults 4 and 40)
 *        nonblocking --mpi   (prints "MPICH" or "Open MPI", the MPI this was
 *                             built with; no MPI_Init: tests/scripts/nonblocking.sh)
 *
 * Every tagged result is checked exactly against the sum recomputed here
 * from every rank's regenerated input (refsum.h) and must be bitwise the
 * same on every rank (hash compared); a completed request must be
 * MPI_REQUEST_NULL.  An alarm() bounds every mode: a hang fails.
 *
 * many: rounds of 16 tagged calls outstanding at once (float, double,
 *   int64; dims 1..20011; densities 0..1; some MPI_IN_PLACE; some through
 *   MPI_Iallreduce_c), with a blocking tagged call on the same
 *   communicator after the first 8 have started, and the application's own
 *   requests started between them on that communicator: two untagged
 *   MPI_Iallreduce of MPI_INT and a ring of MPI_Isend and MPI_Irecv (from
 *   the left neighbour, MPI_ANY_TAG).  The requests sit in an array in an
 *   order shuffled differently on every rank and complete by MPI_Waitall,
 *   a loop of MPI_Waitany, loops of MPI_Testsome and MPI_Testany, a loop of
 *   MPI_Waitsome, or a loop of MPI_Testall: each once with all tagged calls
 *   on one communicator (MPI_COMM_WORLD, a duplicate, a split with the
 *   ranks reversed), and once with them alternating between two (the
 *   duplicate and MPI_COMM_WORLD).  The vendor sums and the ring's
 *   payloads, sources and tags are checked too, and afterwards no message
 *   is left on the communicator.
 * free: a tagged call freed with MPI_Request_free while pending (every
 *   rank), another freed on even ranks and waited for on odd ones, then
 *   blocking and non-blocking tagged calls on the same communicator,
 *   checked; one more freed right before MPI_Finalize.  The freed calls'
 *   results are checked after MPI_Finalize (the library completes them).
 * bad: a malformed stream (an index >= dim; unsorted indices; in place)
 *   on the last rank only, with MPI_ERRORS_RETURN: the blocking call's
 *   error class is MPI_ERR_ARG (sparcml(7)); the non-blocking call starts
 *   successfully and completes (MPI_Wait; MPI_Test; MPI_Waitall with an
 *   untagged request beside it: MPI_ERR_IN_STATUS) with an error of the
 *   same class on every rank, recvbuf unchanged; a correct call after it
 *   works.  On an inter-communicator: MPI_ERR_COMM (from the start or the
 *   wait), as the blocking call.
 * progress done|pending: MPI_THREAD_MULTIPLE; a tagged call (dim 20011,
 *   d = 0.05) is started and the rank then makes no MPI
 *   call but PMPI_Request_get_status every 10 ms (which MPICH answers
 *   without polling the request) for up to 5 s: with SPARCML_PROGRESS_US
 *   set the library's thread must complete it meanwhile ("done"), without
 *   it the call must still be pending after 0.5 s ("pending"; MPICH only:
 *   Open MPI's get_status drives progress); then MPI_Wait, and the result
 *   is checked.
 * first: the first tagged call on a new communicator is an MPI_Iallreduce
 *   that rank 0 starts before sending a message rank 1 receives before it
 *   starts the same call: legal for a non-blocking collective, a deadlock
 *   if starting the call blocked (as creating the library's duplicate of
 *   the communicator with MPI_Comm_dup did); then a second call on it, and
 *   every result checked.
 * threads: MPI_THREAD_MULTIPLE (exit 77 when not provided); THREADS
 *   threads, each on its own duplicate of MPI_COMM_WORLD, run CALLS tagged
 *   MPI_Iallreduce each, completed by MPI_Wait, MPI_Test or (two at a time)
 *   MPI_Waitall. */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "refsum.h"

#define NTAGGED 16
#define NVENDOR 2
#define NRING 3
#define NREQ (NTAGGED + NVENDOR + 2 * NRING)
#define VLEN 5
#define MAGIC 0x0b10c

static int rank, size, failures, checked;
static MPI_Datatype types[5]; /* by enum sparcml_value_type */

static void expect(int cond, const char *what)
{
    if (cond) return;
    if (failures++ < 20) fprintf(stderr, "nonblocking: rank %d: %s\n", rank, what);
}

static void on_alarm(int sig)
{
    static const char msg[] = "nonblocking: timed out (a hang)\n";
    (void)sig;
    if (write(2, msg, sizeof msg - 1) < 0) { /* nothing more to do */ }
    _exit(3);
}

/* The bytes of a result stream, hashed. */
static uint64_t stream_hash(const void *buf)
{
    sparcml_header h;
    if (sparcml_stream_header(buf, &h) != SPARCML_OK) return 0;
    return t_hash(buf, h.format == SPARCML_DENSE ? sparcml_dense_bytes(h.dim, h.value_type)
                                               : sparcml_sparse_bytes(h.dim, h.value_type, h.nnz));
}

/* One tagged call: its problem, its buffers, how it is started. */
typedef struct tagged {
    rs_problem p;
    int inplace, large;
    MPI_Count count;
    void *send, *recv;
} tagged;

static void tagged_alloc(tagged *t)
{
    MPI_Count words = sparcml_capacity(20011, SPARCML_DOUBLE);
    t->send = t_alloc_words(words);
    t->recv = t_alloc_words(words);
}

static void tagged_free(tagged *t) { free(t->send); free(t->recv); }

/* Build this rank's input and start the call. */
static int tagged_start(tagged *t, MPI_Comm comm, MPI_Request *req, void *scratch)
{
    t->count = sparcml_capacity(t->p.dim, t->p.vtype);
    memset(t->recv, 0xA5, (size_t)t->count * 8); /* garbage must not leak into the result */
    if (rs_build(&t->p, rank, t->inplace ? t->recv : t->send, t->count, scratch) != SPARCML_OK) {
        fprintf(stderr, "test bug: cannot build input\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (t->large)
        return t_iallreduce_c(t->inplace ? MPI_IN_PLACE : t->send, t->recv, t->count, types[t->p.vtype],
                              MPI_SUM, comm, req);
    return MPI_Iallreduce(t->inplace ? MPI_IN_PLACE : t->send, t->recv, (int)t->count, types[t->p.vtype],
                          MPI_SUM, comm, req);
}

/* Check the result: exact, and the same bytes on every rank of comm
 * (collective: every rank checks the same calls in the same order). */
static void tagged_check(const tagged *t, MPI_Comm comm, int P, void *dense, const char *what)
{
    char msg[200];
    uint64_t bad = rs_check(&t->p, P, t->recv, dense);
    checked++;
    snprintf(msg, sizeof msg, "%s: %llu wrong entries (%s dim %llu density %g inplace %d)", what,
             (unsigned long long)bad, sparcml_value_type_name(t->p.vtype),
             (unsigned long long)t->p.dim, t->p.density, t->inplace);
    expect(bad == 0, msg);
    snprintf(msg, sizeof msg, "%s: result differs between ranks (%s dim %llu density %g)", what,
             sparcml_value_type_name(t->p.vtype), (unsigned long long)t->p.dim, t->p.density);
    expect(t_same_everywhere(stream_hash(t->recv), comm), msg);
}

/* The problem of tagged call i of round `round` (equal on every rank). */
static void tagged_problem(tagged *t, uint64_t seed, int i)
{
    static const uint64_t dims[] = {1, 100, 1000, 5003, 20011};
    static const double densities[] = {0, 1e-3, 1e-2, 0.1, 0.5, 1};
    static const int vtypes[] = {SPARCML_FLOAT, SPARCML_DOUBLE, SPARCML_INT64};
    uint64_t h = t_rand(seed, (uint64_t)i);
    t->p.seed = seed * 1000 + (uint64_t)i;
    t->p.dim = dims[h % 5];
    t->p.vtype = vtypes[i % 3];
    t->p.density = densities[(h >> 8) % 6];
    t->inplace = (i / 3) % 2; /* 3, 4, 5, 9, 10, 11, 15: every value type */
    t->large = i % 5 == 4;    /* MPI_Iallreduce_c: 4, 9, 14 */
}

/* ---- many ---------------------------------------------------------------- */

enum { K_TAGGED, K_VENDOR, K_RECV, K_SEND };
enum { BY_WAITALL, BY_WAITANY, BY_TESTSOME_TESTANY, BY_WAITSOME, BY_TESTALL, NBY };
static const char *const by_names[] = {"MPI_Waitall", "MPI_Waitany", "MPI_Testsome/MPI_Testany",
                                       "MPI_Waitsome", "MPI_Testall"};

typedef struct slot {
    int kind, i;
} slot;

typedef struct round_state {
    MPI_Request reqs[NREQ];
    slot desc[NREQ];
    int done[NREQ], ndone;
    MPI_Status recv_status[NRING];
    char what[80];
} round_state;

/* Request `k` of the array completed with status st. */
static void completed(round_state *r, int k, const MPI_Status *st)
{
    if (k < 0 || k >= NREQ) {
        expect(0, "a completion call returned an index out of range");
        return;
    }
    expect(!r->done[k], "a request completed twice");
    if (r->done[k]) return;
    r->done[k] = 1;
    r->ndone++;
    expect(r->reqs[k] == MPI_REQUEST_NULL, "a completed request is not MPI_REQUEST_NULL");
    if (r->desc[k].kind == K_RECV) r->recv_status[r->desc[k].i] = *st;
}

static void complete_all(round_state *r, int by)
{
    MPI_Status st[NREQ], one;
    int idx[NREQ], n, k, flag, rc, spins = 0;
    char msg[160];
    switch (by) {
    case BY_WAITALL:
        rc = MPI_Waitall(NREQ, r->reqs, st);
        snprintf(msg, sizeof msg, "%s: MPI_Waitall returned %d", r->what, rc);
        expect(rc == MPI_SUCCESS, msg);
        for (k = 0; k < NREQ; k++) completed(r, k, &st[k]);
        break;
    case BY_WAITANY:
        for (int j = 0; j < NREQ; j++) {
            rc = MPI_Waitany(NREQ, r->reqs, &k, &one);
            expect(rc == MPI_SUCCESS, "MPI_Waitany returned an error");
            if (rc != MPI_SUCCESS) break;
            completed(r, k, &one);
        }
        rc = MPI_Waitany(NREQ, r->reqs, &k, &one);
        expect(rc == MPI_SUCCESS && k == MPI_UNDEFINED, "MPI_Waitany on completed requests");
        break;
    case BY_TESTSOME_TESTANY:
        while (r->ndone < NREQ) {
            if (spins++ % 2) {
                rc = MPI_Testsome(NREQ, r->reqs, &n, idx, st);
                expect(rc == MPI_SUCCESS, "MPI_Testsome returned an error");
                if (rc != MPI_SUCCESS) break;
                expect(n != MPI_UNDEFINED, "MPI_Testsome: MPI_UNDEFINED with requests pending");
                if (n == MPI_UNDEFINED) break;
                for (int j = 0; j < n; j++) completed(r, idx[j], &st[j]);
            } else {
                rc = MPI_Testany(NREQ, r->reqs, &k, &flag, &one);
                expect(rc == MPI_SUCCESS, "MPI_Testany returned an error");
                if (rc != MPI_SUCCESS) break;
                expect(!flag || k != MPI_UNDEFINED, "MPI_Testany: MPI_UNDEFINED with requests pending");
                if (flag && k == MPI_UNDEFINED) break;
                if (flag) completed(r, k, &one);
            }
        }
        rc = MPI_Testsome(NREQ, r->reqs, &n, idx, st);
        expect(rc == MPI_SUCCESS && n == MPI_UNDEFINED, "MPI_Testsome on completed requests");
        break;
    case BY_WAITSOME:
        while (r->ndone < NREQ) {
            rc = MPI_Waitsome(NREQ, r->reqs, &n, idx, st);
            expect(rc == MPI_SUCCESS, "MPI_Waitsome returned an error");
            if (rc != MPI_SUCCESS) break;
            expect(n != MPI_UNDEFINED && n > 0, "MPI_Waitsome completed nothing with requests pending");
            if (n == MPI_UNDEFINED || n <= 0) break;
            for (int j = 0; j < n; j++) completed(r, idx[j], &st[j]);
        }
        break;
    default: /* BY_TESTALL */
        flag = 0;
        while (!flag) {
            rc = MPI_Testall(NREQ, r->reqs, &flag, st);
            expect(rc == MPI_SUCCESS, "MPI_Testall returned an error");
            if (rc != MPI_SUCCESS) break;
            if (!flag)
                for (k = 0; k < NREQ; k++)
                    if (r->reqs[k] == MPI_REQUEST_NULL && !r->done[k]) {
                        /* MPI_Testall completes all or none of them */
                        expect(0, "MPI_Testall returned false but freed a request");
                        flag = 1;
                        break;
                    }
        }
        for (k = 0; k < NREQ; k++) completed(r, k, &st[k]);
        break;
    }
    snprintf(msg, sizeof msg, "%s: %d of %d requests completed", r->what, r->ndone, NREQ);
    expect(r->ndone == NREQ, msg);
}

/* Round `round` on comm; the odd-numbered tagged calls on comm2 (which may
 * be comm).  A blocking tagged call on comm in the middle. */
static void many_round(int round, MPI_Comm comm, MPI_Comm comm2, const char *cname, tagged *tg, tagged *blk,
                       void *scratch, void *dense)
{
    int P, crank, perm[NREQ], s = 0, by = round % NBY, left, right, rc, flag;
    int vin[NVENDOR][VLEN], vout[NVENDOR][VLEN], sendmsg[NRING][4], recvmsg[NRING][4];
    round_state r;
    char msg[160];
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &P);
    memset(&r, 0, sizeof r);
    snprintf(r.what, sizeof r.what, "round %d (%s, %s)", round, cname, by_names[by]);
    left = (crank + P - 1) % P;
    right = (crank + 1) % P;
    /* The array's order: a permutation seeded by the rank (and the round). */
    for (int k = 0; k < NREQ; k++) perm[k] = k;
    for (int k = NREQ - 1; k > 0; k--) {
        int j = (int)(t_rand(0x5bff1e + (uint64_t)rank, (uint64_t)(round * NREQ + k)) % (uint64_t)(k + 1));
        int x = perm[k];
        perm[k] = perm[j];
        perm[j] = x;
    }
    for (int k = 0; k < NREQ; k++) r.reqs[k] = MPI_REQUEST_NULL;
#define NEXT_SLOT(kind_, i_) (r.desc[perm[s]] = (slot){(kind_), (i_)}, &r.reqs[perm[s++]])
    for (int i = 0, v = 0, g = 0; i < NTAGGED; i++) {
        tagged_problem(&tg[i], 100 + (uint64_t)round, i);
        rc = tagged_start(&tg[i], i % 2 ? comm2 : comm, NEXT_SLOT(K_TAGGED, i), scratch);
        snprintf(msg, sizeof msg, "%s: tagged MPI_Iallreduce%s %d did not start", r.what,
                 tg[i].large ? "_c" : "", i);
        expect(rc == MPI_SUCCESS, msg);
        if (i == 7) { /* a blocking call while 8 are pending */
            tagged_problem(blk, 200 + (uint64_t)round, i);
            blk->inplace = 0;
            blk->count = sparcml_capacity(blk->p.dim, blk->p.vtype);
            rs_build(&blk->p, rank, blk->send, blk->count, scratch);
            rc = MPI_Allreduce(blk->send, blk->recv, (int)blk->count, types[blk->p.vtype], MPI_SUM, comm);
            snprintf(msg, sizeof msg, "%s: a blocking tagged call among pending ones failed", r.what);
            expect(rc == MPI_SUCCESS, msg);
        }
        if ((i == 2 || i == 9) && v < NVENDOR) { /* the application's own allreduce */
            for (int j = 0; j < VLEN; j++) vin[v][j] = crank * 1000 + j * 7 + v + round;
            memset(vout[v], 0xA5, sizeof vout[v]);
            rc = MPI_Iallreduce(vin[v], vout[v], VLEN, MPI_INT, MPI_SUM, comm, NEXT_SLOT(K_VENDOR, v));
            expect(rc == MPI_SUCCESS, "untagged MPI_Iallreduce did not start");
            v++;
        }
        if ((i == 1 || i == 6 || i == 12) && g < NRING) { /* a ring message */
            memset(recvmsg[g], 0xff, sizeof recvmsg[g]);
            rc = MPI_Irecv(recvmsg[g], 4, MPI_INT, left, MPI_ANY_TAG, comm, NEXT_SLOT(K_RECV, g));
            expect(rc == MPI_SUCCESS, "MPI_Irecv failed");
            sendmsg[g][0] = MAGIC; sendmsg[g][1] = crank; sendmsg[g][2] = g; sendmsg[g][3] = round;
            rc = MPI_Isend(sendmsg[g], 4, MPI_INT, right, 100 + 10 * g + round, comm, NEXT_SLOT(K_SEND, g));
            expect(rc == MPI_SUCCESS, "MPI_Isend failed");
            g++;
        }
    }
#undef NEXT_SLOT
    if (s != NREQ) { fprintf(stderr, "test bug: %d requests started\n", s); MPI_Abort(MPI_COMM_WORLD, 3); }
    complete_all(&r, by);

    for (int i = 0; i < NTAGGED; i++) {
        snprintf(msg, sizeof msg, "%s, tagged call %d", r.what, i);
        tagged_check(&tg[i], i % 2 ? comm2 : comm, P, dense, msg);
    }
    snprintf(msg, sizeof msg, "%s, the blocking call among them", r.what);
    tagged_check(blk, comm, P, dense, msg);
    for (int v = 0; v < NVENDOR; v++) {
        checked++;
        for (int j = 0; j < VLEN; j++) {
            int ref = 0;
            for (int q = 0; q < P; q++) ref += q * 1000 + j * 7 + v + round;
            snprintf(msg, sizeof msg, "%s: untagged MPI_Iallreduce %d: wrong sum", r.what, v);
            expect(vout[v][j] == ref, msg);
        }
    }
    for (int g = 0; g < NRING; g++) {
        const MPI_Status *st = &r.recv_status[g];
        int cnt = -1;
        checked++;
        MPI_Get_count(st, MPI_INT, &cnt);
        snprintf(msg, sizeof msg, "%s: ring message %d: wrong payload, size, source or tag", r.what, g);
        expect(cnt == 4 && recvmsg[g][0] == MAGIC && recvmsg[g][1] == left && recvmsg[g][2] == g
                   && recvmsg[g][3] == round && st->MPI_SOURCE == left && st->MPI_TAG == 100 + 10 * g + round,
               msg);
    }
    /* No library message on the application's communicator. */
    MPI_Barrier(comm);
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE);
    snprintf(msg, sizeof msg, "%s: a message is left on the application's communicator", r.what);
    expect(!flag, msg);
    MPI_Barrier(comm);
}

static int run_many(void)
{
    tagged tg[NTAGGED], blk;
    void *scratch = malloc(20011 * 16), *dense = malloc(20011 * 8);
    MPI_Comm dup, rev;
    if (!scratch || !dense) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int i = 0; i < NTAGGED; i++) tagged_alloc(&tg[i]);
    tagged_alloc(&blk);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &rev); /* the ranks reversed */
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(rev, MPI_ERRORS_RETURN);
    many_round(0, MPI_COMM_WORLD, MPI_COMM_WORLD, "MPI_COMM_WORLD", tg, &blk, scratch, dense);
    many_round(1, dup, dup, "duplicate", tg, &blk, scratch, dense);
    many_round(2, rev, rev, "reversed", tg, &blk, scratch, dense);
    many_round(3, MPI_COMM_WORLD, MPI_COMM_WORLD, "MPI_COMM_WORLD", tg, &blk, scratch, dense);
    many_round(4, dup, dup, "duplicate", tg, &blk, scratch, dense);
    /* Every kind of completion again with the calls on two communicators. */
    for (int round = 5; round < 5 + NBY; round++)
        many_round(round, dup, MPI_COMM_WORLD, "duplicate and MPI_COMM_WORLD", tg, &blk, scratch, dense);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&rev);
    for (int i = 0; i < NTAGGED; i++) tagged_free(&tg[i]);
    tagged_free(&blk);
    free(scratch); free(dense);
    return 0;
}

/* ---- free ---------------------------------------------------------------- */

static int run_free(void)
{
    /* A, D and G are freed; their buffers stay allocated until the end. */
    tagged A, B, C, D, E, F, G;
    tagged *all[] = {&A, &B, &C, &D, &E, &F, &G};
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Request req, reqD;
    void *scratch = malloc(20011 * 16), *dense = malloc(20011 * 8);
    int rc, flag = 0, post_fail = 0;
    if (!scratch || !dense) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int i = 0; i < 7; i++) tagged_alloc(all[i]);
    A = (tagged){{11, 20011, SPARCML_DOUBLE, 0.5}, 0, 0, 0, A.send, A.recv};
    B = (tagged){{12, 5003, SPARCML_FLOAT, 0.01}, 0, 0, 0, B.send, B.recv};
    C = (tagged){{13, 1000, SPARCML_INT64, 0.1}, 0, 1, 0, C.send, C.recv};
    D = (tagged){{14, 20011, SPARCML_FLOAT, 1e-3}, 1, 0, 0, D.send, D.recv};
    E = (tagged){{15, 20011, SPARCML_INT64, 0.1}, 1, 0, 0, E.send, E.recv};
    F = (tagged){{16, 100, SPARCML_DOUBLE, 0.5}, 0, 1, 0, F.send, F.recv};
    G = (tagged){{17, 20011, SPARCML_FLOAT, 0.3}, 0, 0, 0, G.send, G.recv};

    /* A: freed at once, on every rank, while pending. */
    rc = tagged_start(&A, comm, &req, scratch);
    expect(rc == MPI_SUCCESS, "free: tagged MPI_Iallreduce A did not start");
    rc = MPI_Request_free(&req);
    expect(rc == MPI_SUCCESS && req == MPI_REQUEST_NULL, "free: MPI_Request_free of pending call A");

    /* B: blocking, on the same communicator. */
    B.count = sparcml_capacity(B.p.dim, B.p.vtype);
    rs_build(&B.p, rank, B.send, B.count, scratch);
    rc = MPI_Allreduce(B.send, B.recv, (int)B.count, types[B.p.vtype], MPI_SUM, comm);
    expect(rc == MPI_SUCCESS, "free: blocking call B after a freed one failed");
    if (rc == MPI_SUCCESS) tagged_check(&B, comm, size, dense, "free: blocking call B");

    /* C waited for; D started after it, freed on even ranks and waited for
     * on odd ones (after C). */
    rc = tagged_start(&C, comm, &req, scratch);
    expect(rc == MPI_SUCCESS, "free: MPI_Iallreduce_c C did not start");
    rc = tagged_start(&D, comm, &reqD, scratch);
    expect(rc == MPI_SUCCESS, "free: MPI_Iallreduce D did not start");
    if (rank % 2 == 0) {
        rc = MPI_Request_free(&reqD);
        expect(rc == MPI_SUCCESS && reqD == MPI_REQUEST_NULL, "free: MPI_Request_free of pending call D");
    }
    rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    expect(rc == MPI_SUCCESS && req == MPI_REQUEST_NULL, "free: MPI_Wait on C");
    tagged_check(&C, comm, size, dense, "free: non-blocking call C");
    if (rank % 2 == 1) {
        rc = MPI_Wait(&reqD, MPI_STATUS_IGNORE);
        expect(rc == MPI_SUCCESS && reqD == MPI_REQUEST_NULL, "free: MPI_Wait on D");
        expect(rs_check(&D.p, size, D.recv, dense) == 0, "free: non-blocking call D (odd rank) is wrong");
    }

    /* E: in place, MPI_Test until done. */
    rc = tagged_start(&E, comm, &req, scratch);
    expect(rc == MPI_SUCCESS, "free: MPI_Iallreduce E did not start");
    while (rc == MPI_SUCCESS && !flag) rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    expect(rc == MPI_SUCCESS && req == MPI_REQUEST_NULL, "free: MPI_Test on E");
    tagged_check(&E, comm, size, dense, "free: non-blocking call E");

    /* F: blocking, large-count API. */
    F.count = sparcml_capacity(F.p.dim, F.p.vtype);
    rs_build(&F.p, rank, F.send, F.count, scratch);
    rc = t_allreduce_c(F.send, F.recv, F.count, types[F.p.vtype], MPI_SUM, comm);
    expect(rc == MPI_SUCCESS, "free: blocking call F failed");
    if (rc == MPI_SUCCESS) tagged_check(&F, comm, size, dense, "free: blocking call F");

    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &checked, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("nonblocking free: P=%d checked=%d failures=%d (+3 freed calls checked after MPI_Finalize)\n",
               size, checked, failures);

    /* G: freed right before MPI_Finalize. */
    rc = tagged_start(&G, comm, &req, scratch);
    if (rc == MPI_SUCCESS) rc = MPI_Request_free(&req);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "nonblocking: rank %d: free: call G did not start or could not be freed\n", rank);
        post_fail++;
    }
    /* Freeing the datatypes does not affect the pending call (MPI). */
    for (int v = 1; v <= 4; v++) MPI_Type_free(&types[v]);
    MPI_Finalize();

    /* The library completed the freed calls by now. */
    if (rs_check(&A.p, size, A.recv, dense) != 0) {
        fprintf(stderr, "nonblocking: rank %d: free: freed call A's result is wrong after MPI_Finalize\n", rank);
        post_fail++;
    }
    if (rank % 2 == 0 && rs_check(&D.p, size, D.recv, dense) != 0) {
        fprintf(stderr, "nonblocking: rank %d: free: freed call D's result is wrong after MPI_Finalize\n", rank);
        post_fail++;
    }
    if (rs_check(&G.p, size, G.recv, dense) != 0) {
        fprintf(stderr, "nonblocking: rank %d: free: call G, freed before MPI_Finalize, is wrong after it\n",
                rank);
        post_fail++;
    }
    for (int i = 0; i < 7; i++) tagged_free(all[i]);
    free(scratch); free(dense);
    return failures || post_fail ? 1 : 0;
}

/* ---- bad ----------------------------------------------------------------- */

enum { BAD_INDEX_GE_DIM, BAD_UNSORTED, NBAD };
static const char *const bad_names[] = {"index >= dim", "unsorted indices"};

/* Make the stream in buf malformed. */
static void spoil(void *buf, int how)
{
    sparcml_header h;
    void *idx, *vals;
    sparcml_stream_header(buf, &h);
    sparcml_stream_arrays(buf, &idx, &vals);
    if (h.format != SPARCML_SPARSE || h.nnz < 3) {
        fprintf(stderr, "test bug: the input to spoil is not sparse with 3 entries or more\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (how == BAD_INDEX_GE_DIM)
        sparcml_put_index(idx, h.index_width, h.nnz - 1, h.dim);
    else /* the last index first */
        sparcml_put_index(idx, h.index_width, 0, sparcml_get_index(idx, h.index_width, h.nnz - 1));
}

/* For a diagnosis only: MPICH 4.0 puts in a status of MPI_Waitall
 * (MPI_ERR_IN_STATUS) not the code a generalized request's query function
 * returned but an MPI_ERR_OTHER wrapping it, "...: user request query
 * function returned error code N" (MPIR_Grequest_query); the class of N,
 * or -1. */
static int wrapped_class(int code)
{
    static const char wrapped[] = "returned error code ";
    char str[MPI_MAX_ERROR_STRING + 1] = "";
    const char *at;
    int cls = -1, len = 0;
    MPI_Error_string(code, str, &len);
    at = strstr(str, wrapped);
    if (at) MPI_Error_class(atoi(at + sizeof wrapped - 1), &cls);
    return cls;
}

enum { DONE_WAIT, DONE_TEST, DONE_WAITALL, NDONE };
static const char *const done_names[] = {"MPI_Wait", "MPI_Test", "MPI_Waitall"};

static int run_bad(void)
{
    MPI_Comm comm;
    rs_problem p = {21, 1000, SPARCML_FLOAT, 0.05};
    MPI_Count count = sparcml_capacity(p.dim, p.vtype);
    void *send = t_alloc_words(count + 1), *recv = t_alloc_words(count + 1);
    void *before = t_alloc_words(count + 1), *scratch = malloc(1000 * 16), *dense = malloc(1000 * 8);
    int blocking_class[NBAD];
    char msg[200];
    if (!scratch || !dense) MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);

    /* The blocking call's answer to each bad input. */
    for (int b = 0; b < NBAD; b++) {
        int rc, cls = MPI_SUCCESS;
        rs_build(&p, rank, send, count, scratch);
        if (rank == size - 1) spoil(send, b);
        memset(recv, 0x5a, (size_t)count * 8);
        rc = MPI_Allreduce(send, recv, (int)count, types[p.vtype], MPI_SUM, comm);
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        snprintf(msg, sizeof msg, "bad (%s): the blocking call returned class %d, not MPI_ERR_ARG (%d)",
                 bad_names[b], cls, MPI_ERR_ARG);
        expect(cls == MPI_ERR_ARG, msg);
        blocking_class[b] = cls;
    }

    for (int b = 0; b < NBAD; b++)
        for (int how = 0; how < NDONE; how++)
            for (int inplace = 0; inplace < 2; inplace++) {
                MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
                MPI_Status st[2];
                int rc, cls = MPI_SUCCESS, flag = 0, vin = rank + 1, vout = -1;
                const char *mode = done_names[how];
                tagged t = {p, inplace, 0, count, send, recv};
                memset(recv, 0x5a, (size_t)count * 8);
                rs_build(&p, rank, inplace ? recv : send, count, scratch);
                if (rank == size - 1) spoil(inplace ? recv : send, b);
                memcpy(before, recv, (size_t)count * 8);
                rc = MPI_Iallreduce(inplace ? MPI_IN_PLACE : send, recv, (int)count, types[p.vtype], MPI_SUM,
                                    comm, &reqs[0]);
                snprintf(msg, sizeof msg, "bad (%s, %s, inplace %d): MPI_Iallreduce did not start (rc %d)",
                         bad_names[b], mode, inplace, rc);
                expect(rc == MPI_SUCCESS && reqs[0] != MPI_REQUEST_NULL, msg);
                if (rc != MPI_SUCCESS) continue;
                if (how == DONE_WAIT) {
                    rc = MPI_Wait(&reqs[0], &st[0]);
                } else if (how == DONE_TEST) {
                    do rc = MPI_Test(&reqs[0], &flag, &st[0]);
                    while (rc == MPI_SUCCESS && !flag);
                } else {
                    rc = MPI_Iallreduce(&vin, &vout, 1, MPI_INT, MPI_SUM, comm, &reqs[1]);
                    expect(rc == MPI_SUCCESS, "bad: untagged MPI_Iallreduce did not start");
                    rc = MPI_Waitall(2, reqs, st);
                }
                checked++;
                if (how == DONE_WAITALL) {
                    int cls1 = MPI_SUCCESS;
                    snprintf(msg, sizeof msg, "bad (%s, %s, inplace %d): MPI_Waitall returned %d, not "
                             "MPI_ERR_IN_STATUS", bad_names[b], mode, inplace, rc);
                    expect(rc == MPI_ERR_IN_STATUS, msg);
                    if (rc == MPI_ERR_IN_STATUS) {
                        /* sparcml(7): the status's MPI_ERROR holds the class */
                        MPI_Error_class(st[0].MPI_ERROR, &cls);
                        if (cls != blocking_class[b]) {
                            snprintf(msg, sizeof msg, "bad (%s, %s, inplace %d): the status's MPI_ERROR has class "
                                     "%d, wrapping one of class %d", bad_names[b], mode, inplace, cls,
                                     wrapped_class(st[0].MPI_ERROR));
                            expect(0, msg);
                        }
                        /* The untagged request completed (MPI_SUCCESS), or
                         * MPI_Waitall returned before it did
                         * (MPI_ERR_PENDING): then it is still active. */
                        if (st[1].MPI_ERROR != MPI_SUCCESS) MPI_Error_class(st[1].MPI_ERROR, &cls1);
                        if (cls1 == MPI_ERR_PENDING) {
                            expect(reqs[1] != MPI_REQUEST_NULL, "bad: a pending request is MPI_REQUEST_NULL");
                            cls1 = MPI_SUCCESS;
                            if (reqs[1] != MPI_REQUEST_NULL && MPI_Wait(&reqs[1], &st[1]) != MPI_SUCCESS)
                                cls1 = -1;
                        }
                    } else if (rc != MPI_SUCCESS) {
                        MPI_Error_class(rc, &cls);
                    }
                    snprintf(msg, sizeof msg, "bad (%s, %s, inplace %d): the untagged request beside it failed "
                             "(class %d)", bad_names[b], mode, inplace, cls1);
                    expect(cls1 == MPI_SUCCESS, msg);
                    expect(vout == (size * (size + 1)) / 2, "bad: the untagged sum beside the bad call is wrong");
                } else {
                    snprintf(msg, sizeof msg, "bad (%s, %s, inplace %d): the call succeeded", bad_names[b], mode,
                             inplace);
                    expect(rc != MPI_SUCCESS, msg);
                    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
                }
                snprintf(msg, sizeof msg, "bad (%s, %s, inplace %d): error class %d, the blocking call's %d",
                         bad_names[b], mode, inplace, cls, blocking_class[b]);
                expect(cls == blocking_class[b], msg);
                snprintf(msg, sizeof msg, "bad (%s, %s, inplace %d): the request is not MPI_REQUEST_NULL",
                         bad_names[b], mode, inplace);
                expect(reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL, msg);
                snprintf(msg, sizeof msg, "bad (%s, %s, inplace %d): recvbuf changed", bad_names[b], mode, inplace);
                expect(memcmp(before, recv, (size_t)count * 8) == 0, msg);

                /* A correct call right after: non-blocking, then blocking. */
                rc = tagged_start(&t, comm, &reqs[0], scratch);
                if (rc == MPI_SUCCESS) rc = MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
                snprintf(msg, sizeof msg, "bad (%s, %s, inplace %d): the correct non-blocking call after it "
                         "failed", bad_names[b], mode, inplace);
                expect(rc == MPI_SUCCESS, msg);
                tagged_check(&t, comm, size, dense, "bad: the correct non-blocking call after it");
                rs_build(&p, rank, send, count, scratch);
                rc = MPI_Allreduce(send, recv, (int)count, types[p.vtype], MPI_SUM, comm);
                snprintf(msg, sizeof msg, "bad (%s, %s, inplace %d): the correct blocking call after it failed",
                         bad_names[b], mode, inplace);
                expect(rc == MPI_SUCCESS, msg);
                tagged_check(&t, comm, size, dense, "bad: the correct blocking call after it");
            }
    /* An inter-communicator: MPI_ERR_COMM, from the start or the wait. */
    if (size >= 2) {
        MPI_Comm half, inter;
        MPI_Request req = MPI_REQUEST_NULL;
        int rc, cls = MPI_SUCCESS;
        MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank < size / 2 ? size / 2 : 0, 7, &inter);
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        rs_build(&p, rank, send, count, scratch);
        rc = MPI_Iallreduce(send, recv, (int)count, types[p.vtype], MPI_SUM, inter, &req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
        snprintf(msg, sizeof msg, "bad (inter-communicator): error class %d, not MPI_ERR_COMM (%d)", cls,
                 MPI_ERR_COMM);
        expect(cls == MPI_ERR_COMM, msg);
        checked++;
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    MPI_Comm_free(&comm);
    free(send); free(recv); free(before); free(scratch); free(dense);
    return 0;
}

/* ---- threads ------------------------------------------------------------- */

static int calls = 40;

typedef struct worker {
    int id;
    MPI_Comm comm;
    int failures, done;
    pthread_t thread;
} worker;

static void *thread_main(void *arg)
{
    worker *w = arg;
    static const uint64_t dims[] = {1, 100, 1000, 5003, 20011};
    static const double densities[] = {0, 1e-3, 1e-2, 0.1, 0.5, 1};
    MPI_Datatype ty[5];
    tagged t[2];
    void *scratch = malloc(20011 * 16), *dense = malloc(20011 * 8);
    if (!scratch || !dense) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int v = 1; v <= 4; v++) sparcml_type_create(v, &ty[v]);
    tagged_alloc(&t[0]);
    tagged_alloc(&t[1]);
    for (int c = 0; c < calls; c++) {
        int two = c % 3 == 2, rc = MPI_SUCCESS, flag = 0;
        MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        MPI_Status st[2];
        for (int k = 0; k <= two; k++) {
            uint64_t h = t_rand(4242 + (uint64_t)w->id, (uint64_t)(2 * c + k));
            rs_problem p = {((uint64_t)w->id << 40) + ((uint64_t)c << 1) + (uint64_t)k, dims[h % 5],
                            1 + (int)((h >> 8) % 4), densities[(h >> 16) % 6]};
            t[k].p = p;
            t[k].inplace = (c + k) % 2;
            t[k].count = sparcml_capacity(p.dim, p.vtype);
            memset(t[k].recv, 0xA5, (size_t)t[k].count * 8);
            rs_build(&p, rank, t[k].inplace ? t[k].recv : t[k].send, t[k].count, scratch);
            if (rc == MPI_SUCCESS)
                rc = MPI_Iallreduce(t[k].inplace ? MPI_IN_PLACE : t[k].send, t[k].recv, (int)t[k].count,
                                    ty[p.vtype], MPI_SUM, w->comm, &reqs[k]);
        }
        if (rc == MPI_SUCCESS) {
            if (two)
                rc = MPI_Waitall(2, reqs, st); /* (MPI_STATUSES_IGNORE trips gcc 12 -Wstringop-overflow) */
            else if (c % 3 == 1)
                do rc = MPI_Test(&reqs[0], &flag, MPI_STATUS_IGNORE);
                while (rc == MPI_SUCCESS && !flag);
            else
                rc = MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
        }
        if (rc != MPI_SUCCESS || reqs[0] != MPI_REQUEST_NULL || reqs[1] != MPI_REQUEST_NULL) {
            if (w->failures++ < 5)
                fprintf(stderr, "nonblocking: rank %d thread %d call %d: a request failed (%d) or is not "
                        "MPI_REQUEST_NULL after completing\n", rank, w->id, c, rc);
            /* every rank of the communicator runs the hash check below */
        }
        for (int k = 0; k <= two; k++) {
            uint64_t bad = rs_check(&t[k].p, size, t[k].recv, dense);
            int same = t_same_everywhere(stream_hash(t[k].recv), w->comm);
            if ((bad || !same) && w->failures++ < 5)
                fprintf(stderr, "nonblocking: rank %d thread %d call %d.%d: %llu wrong entries, %s (%s dim %llu)\n",
                        rank, w->id, c, k, (unsigned long long)bad, same ? "same on all ranks" : "differs between ranks",
                        sparcml_value_type_name(t[k].p.vtype), (unsigned long long)t[k].p.dim);
            w->done++;
        }
    }
    for (int v = 1; v <= 4; v++) MPI_Type_free(&ty[v]);
    tagged_free(&t[0]);
    tagged_free(&t[1]);
    free(scratch); free(dense);
    return NULL;
}

static int run_threads(int nthreads)
{
    worker *ws = calloc((size_t)nthreads, sizeof *ws);
    if (!ws) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int t = 0; t < nthreads; t++) {
        ws[t].id = t;
        MPI_Comm_dup(MPI_COMM_WORLD, &ws[t].comm);
        MPI_Comm_set_errhandler(ws[t].comm, MPI_ERRORS_RETURN);
    }
    for (int t = 0; t < nthreads; t++)
        if (pthread_create(&ws[t].thread, NULL, thread_main, &ws[t]) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int t = 0; t < nthreads; t++) {
        pthread_join(ws[t].thread, NULL);
        int expected = calls + calls / 3; /* every third call is two */
        failures += ws[t].failures;
        checked += ws[t].done;
        if (ws[t].done != expected) {
            fprintf(stderr, "nonblocking: rank %d thread %d: %d of %d calls checked\n", rank, t, ws[t].done,
                    expected);
            failures++;
        }
        MPI_Comm_free(&ws[t].comm);
    }
    free(ws);
    return 0;
}

/* ---- progress ------------------------------------------------------------ */

static int run_progress(int expect_done)
{
    tagged tg = {.p = {.seed = 99, .dim = 20011, .vtype = SPARCML_FLOAT, .density = 0.05}};
    void *scratch = malloc(20011 * 16 + 16), *dense = malloc(20011 * 8 + 8);
    MPI_Request req;
    int flag = 0, polls = 0, limit = expect_done ? 500 : 50;
    tagged_alloc(&tg);
    expect(tagged_start(&tg, MPI_COMM_WORLD, &req, scratch) == MPI_SUCCESS, "progress: MPI_Iallreduce failed");
    for (; polls < limit && !flag; polls++) {
        struct timespec ten_ms = {0, 10 * 1000 * 1000};
        nanosleep(&ten_ms, NULL);
        PMPI_Request_get_status(req, &flag, MPI_STATUS_IGNORE); /* never polls on MPICH */
    }
    if (expect_done)
        expect(flag, "progress: the call did not complete in 5 s without the application calling MPI");
    else
        expect(!flag, "progress: the call completed without a progress thread (the test cannot tell)");
    expect(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS, "progress: MPI_Wait failed");
    tagged_check(&tg, MPI_COMM_WORLD, size, dense, "progress");
    tagged_free(&tg);
    free(scratch);
    free(dense);
    return 0;
}

/* ---- first --------------------------------------------------------------- */

static int run_first(void)
{
    tagged tg[2] = {{.p = {.seed = 7, .dim = 5003, .vtype = SPARCML_DOUBLE, .density = 0.01}},
                    {.p = {.seed = 8, .dim = 1000, .vtype = SPARCML_FLOAT, .density = 0.5}}};
    void *scratch = malloc(20011 * 16 + 16), *dense = malloc(20011 * 8 + 8);
    MPI_Request req[2];
    MPI_Comm comm;
    int token = 42, got = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    for (int i = 0; i < 2; i++) tagged_alloc(&tg[i]);
    if (rank == 1) MPI_Recv(&got, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    expect(tagged_start(&tg[0], comm, &req[0], scratch) == MPI_SUCCESS, "first: MPI_Iallreduce failed");
    if (rank == 0 && size > 1) MPI_Send(&token, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
    expect(tagged_start(&tg[1], comm, &req[1], scratch) == MPI_SUCCESS, "first: second MPI_Iallreduce failed");
    for (int i = 1; i >= 0; i--) expect(MPI_Wait(&req[i], MPI_STATUS_IGNORE) == MPI_SUCCESS, "first: MPI_Wait failed");
    expect(rank != 1 || got == token, "first: the message from rank 0 did not arrive");
    for (int i = 0; i < 2; i++) {
        tagged_check(&tg[i], comm, size, dense, "first");
        tagged_free(&tg[i]);
    }
    MPI_Comm_free(&comm);
    free(scratch);
    free(dense);
    return 0;
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int provided = MPI_THREAD_SINGLE, nthreads = argc > 2 ? atoi(argv[2]) : 4;
    char thr[64] = "";
    if (strcmp(mode, "--mpi") == 0) {
#if defined(OPEN_MPI) && OPEN_MPI
        puts("Open MPI");
#elif defined(MPICH_VERSION)
        puts("MPICH");
#else
        puts("unknown");
#endif
        return 0;
    }
    if (strcmp(mode, "many") && strcmp(mode, "free") && strcmp(mode, "bad") && strcmp(mode, "threads")
        && strcmp(mode, "progress") && strcmp(mode, "first")) {
        fprintf(stderr, "usage: nonblocking many|free|bad|first|threads [THREADS [CALLS]] | progress done|pending"
                        " | --mpi\n");
        return 2;
    }
    if (strcmp(mode, "progress") == 0) {
        if (argc != 3 || (strcmp(argv[2], "done") && strcmp(argv[2], "pending"))) {
            fprintf(stderr, "usage: nonblocking progress done|pending\n");
            return 2;
        }
        nthreads = 1;
    }
    if (argc > 3 && strcmp(mode, "threads") == 0) calls = atoi(argv[3]);
    if (nthreads < 1 || calls < 1) {
        fprintf(stderr, "nonblocking threads: THREADS and CALLS must be positive\n");
        return 2;
    }
    signal(SIGALRM, on_alarm);
    alarm(strcmp(mode, "threads") == 0 ? 240 : strcmp(mode, "first") == 0 ? 30 : 120);
    if (strcmp(mode, "threads") == 0 || strcmp(mode, "progress") == 0)
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Errors are returned, on the communicators used and on those MPI
     * raises errors on where no communicator is at hand. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    if ((strcmp(mode, "threads") == 0 || strcmp(mode, "progress") == 0) && provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) printf("skip: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        MPI_Finalize();
        return 77;
    }
    if (strcmp(mode, "threads") == 0) snprintf(thr, sizeof thr, " threads=%d calls=%d", nthreads, calls);
    for (int v = 1; v <= 4; v++) sparcml_type_create(v, &types[v]);
    if (strcmp(mode, "free") == 0) return run_free(); /* finalizes on its own */
    if (strcmp(mode, "many") == 0) run_many();
    else if (strcmp(mode, "bad") == 0) run_bad();
    else if (strcmp(mode, "progress") == 0) run_progress(strcmp(argv[2], "done") == 0);
    else if (strcmp(mode, "first") == 0) run_first();
    else run_threads(nthreads);
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &checked, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("nonblocking %s: P=%d%s checked=%d failures=%d\n", mode, size, thr, checked, failures);
    for (int v = 1; v <= 4; v++) MPI_Type_free(&types[v]);
    MPI_Finalize();
    return failures ? 1 : 0;
}
