/* transparent.c -- SPARCML_TRANSPARENT on an unmodified program: plain
 * MPI_Allreduce calls on dense buffers of predefined types.
 *
 *   transparent sums            every qualifying type, densities 0 .. 1,
 *                               identical / disjoint / skewed nonzeros, in
 *                               place and not, on MPI_COMM_WORLD and a split
 *                               communicator, through MPI_Allreduce and
 *                               MPI_Allreduce_c; NaN, Inf and signed zeros
 *                               (with SPARCML_QSGD_BITS set: within QSGD's
 *                               error bound, finite values only)
 *   transparent nonqualifying   MPI_MAX, MPI_INT8_T, a derived float type,
 *                               a count below the threshold and an
 *                               inter-communicator: bitwise the vendor's
 *                               result (PMPI_Allreduce on the same input)
 *   transparent count_mismatch  rank 0 passes another count: MPI_ERR_COUNT
 *                               on every rank (after three calls of the
 *                               common count, so that the other ranks
 *                               piggyback their data on the agreement)
 *   transparent sequence        float and double calls of one count whose
 *                               agreement modes the script checks against
 *                               the piggybacking rule (rank 0 prints
 *                               "call I" after each): densities 1e-3 and
 *                               5e-3 (disjoint nonzeros), in place and not,
 *                               and one dense call, which makes the next 15
 *                               go to the vendor
 *   transparent vendor_timed    20 calls of one dense float buffer (rank 0
 *                               prints "call I" after each), for the script
 *                               to check what the vendor's timed calls
 *                               make the selector choose
 *
 * argv[2] picks the call (every case of the mode makes it): blocking
 * (default), wait (MPI_Iallreduce + MPI_Wait), test (MPI_Iallreduce, then
 * MPI_Test until done), persistent (MPI_Allreduce_init or Open MPI's
 * MPIX_Allreduce_init, two MPI_Start + MPI_Wait rounds on the same
 * buffers, then MPI_Request_free).
 *
 * References are each rank's own input summed by the vendor
 * (PMPI_Allreduce in double, exact for these values): the results exact
 * for integers, within P eps sum|x| for floating point; every result is
 * compared across ranks bitwise.  The
 * scripts set SPARCML_TRANSPARENT=1 and SPARCML_TRANSPARENT_MIN_BYTES=4096. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "testlib.h"
#if MPI_VERSION < 4
#include <mpi-ext.h> /* Open MPI 4.1: MPIX_Allreduce_init */
#endif

enum { N = 20000, SMALL = 100 };
enum { PAT_IDENTICAL, PAT_DISJOINT, PAT_SKEWED, PAT_COUNT };
static const double densities[] = {0, 1e-4, 1e-2, 0.3, 1};
static int failures, cases;
static enum { CALL_BLOCKING, CALL_WAIT, CALL_TEST, CALL_PERSISTENT } call_mode;

/* The allreduce, made as argv[2] asks. */
static int tcall(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    MPI_Request req;
    int rc = MPI_SUCCESS, flag = 0;
    switch (call_mode) {
    case CALL_BLOCKING: return MPI_Allreduce(send, recv, count, type, op, comm);
    case CALL_WAIT:
        rc = MPI_Iallreduce(send, recv, count, type, op, comm, &req);
        return rc == MPI_SUCCESS ? MPI_Wait(&req, MPI_STATUS_IGNORE) : rc;
    case CALL_TEST:
        rc = MPI_Iallreduce(send, recv, count, type, op, comm, &req);
        while (rc == MPI_SUCCESS && !flag) rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        return rc;
    case CALL_PERSISTENT: {
        /* Twice on the same buffers: the second start must give the same
         * sum (in place, recv is reset to the input first). */
        size_t bytes = 0;
        char *saved = NULL;
        int size;
        MPI_Type_size(type, &size);
        bytes = (size_t)count * (size_t)size;
        if (send == MPI_IN_PLACE) {
            saved = malloc(bytes);
            memcpy(saved, recv, bytes);
        }
#if MPI_VERSION >= 4
        rc = MPI_Allreduce_init(send, recv, count, type, op, comm, MPI_INFO_NULL, &req);
#else
        rc = MPIX_Allreduce_init(send, recv, count, type, op, comm, MPI_INFO_NULL, &req);
#endif
        for (int round = 0; round < 2 && rc == MPI_SUCCESS; round++) {
            if (round && saved) memcpy(recv, saved, bytes);
            rc = MPI_Start(&req);
            if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        if (rc == MPI_SUCCESS) rc = MPI_Request_free(&req);
        free(saved);
        return rc;
    }
    }
    return MPI_ERR_OTHER;
}

typedef struct ctype {
    MPI_Datatype type;
    const char *name;
    int is_float;
    size_t size;
} ctype;

static double uniform(uint64_t seed, uint64_t i) { return (double)(t_rand(seed, i) >> 11) / 9007199254740992.0; }

static int holds(int pattern, double d, uint64_t seed, int r, int P, uint64_t i)
{
    switch (pattern) {
    case PAT_IDENTICAL: return uniform(seed ^ 1, i) < d;
    case PAT_DISJOINT: return (int)(i % (uint64_t)P) == r && uniform(seed ^ 2, (uint64_t)r * N + i) < d * P;
    default:
        if (r == 0) return 0;
        if (r == 1 % P) return d > 0;
        return uniform(seed ^ 3, (uint64_t)r * N + i) < d;
    }
}

/* Rank r's value at i as a double (nonzero, exactly representable in the type). */
static double value(const ctype *t, uint64_t seed, int r, uint64_t i)
{
    uint64_t x = t_rand(seed ^ 4, (uint64_t)r * N + i);
    if (!t->is_float) return (double)((int64_t)(x % 2000) - 999 + (x % 2000 >= 999));
    double v = (0.5 + (double)(x >> 40) / 16777216.0 * 1.5) * ((x & 1) ? -1 : 1);
    return t->size == 4 ? (double)(float)v : v;
}

static void put(const ctype *t, void *buf, uint64_t i, double v)
{
    if (t->is_float && t->size == 4) ((float *)buf)[i] = (float)v;
    else if (t->is_float) ((double *)buf)[i] = v;
    else if (t->size == 4) ((int32_t *)buf)[i] = (int32_t)v;
    else ((int64_t *)buf)[i] = (int64_t)v;
}

static double get(const ctype *t, const void *buf, uint64_t i)
{
    if (t->is_float && t->size == 4) return ((const float *)buf)[i];
    if (t->is_float) return ((const double *)buf)[i];
    if (t->size == 4) return ((const int32_t *)buf)[i];
    return (double)((const int64_t *)buf)[i];
}

static void fail(const char *what, const ctype *t, int pattern, double d, int inplace, MPI_Comm comm)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    fprintf(stderr, "FAIL rank %d P=%d %s pattern=%d d=%g inplace=%d: %s\n", rank, P, t->name, pattern, d,
            inplace, what);
    failures++;
}

/* With SPARCML_QSGD_BITS set, floating-point sums that ran sparse are
 * quantized: the error bound of tests/mpi/sparse_allreduce.c, from the
 * largest sum of magnitudes G: (P + 2 ceil(log2 P) + 1) G / s. */
static int qsgd_levels_s;

static double qsgd_tolerance(const ctype *t, const double *mag, int P)
{
    double G = 0;
    int levels = 0;
    if (!qsgd_levels_s || !t->is_float) return 0;
    for (uint64_t i = 0; i < N; i++) G = fmax(G, mag[i]);
    while ((1 << levels) < P) levels++;
    return (P + 2 * levels + 1) * G / qsgd_levels_s;
}

/* The reference: sum_r x_ri (the first N) and sum_r |x_ri| (the next N),
 * each rank's own values summed in double by the vendor's PMPI_Allreduce
 * (never interposed), both in one call.  Exact in any order: the values are
 * integers below 1000 or have at most 26 significant bits, so sums of them
 * over any P here fit a double's 53.  Static, every element written by each
 * case: under ASan each large allocation is a fresh mapping, faulted in and
 * later unmapped with a TLB flush (the buffers handed to MPI_Allreduce stay
 * allocations of each case). */
static double reference[2 * N];

static void reference_sum(MPI_Comm comm)
{
    if (PMPI_Allreduce(MPI_IN_PLACE, reference, 2 * N, MPI_DOUBLE, MPI_SUM, comm) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 2);
}

static void run_case(const ctype *t, int pattern, double d, int inplace, uint64_t seed, MPI_Comm comm)
{
    int rank, P, rc;
    double qtol, *ref = reference, *mag = reference + N;
    char *send = calloc(N, 8), *recv = calloc(N, 8);
    if (!send || !recv) MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    for (uint64_t i = 0; i < N; i++) {
        double v = holds(pattern, d, seed, rank, P, i) ? value(t, seed, rank, i) : 0;
        put(t, inplace ? recv : send, i, v);
        ref[i] = v;
        mag[i] = fabs(v);
    }
    reference_sum(comm);
    if (seed % 2 && call_mode == CALL_BLOCKING) /* the large-count entry point qualifies too */
        rc = t_allreduce_c(inplace ? MPI_IN_PLACE : send, recv, (MPI_Count)N, t->type, MPI_SUM, comm);
    else
        rc = tcall(inplace ? MPI_IN_PLACE : send, recv, N, t->type, MPI_SUM, comm);
    cases++;
    qtol = qsgd_tolerance(t, mag, P);
    if (rc != MPI_SUCCESS) fail("MPI_Allreduce returned an error", t, pattern, d, inplace, comm);
    for (uint64_t i = 0; i < N && rc == MPI_SUCCESS; i++) {
        double got = get(t, recv, i);
        if (t->is_float ? !(fabs(got - ref[i]) <= P * (t->size == 4 ? FLT_EPSILON : DBL_EPSILON) * mag[i] + qtol)
                        : got != ref[i]) {
            char msg[96];
            snprintf(msg, sizeof msg, "index %llu: got %.9g, expected %.9g", (unsigned long long)i, got, ref[i]);
            fail(msg, t, pattern, d, inplace, comm);
            break;
        }
    }
    if (!t_same_everywhere(t_hash(recv, N * t->size), comm))
        fail("result differs between ranks", t, pattern, d, inplace, comm);
    free(send);
    free(recv);
}

/* NaN and Inf are nonzeros and add as IEEE values; a zero of either sign
 * contributes nothing, so where every rank holds -0.0 the sparse route
 * gives +0.0 (the vendor's route, forced by SPARCML_ALGORITHM=dense, -0.0). */
static void run_special(const ctype *t, MPI_Comm comm)
{
    int rank, P;
    const char *alg = getenv("SPARCML_ALGORITHM");
    int vendor_route = alg && strcmp(alg, "dense") == 0, sparse_route = alg && !vendor_route
                                                                        && strcmp(alg, "auto") != 0;
    char *buf = calloc(N, 8);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    for (uint64_t i = 0; i < N; i++) put(t, buf, i, -0.0);
    put(t, buf, 5, rank == 0 ? INFINITY : 1.0);               /* +Inf */
    put(t, buf, 7, rank == 0 ? INFINITY : rank == 1 ? -INFINITY : 0); /* NaN when P > 1 */
    put(t, buf, 9, rank == P - 1 ? NAN : 2.0);                 /* NaN */
    tcall(MPI_IN_PLACE, buf, N, t->type, MPI_SUM, comm);
    cases++;
    if (!(isinf(get(t, buf, 5)) && get(t, buf, 5) > 0)) fail("Inf + finite is not +Inf", t, -1, 0, 1, comm);
    if (P > 1 && !isnan(get(t, buf, 7))) fail("+Inf + -Inf is not NaN", t, -1, 0, 1, comm);
    if (!isnan(get(t, buf, 9))) fail("NaN + finite is not NaN", t, -1, 0, 1, comm);
    if (get(t, buf, 100) != 0) fail("zeros do not sum to zero", t, -1, 0, 1, comm);
    if (sparse_route && signbit(get(t, buf, 100))) fail("sparse route: -0.0 everywhere is not +0.0", t, -1, 0, 1, comm);
    if (vendor_route && !signbit(get(t, buf, 100))) fail("vendor route: -0.0 everywhere is not -0.0", t, -1, 0, 1, comm);
    if (!t_same_everywhere(t_hash(buf, N * t->size), comm)) fail("special values differ between ranks", t, -1, 0, 1, comm);
    free(buf);
}

static void sums(MPI_Comm comm, uint64_t seed)
{
    const ctype types[] = {
        {MPI_FLOAT, "MPI_FLOAT", 1, 4}, {MPI_DOUBLE, "MPI_DOUBLE", 1, 8}, {MPI_INT, "MPI_INT", 0, 4},
        {MPI_INT32_T, "MPI_INT32_T", 0, 4}, {MPI_INT64_T, "MPI_INT64_T", 0, 8}, {MPI_LONG, "MPI_LONG", 0, 8},
    };
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        for (int d = 0; d < 5; d++)
            for (int p = 0; p < PAT_COUNT; p++)
                for (int inplace = 0; inplace < 2; inplace++)
                    run_case(&types[t], p, densities[d], inplace, seed++, comm);
        if (types[t].is_float && !qsgd_levels_s) run_special(&types[t], comm); /* QSGD: finite values only */
    }
}

/* The vendor's answer for the same call, bypassing the shim: the same
 * error class, or the same bits. */
static int same_as_vendor(const void *in, size_t bytes, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    char *a = malloc(bytes), *b = malloc(bytes);
    int same, rca, rcb, ca = MPI_SUCCESS, cb = MPI_SUCCESS;
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    rca = tcall(in, a, count, type, op, comm);
    rcb = PMPI_Allreduce(in, b, count, type, op, comm);
    if (rca != MPI_SUCCESS) MPI_Error_class(rca, &ca);
    if (rcb != MPI_SUCCESS) MPI_Error_class(rcb, &cb);
    same = ca == cb && (cb != MPI_SUCCESS || memcmp(a, b, bytes) == 0);
    free(a);
    free(b);
    cases++;
    return same;
}

static void nonqualifying(void)
{
    int rank, P;
    float *f = malloc(N * sizeof *f);
    int8_t *b = malloc(N);
    MPI_Datatype contig;
    MPI_Comm half, inter;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    /* Mostly zeros, with values whose sum depends on the order of addition. */
    for (int i = 0; i < N; i++) f[i] = i % 97 == 0 ? (float)(1e8 * (rank % 2 ? -1 : 1) + rank + i * 1e-3) : 0;
    for (int i = 0; i < N; i++) b[i] = (int8_t)(i % 89 == 0 ? rank + 1 : 0);
    if (!same_as_vendor(f, N * 4, N, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD)) failures++, fprintf(stderr, "FAIL MPI_MAX\n");
    if (!same_as_vendor(b, N, N, MPI_INT8_T, MPI_SUM, MPI_COMM_WORLD)) failures++, fprintf(stderr, "FAIL MPI_INT8_T\n");
    MPI_Type_contiguous(1, MPI_FLOAT, &contig);
    MPI_Type_commit(&contig);
    /* MPICH refuses MPI_SUM on a derived type: the same error, then. */
    if (!same_as_vendor(f, N * 4, N, contig, MPI_SUM, MPI_COMM_WORLD)) failures++, fprintf(stderr, "FAIL derived\n");
    MPI_Type_free(&contig);
    if (!same_as_vendor(f, SMALL * 4, SMALL, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD))
        failures++, fprintf(stderr, "FAIL below the threshold\n");
    if (P >= 2) {
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 77, &inter);
        if (!same_as_vendor(f, N * 4, N, MPI_FLOAT, MPI_SUM, inter))
            failures++, fprintf(stderr, "FAIL inter-communicator\n");
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    free(f);
    free(b);
}

static const ctype float_type = {MPI_FLOAT, "MPI_FLOAT", 1, 4}, double_type = {MPI_DOUBLE, "MPI_DOUBLE", 1, 8};

static void count_mismatch(void)
{
    int rank, rc, cls = MPI_SUCCESS;
    float *f = calloc(N + 8, sizeof *f);
    for (uint64_t seed = 1; seed <= 3; seed++) run_case(&float_type, PAT_DISJOINT, 1e-3, 0, seed, MPI_COMM_WORLD);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    f[3] = 1;
    rc = tcall(MPI_IN_PLACE, f, rank == 0 ? N : N + 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    cases++;
    if (cls != MPI_ERR_COUNT) {
        fprintf(stderr, "FAIL rank %d: count differing across ranks gave error class %d, not MPI_ERR_COUNT\n",
                rank, cls);
        failures++;
    }
    free(f);
}

static void sequence(void)
{
    enum { CALLS = 25 };
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i <= CALLS; i++) {
        double d = i == 4 || i == 5 ? 5e-3 : i == 6 ? 1 : 1e-3;
        run_case(i == 24 ? &double_type : &float_type, PAT_DISJOINT, d, i == 3 || i == 25, 7000 + (uint64_t)i,
                 MPI_COMM_WORLD);
        if (rank == 0) {
            printf("call %d\n", i);
            fflush(stdout);
        }
    }
}

static void vendor_timed(void)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i <= 20; i++) {
        run_case(&float_type, PAT_IDENTICAL, 1, 0, 9000 + (uint64_t)i, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("call %d\n", i);
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "sums", *qbits = getenv("SPARCML_QSGD_BITS");
    const char *how = argc > 2 ? argv[2] : "blocking";
    int rank, P, all_failures;
    if (qbits && atoi(qbits) > 0) qsgd_levels_s = (1 << (atoi(qbits) - 1)) - 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (strcmp(how, "wait") == 0) call_mode = CALL_WAIT;
    else if (strcmp(how, "test") == 0) call_mode = CALL_TEST;
    else if (strcmp(how, "persistent") == 0) call_mode = CALL_PERSISTENT;
    else if (strcmp(how, "blocking") != 0) mode = "?";
    if (strcmp(mode, "sums") == 0) {
        MPI_Comm sub;
        sums(MPI_COMM_WORLD, 1000);
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, P - rank, &sub);
        sums(sub, 5000 + (uint64_t)(rank % 2));
        MPI_Comm_free(&sub);
    } else if (strcmp(mode, "nonqualifying") == 0) {
        nonqualifying();
    } else if (strcmp(mode, "count_mismatch") == 0) {
        count_mismatch();
    } else if (strcmp(mode, "sequence") == 0) {
        sequence();
    } else if (strcmp(mode, "vendor_timed") == 0) {
        vendor_timed();
    } else {
        fprintf(stderr, "usage: transparent [sums|nonqualifying|count_mismatch|sequence|vendor_timed] "
                        "[blocking|wait|test|persistent]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    PMPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("transparent %s %s: P=%d cases=%d failures=%d\n", mode, how, P, cases, all_failures);
    MPI_Finalize();
    return all_failures != 0;
}
