/* nomem.c -- one rank runs out of memory in a call.
 *
 * Under tests/support/failalloc_preload.c, the last rank arms a failure of
 * its next large allocation right before a transparent-mode sum of a
 * mostly-zero buffer (the library reserves its scratch there: a dense-size
 * result buffer).  Every rank must return MPI_ERR_NO_MEM from that call --
 * none may hang (the script's timeout) or succeed alone -- and the next
 * call must give the right sum, the same bits on every rank.  argv[1]
 * picks the call: blocking, wait (MPI_Iallreduce + MPI_Wait) or
 * persistent.
 *
 * With argv[2] "room", the input stream's pool instead (the scan gathers
 * into a room reserved before the count is known; a count beyond it
 * reserves the pool grown to twice the count, else the stream's bytes):
 * on the last rank, the room itself fails, so that rank counts alone and
 * the call succeeds; the grown pool fails and the stream's bytes do not,
 * so the call succeeds; both fail, so every rank gets MPI_ERR_NO_MEM, and
 * the pool keeps what it held, so the next call allocates nothing.  Every
 * call that succeeds gives the right sum on every rank. */
#include <string.h>

#include "refsum.h"
#if MPI_VERSION < 4
#include <mpi-ext.h> /* Open MPI 4.1: MPIX_Allreduce_init */
#endif

enum { N = 1 << 20 };

static int rank, size, failures;

static void expect(int cond, const char *what)
{
    if (cond) return;
    failures++;
    fprintf(stderr, "FAIL rank %d: %s\n", rank, what);
}

static int call_as(const char *how, const void *send, void *recv, int count, MPI_Datatype type)
{
    MPI_Request req;
    int rc;
    if (strcmp(how, "blocking") == 0) return MPI_Allreduce(send, recv, count, type, MPI_SUM, MPI_COMM_WORLD);
    if (strcmp(how, "wait") == 0) {
        rc = MPI_Iallreduce(send, recv, count, type, MPI_SUM, MPI_COMM_WORLD, &req);
        return rc == MPI_SUCCESS ? MPI_Wait(&req, MPI_STATUS_IGNORE) : rc;
    }
#if MPI_VERSION >= 4
    rc = MPI_Allreduce_init(send, recv, count, type, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
#else
    rc = MPIX_Allreduce_init(send, recv, count, type, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
#endif
    if (rc == MPI_SUCCESS) rc = MPI_Start(&req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Request_free(&req);
    return rc;
}

static int call(const char *how, const float *send, float *recv)
{
    return call_as(how, send, recv, N, MPI_FLOAT);
}

/* Rank r holds r + 1 at every index i with i % every == (every == 1000 ? r
 * : 0): at 1000, each rank at its own indices; else all ranks at the same
 * ones, so the union is as dense as each input. */
static void fill(float *send, int every)
{
    memset(send, 0, N * sizeof *send);
    for (int i = every == 1000 ? rank : 0; i < N; i += every) send[i] = (float)(rank + 1);
}

static int right(const float *recv, int every)
{
    int ok = 1;
    float all = (float)size * (float)(size + 1) / 2;
    for (int i = 0; i < N; i++)
        if (every == 1000) ok &= recv[i] == (i % 1000 < size ? (float)(i % 1000 + 1) : 0.0f);
        else ok &= recv[i] == (i % every == 0 ? all : 0.0f);
    return ok && t_same_everywhere(t_hash(recv, N * sizeof *recv), MPI_COMM_WORLD);
}

/* One call with `fails` allocations of min_bytes to max_bytes (NULL: no
 * limit) failing on the last rank: its MPI error class.  `injected`: the
 * call must have met every armed failure, else none of them. */
static int armed_call(const char *how, const float *send, float *recv, int fails, const char *min_bytes,
                      const char *max_bytes, int injected)
{
    char arm[8];
    int rc, cls = MPI_SUCCESS;
    snprintf(arm, sizeof arm, "%d", fails);
    if (rank == size - 1 && fails > 0) {
        setenv("FAILALLOC_ARM", arm, 1);
        setenv("FAILALLOC_MIN_BYTES", min_bytes, 1);
        if (max_bytes) setenv("FAILALLOC_MAX_BYTES", max_bytes, 1);
    }
    memset(recv, 0, N * sizeof *recv);
    rc = call(how, send, recv);
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    if (injected)
        expect(getenv("FAILALLOC_ARM") == NULL, "an allocation meant to fail did not (the injection did not take place)");
    else if (rank == size - 1 && fails > 0)
        expect(getenv("FAILALLOC_ARM") && strcmp(getenv("FAILALLOC_ARM"), arm) == 0,
               "a call meant to allocate nothing did");
    unsetenv("FAILALLOC_ARM");
    unsetenv("FAILALLOC_MIN_BYTES");
    unsetenv("FAILALLOC_MAX_BYTES");
    return cls;
}

/* The input pool's routes (argv[2] "room"), N floats: dense 4 MiB, the
 * room at least 256 KiB; every 5th index gives a 1.6 MiB stream, every
 * 4th 2 MiB, both pools grown to about 4 MiB.  The first call's room is
 * the only allocation of 64 KiB to 1 MiB (the result's pool is 4 MiB). */
static void room(const char *how, float *send, float *recv)
{
    int cls, ok;
    fill(send, 1000);
    cls = armed_call(how, send, recv, 1, "65536", "1048576", 1);
    ok = right(recv, 1000);
    expect(cls == MPI_SUCCESS && ok, "room: without the room the call failed or is wrong");
    fill(send, 5);
    cls = armed_call(how, send, recv, 1, "1048576", NULL, 1);
    ok = right(recv, 5);
    expect(cls == MPI_SUCCESS && ok, "room: without the grown pool the call failed or is wrong");
    fill(send, 4);
    cls = armed_call(how, send, recv, 2, "1048576", NULL, 1);
    expect(cls == MPI_ERR_NO_MEM, "room: without the stream's bytes the call did not fail with MPI_ERR_NO_MEM");
    fill(send, 1000);
    cls = armed_call(how, send, recv, 1, "65536", NULL, 0);
    ok = right(recv, 1000);
    expect(cls == MPI_SUCCESS && ok, "room: after a pool could not grow the call failed or is wrong");
    fill(send, 4);
    cls = armed_call(how, send, recv, 0, NULL, NULL, 0);
    ok = right(recv, 4);
    expect(cls == MPI_SUCCESS && ok, "room: the last call failed or is wrong");
}

/* Tagged calls (argv[2] "tagged"): the algorithm's scratch is reserved
 * once the problem is agreed.  Streams of TAGGED_DIM floats, each rank's
 * entries at density d (refsum.h; at d = 0.04 a stream holds 1.3 MiB).
 * In order: the first call fails (nothing is reserved yet); at d = 0.02
 * and 0.03 calls succeed and are right; at 0.05 the scratch must grow, and
 * the call fails; at 0.16 too; the same again succeeds.
 *
 * Piggybacked (argv[3] "piggybacked": recursive doubling, not pipelined,
 * or a split algorithm, chosen by the previous call; the split algorithms'
 * data rides on their reduce-scatter): a call that runs after the agreement
 * reserves, beside its scratch, what the next call may need piggybacked
 * (inputs of up to twice its own), so at 0.03 the call allocates nothing
 * (two armed failures, neither met) and succeeds; at 0.05 it cannot
 * piggyback on what is reserved, reserves after the agreement and fails;
 * at 0.02 it succeeds again; then the last rank's input (0.16) is beyond
 * the reservation: it declines, receives the others' streams on what is
 * reserved, and the reservation after the agreement fails on every rank
 * together; the same again succeeds. */
enum { TAGGED_DIM = 1 << 22 };

typedef struct tagged_step {
    const char *what;
    double density, last_density; /* last_density: the last rank's (0: density) */
    int arm;                      /* failures armed on the last rank */
    int injected;                 /* ... and whether the call must meet one */
    int must_succeed;
} tagged_step;

static void tagged_call(const char *how, const tagged_step *st, uint64_t seed, MPI_Datatype type, void *send,
                        void *recv, void *scratch)
{
    MPI_Count count = sparcml_capacity(TAGGED_DIM, SPARCML_FLOAT);
    int last = rank == size - 1, rc, cls = MPI_SUCCESS;
    rs_problem p = {seed, TAGGED_DIM, SPARCML_FLOAT, last && st->last_density ? st->last_density : st->density};
    char arm[8];
    snprintf(arm, sizeof arm, "%d", st->arm);
    expect(rs_build(&p, rank, send, count, scratch) == SPARCML_OK, "tagged: could not build the input");
    if (last && st->arm) setenv("FAILALLOC_ARM", arm, 1);
    rc = call_as(how, send, recv, (int)count, type);
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    if (last && st->arm) {
        const char *left = getenv("FAILALLOC_ARM");
        expect(st->injected == (!left || strcmp(left, arm) != 0),
               st->injected ? "tagged: the injection did not take place" : "tagged: a call meant to allocate nothing did");
    }
    unsetenv("FAILALLOC_ARM");
    if (!st->must_succeed) {
        if (cls != MPI_ERR_NO_MEM) fprintf(stderr, "FAIL rank %d: tagged %s: class %d, not MPI_ERR_NO_MEM\n", rank, st->what, cls);
        failures += cls != MPI_ERR_NO_MEM;
        return;
    }
    /* rs_check leaves the result's dense values in scratch: the same bits
     * on every rank */
    p.density = st->density;
    if (rc != MPI_SUCCESS || rs_check(&p, size, recv, scratch) != 0
        || !t_same_everywhere(t_hash(scratch, (size_t)TAGGED_DIM * sizeof(float)), MPI_COMM_WORLD)) {
        fprintf(stderr, "FAIL rank %d: tagged %s: rc %d or a wrong sum\n", rank, st->what, rc);
        failures++;
    }
}

static void tagged(const char *how, int piggybacked, void **send, void **recv)
{
    static const tagged_step plain[] = {
        {.what = "first call", .density = 0.04, .arm = 1, .injected = 1},
        {.what = "second call", .density = 0.02, .must_succeed = 1},
        {.what = "third call", .density = 0.03, .must_succeed = 1},
        {.what = "grown scratch", .density = 0.05, .arm = 1, .injected = 1},
        {.what = "beyond the scratch", .density = 0.16, .arm = 1, .injected = 1},
        {.what = "the same again", .density = 0.16, .must_succeed = 1},
    };
    static const tagged_step ahead[] = {
        {.what = "first call", .density = 0.04, .arm = 1, .injected = 1},
        {.what = "second call", .density = 0.02, .must_succeed = 1},
        {.what = "piggybacked on the reservation", .density = 0.03, .arm = 2, .must_succeed = 1},
        {.what = "grown scratch", .density = 0.05, .arm = 1, .injected = 1},
        {.what = "after a failure", .density = 0.02, .must_succeed = 1},
        {.what = "a rank beyond the reservation", .density = 0.02, .last_density = 0.16, .arm = 1, .injected = 1},
        {.what = "the same again", .density = 0.16, .must_succeed = 1},
    };
    const tagged_step *steps = piggybacked ? ahead : plain;
    int n = piggybacked ? (int)(sizeof ahead / sizeof ahead[0]) : (int)(sizeof plain / sizeof plain[0]);
    MPI_Count count = sparcml_capacity(TAGGED_DIM, SPARCML_FLOAT);
    void *scratch = t_alloc_words((MPI_Count)TAGGED_DIM * 2);
    MPI_Datatype t;
    sparcml_type_create(SPARCML_FLOAT, &t);
    free(*send);
    free(*recv);
    *send = t_alloc_words(count);
    *recv = t_alloc_words(count);
    for (int i = 0; i < n; i++) tagged_call(how, &steps[i], (uint64_t)i + 1, t, *send, *recv, scratch);
    MPI_Type_free(&t);
    free(scratch);
}

/* The failures of every rank, reported by rank 0; the exit status. */
static int conclude(const char *how, const char *what, float *send, float *recv)
{
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("nomem %s%s: P=%d failures=%d\n", how, what, size, failures);
    free(send);
    free(recv);
    MPI_Finalize();
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "blocking";
    float *send, *recv;
    int rc, cls = MPI_SUCCESS, ok = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    send = calloc(N, sizeof *send);
    recv = calloc(N, sizeof *recv);
    if (argc > 2 && strcmp(argv[2], "room") == 0) {
        room(how, send, recv);
        return conclude(how, " room", send, recv);
    }
    if (argc > 2 && strcmp(argv[2], "tagged") == 0) {
        tagged(how, argc > 3 && strcmp(argv[3], "piggybacked") == 0, (void **)&send, (void **)&recv);
        return conclude(how, " tagged", send, recv);
    }
    /* Rank r holds r + 1 at every 1000th index from r: the sum at index i
     * is the sum of r + 1 over the ranks r with i % 1000 == r. */
    for (int i = rank; i < N; i += 1000) send[i] = (float)(rank + 1);
    if (rank == size - 1) setenv("FAILALLOC_ARM", "1", 1);
    rc = call(how, send, recv);
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    expect(rc != MPI_SUCCESS && cls == MPI_ERR_NO_MEM, "the call with one rank out of memory did not fail "
                                                       "with MPI_ERR_NO_MEM");
    expect(getenv("FAILALLOC_ARM") == NULL, "no allocation failed (the injection did not take place)");
    unsetenv("FAILALLOC_ARM");
    memset(recv, 0, N * sizeof *recv);
    rc = call(how, send, recv);
    expect(rc == MPI_SUCCESS, "the next call failed");
    for (int i = 0; i < N && rc == MPI_SUCCESS; i++)
        ok &= recv[i] == (i % 1000 < size ? (float)(i % 1000 + 1) : 0.0f);
    expect(ok, "the next call's sum is wrong");
    expect(t_same_everywhere(t_hash(recv, N * sizeof *recv), MPI_COMM_WORLD), "the sum differs between ranks");
    return conclude(how, "", send, recv);
}
