/* compress.c -- SPARCML_COMPRESS, checked against a model of it that this
 * program computes on its own.
 *
 * Every rank can regenerate every rank's gradient (a counter-based
 * generator), so every rank runs the whole reference: for each rank r its
 * residual eps_r (zero at first), acc_r = eps_r + g_r, the contribution
 * S_r (topk: the k nonzeros of largest |acc_r|, lower index first on
 * ties, found by a selection; cltk: acc_r at the k indices of largest
 * magnitude in the leader's acc, zeros included, the leader being rank
 * t mod P at the buffer's t-th call), the expected
 * sum and eps_r = acc_r - S_r.  Gradients are small integers, so every sum
 * is exact in floating point and the comparisons are bitwise.  The model
 * also follows the rhythm rule (model_rhythm): a buffer's first residual
 * waits aside until its third call confirms the gap between its calls.
 * A call the library routes to the vendor has S_r = acc_r: its result is
 * the exact sum of every rank's acc and every residual becomes zero.  Each
 * call's route is told by its result (the selections' sum differs from
 * the exact one wherever k is below the nonzeros) and must be the one
 * COMPRESS_ROUTE says (selected, vendor; any: either); rank 0 prints
 * "routes selected=S vendor=V spent=C", C counting the vendor calls that
 * summed a residual some rank held.
 *
 *   compress model [blocking|wait|test|persistent] [float|double] [N] [STEPS]
 *     two buffers of N values (default 16384), one reduced in place, one
 *     not, take turns over STEPS steps (default 8).  Checks every call: the result equals the
 *     model's sum and is bitwise the same on every rank; the residual the
 *     library reports (sparcml_compress_residual) equals the model's.
 *     With SPARCML_QSGD_BITS the values are random, so instead: the
 *     result's support lies within the model's selections, the residual
 *     equals acc outside them, and over all calls sum of results + sum of
 *     the final residuals = sum of the inputs (within rounding); the model
 *     goes on from the residuals the library reports.  With
 *     SPARCML_COMPRESS_FEEDBACK=0 the model keeps no residual and the
 *     library reports none.
 *   compress temporaries: two tensors take turns at one buffer with a third
 *     between them; the model holds and drops residuals where sparcml(7)
 *     says the library does (model_rhythm) and must match every call.
 *   compress nonqualifying: integer, MPI_MAX, small and derived-type calls
 *     give the exact sums (small integers: any order gives the same bits).
 *   compress fresh_comm: a communicator freed and made again starts with
 *     no residual.
 *   compress mismatch: run with settings that differ between ranks: the
 *     call fails on every rank with MPI_ERR_OTHER, and the next call too.
 *   compress capped: run where some rank's SPARCML_COMPRESS_MAX_BYTES
 *     leaves no room for the buffer: every call is the exact sum on every
 *     rank, and no residual changes.
 * Prints "failures=N" on rank 0. */
#include <dlfcn.h> /* RTLD_DEFAULT: the build defines _GNU_SOURCE */
#include <math.h>
#include <string.h>

#include "testlib.h"
#if MPI_VERSION < 4
#include <mpi-ext.h> /* Open MPI 4.1: MPIX_Allreduce_init */
#endif

enum { BUFFERS = 2, SMALL = 512 };
static uint64_t N = 16384;
static int STEPS = 8;
static int failures, rank, P;
static sparcml_compress_residual_fn *residual_of;

static struct {
    int cltk, feedback, qsgd;
    int single; /* float buffers: the model rounds acc as the library does */
    double density;
    uint64_t k;
    enum { ROUTE_SELECTED, ROUTE_VENDOR, ROUTE_ANY } route; /* COMPRESS_ROUTE */
} cfg;
static int routes[2], spent; /* calls by route (selected, vendor); vendor calls that summed a residual */

static enum { CALL_BLOCKING, CALL_WAIT, CALL_TEST, CALL_PERSISTENT } call_mode;

#define FAIL(...) do { failures++; if (failures < 10) { fprintf(stderr, "rank %d: ", rank); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static void read_settings(void)
{
    const char *mode = getenv("SPARCML_COMPRESS"), *d = getenv("SPARCML_COMPRESS_DENSITY");
    const char *fb = getenv("SPARCML_COMPRESS_FEEDBACK"), *q = getenv("SPARCML_QSGD_BITS");
    const char *route = getenv("COMPRESS_ROUTE");
    cfg.route = !route || strcmp(route, "selected") == 0 ? ROUTE_SELECTED
                : strcmp(route, "vendor") == 0         ? ROUTE_VENDOR : ROUTE_ANY;
    cfg.cltk = mode && strcmp(mode, "cltk") == 0;
    cfg.density = d ? atof(d) : 0.01;
    cfg.feedback = !fb || strcmp(fb, "0") != 0;
    cfg.qsgd = q && strcmp(q, "0") != 0;
    cfg.k = (uint64_t)ceil(cfg.density * N);
    if (cfg.k < 1) cfg.k = 1;
    if (cfg.k > N) cfg.k = N;
}

/* n zeroed values of `size` bytes. */
static void *values(uint64_t n, size_t size)
{
    void *v = calloc(n, size);
    if (!v) MPI_Abort(MPI_COMM_WORLD, 2);
    return v;
}

static double *zeros(void) { return values(N, sizeof(double)); }

/* Rank r's gradient at step t for buffer b: an integer in [-7, 7], zero
 * about half the time. */
static double grad(int b, int t, int r, uint64_t i)
{
    uint64_t x = t_rand(((uint64_t)b << 40) ^ ((uint64_t)t << 20) ^ (uint64_t)r, i);
    return (x & 1) ? 0.0 : (double)((int)((x >> 8) % 15) - 7);
}

static double get(const void *buf, MPI_Datatype type, uint64_t i)
{
    return type == MPI_FLOAT ? (double)((const float *)buf)[i] : ((const double *)buf)[i];
}

static void put(void *buf, MPI_Datatype type, uint64_t i, double v)
{
    if (type == MPI_FLOAT) ((float *)buf)[i] = (float)v;
    else ((double *)buf)[i] = v;
}

/* --- the reference ------------------------------------------------------- */

typedef struct { double mag; uint64_t i; } entry;

/* The order of the selection: larger magnitude first, then lower index (a
 * strict total order: indices are distinct). */
static int before(const entry *x, const entry *y)
{
    return x->mag != y->mag ? x->mag > y->mag : x->i < y->i;
}

static void swap(entry *a, entry *b)
{
    entry t = *a;
    *a = *b;
    *b = t;
}

/* Reorder e[0, n) so that its first k entries are the k first in `before`
 * order (any order among them): quickselect, Lomuto partition around the
 * middle entry. */
static void select_first(entry *e, uint64_t n, uint64_t k)
{
    uint64_t lo = 0, hi = n;
    while (hi - lo > 1 && k > lo && k < hi) {
        uint64_t store = lo;
        swap(&e[lo + (hi - lo) / 2], &e[hi - 1]);
        for (uint64_t j = lo; j + 1 < hi; j++)
            if (before(&e[j], &e[hi - 1])) swap(&e[j], &e[store++]);
        swap(&e[store], &e[hi - 1]);
        if (k <= store) hi = store;
        else lo = store + 1;
    }
}

/* sel[i] = 1 for the top-k entries of acc: nonzeros only, or with
 * `zeros` (the CLT-k leader's choice) k entries, zeros counting as the
 * smallest magnitude (ties: lower index first). */
static void reference_topk(const double *acc, char *sel, int zeros)
{
    static entry *e;
    uint64_t n = 0;
    if (!e) e = malloc(N * sizeof *e);
    memset(sel, 0, N);
    for (uint64_t i = 0; i < N; i++)
        if (acc[i] != 0 || zeros) e[n++] = (entry){fabs(acc[i]), i};
    select_first(e, n, cfg.k);
    for (uint64_t j = 0; j < n && j < cfg.k; j++) sel[e[j].i] = 1;
}

typedef struct model {
    double *eps[8];     /* each rank's residual */
    double *held[8];    /* its first call's, aside until the rhythm is known */
    uint64_t last, gap; /* the buffer's previous call (clock) and gap */
    double *acc[8];
    char *sel[8];       /* each rank's selection */
    double *sum;        /* the expected result */
    double *plain;      /* the exact sum of this call's gradients */
    double *exact;      /* the exact sum of this call's acc (the vendor's) */
    double *inputs, *results; /* totals over the calls (the invariant) */
    int calls, carried; /* carried: some rank's residual is nonzero before this call */
} model;


static void model_init(model *m)
{
    *m = (model){.sum = zeros(), .plain = zeros(), .exact = zeros(), .inputs = zeros(), .results = zeros()};
    for (int r = 0; r < P; r++) {
        m->eps[r] = zeros();
        m->held[r] = zeros();
        m->acc[r] = zeros();
        m->sel[r] = values(N, 1);
    }
}

static void model_free(model *m)
{
    free(m->sum), free(m->plain), free(m->exact), free(m->inputs), free(m->results);
    for (int r = 0; r < P; r++) free(m->eps[r]), free(m->held[r]), free(m->acc[r]), free(m->sel[r]);
}

static double rounded(double v) { return cfg.single ? (double)(float)v : v; }

/* The rhythm rule of sparcml(7) at the buffer's call at `clock`: its
 * second call puts the first's residual aside; a later call with the same
 * gap adds it back, one with another gap drops both.  Returns 1 on a drop. */
static int model_rhythm(model *m, uint64_t clock)
{
    uint64_t gap = clock - m->last;
    int first = m->last == 0, second = !first && m->gap == 0, drop = !first && !second && gap != m->gap;
    m->last = clock;
    if (first || !cfg.feedback) return 0;
    m->gap = gap;
    for (int r = 0; r < P; r++)
        for (uint64_t i = 0; i < N; i++) {
            if (second) m->held[r][i] = m->eps[r][i];
            m->eps[r][i] = second || drop ? 0 : rounded(m->eps[r][i] + m->held[r][i]);
            if (!second) m->held[r][i] = 0;
        }
    return drop;
}

/* What the library reports as rank r's residual at i. */
static double model_residual(const model *m, int r, uint64_t i)
{
    return rounded(m->eps[r][i] + m->held[r][i]);
}

/* One call of buffer b at step t, before its route is known: every
 * rank's acc, and the exact sums of the gradients and of acc. */
static void model_acc(model *m, int b, int t)
{
    memset(m->plain, 0, N * sizeof *m->plain);
    memset(m->exact, 0, N * sizeof *m->exact);
    m->carried = 0;
    for (int r = 0; r < P; r++)
        for (uint64_t i = 0; i < N; i++) {
            double g = grad(b, t, r, i);
            m->carried |= cfg.feedback && m->eps[r][i] != 0;
            m->plain[i] += g;
            m->acc[r][i] = rounded((cfg.feedback ? m->eps[r][i] : 0) + g);
            m->exact[i] += m->acc[r][i];
            m->inputs[i] += g;
        }
}

/* Its route: the selections (S_r as above) or the vendor (S_r = acc_r);
 * the expected sum, and eps_r = acc_r - S_r. */
static void model_route(model *m, int vendor)
{
    int leader = m->calls % P;
    memset(m->sum, 0, N * sizeof *m->sum);
    if (vendor) memset(m->sel[leader], 1, N);
    else if (cfg.cltk) reference_topk(m->acc[leader], m->sel[leader], 1);
    for (int r = 0; r < P; r++) {
        if (!cfg.cltk && !vendor) reference_topk(m->acc[r], m->sel[r], 0);
        else if (r != leader) memcpy(m->sel[r], m->sel[leader], N);
        for (uint64_t i = 0; i < N; i++) {
            m->sum[i] += m->sel[r][i] ? m->acc[r][i] : 0;
            m->eps[r][i] = m->sel[r][i] ? 0 : m->acc[r][i];
        }
    }
    m->calls++;
}

/* One call of buffer b at step t whose result is recv: its route, told by
 * the result, counted and checked against COMPRESS_ROUTE; the model
 * follows it. */
static void model_call(model *m, int b, int t, MPI_Datatype type, const void *recv)
{
    int vendor = 1;
    model_acc(m, b, t);
    for (uint64_t i = 0; i < N && vendor; i++) vendor = get(recv, type, i) == m->exact[i];
    if (cfg.route != ROUTE_ANY && vendor != (cfg.route == ROUTE_VENDOR))
        FAIL("buffer %d call %d: routed to %s", b, m->calls, vendor ? "the vendor" : "the selections");
    routes[vendor]++;
    spent += vendor && m->carried;
    model_route(m, vendor);
}

/* --- the library's side --------------------------------------------------- */

static int call(const void *send, void *recv, int count, MPI_Datatype type, MPI_Request *persistent)
{
    MPI_Request req;
    int rc, flag = 0;
    switch (call_mode) {
    case CALL_BLOCKING: return MPI_Allreduce(send, recv, count, type, MPI_SUM, MPI_COMM_WORLD);
    case CALL_WAIT:
        rc = MPI_Iallreduce(send, recv, count, type, MPI_SUM, MPI_COMM_WORLD, &req);
        return rc == MPI_SUCCESS ? MPI_Wait(&req, MPI_STATUS_IGNORE) : rc;
    case CALL_TEST:
        rc = MPI_Iallreduce(send, recv, count, type, MPI_SUM, MPI_COMM_WORLD, &req);
        while (rc == MPI_SUCCESS && !flag) rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        return rc;
    case CALL_PERSISTENT:
        rc = MPI_SUCCESS;
        if (*persistent == MPI_REQUEST_NULL)
#if MPI_VERSION >= 4
            rc = MPI_Allreduce_init(send, recv, count, type, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, persistent);
#else
            rc = MPIX_Allreduce_init(send, recv, count, type, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, persistent);
#endif
        if (rc == MPI_SUCCESS) rc = MPI_Start(persistent);
        return rc == MPI_SUCCESS ? MPI_Wait(persistent, MPI_STATUS_IGNORE) : rc;
    }
    return MPI_ERR_OTHER;
}

/* The checks of one call of buffer b (recv: the result). */
static void check_call(const model *m, int b, MPI_Datatype type, const void *recv, void *eps)
{
    int rc = residual_of(MPI_COMM_WORLD, recv, N, type, eps);
    int leader = (m->calls - 1) % P;
    const char *sel = m->sel[cfg.cltk ? leader : rank];
    if (!t_same_everywhere(t_hash(recv, N * (type == MPI_FLOAT ? 4 : 8)), MPI_COMM_WORLD))
        FAIL("buffer %d call %d: results differ between ranks", b, m->calls);
    if (!cfg.feedback) {
        if (rc != MPI_ERR_ARG) FAIL("feedback off, yet a residual is reported (rc %d)", rc);
    } else if (rc != MPI_SUCCESS) {
        FAIL("buffer %d: no residual reported (rc %d)", b, rc);
        return;
    }
    for (uint64_t i = 0; i < N; i++) {
        double got = get(recv, type, i);
        int anywhere = 0;
        for (int r = 0; r < P && !anywhere; r++) anywhere = m->sel[r][i];
        if (!cfg.qsgd && got != m->sum[i]) {
            FAIL("buffer %d call %d: result[%llu] = %g, expected %g", b, m->calls, (unsigned long long)i, got,
                 m->sum[i]);
            return;
        }
        if (!cfg.qsgd && cfg.k == N && got != m->plain[i]) {
            FAIL("buffer %d call %d: density 1, result[%llu] = %g, not the exact sum %g", b, m->calls,
                 (unsigned long long)i, got, m->plain[i]);
            return;
        }
        if (cfg.qsgd && got != 0 && !anywhere) {
            FAIL("buffer %d call %d: result[%llu] = %g outside every selection", b, m->calls,
                 (unsigned long long)i, got);
            return;
        }
        if (!cfg.feedback) continue;
        if ((!cfg.qsgd || !sel[i]) && get(eps, type, i) != model_residual(m, rank, i)) {
            FAIL("buffer %d call %d: residual[%llu] = %g, expected %g", b, m->calls, (unsigned long long)i,
                 get(eps, type, i), model_residual(m, rank, i));
            return;
        }
    }
}

/* With QSGD the values sent are random: the model goes on from the
 * residuals the library reports (every rank's, gathered; a residual held
 * aside is in the report, which is what joining it gives). */
static void adopt_residuals(model *m, MPI_Datatype type, const void *eps)
{
    double *mine = zeros(), *all = values(N * (uint64_t)P, sizeof(double));
    for (uint64_t i = 0; i < N; i++) mine[i] = get(eps, type, i);
    MPI_Allgather(mine, (int)N, MPI_DOUBLE, all, (int)N, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int r = 0; r < P; r++) {
        memcpy(m->eps[r], all + (uint64_t)r * N, N * sizeof *all);
        memset(m->held[r], 0, N * sizeof *all);
    }
    free(mine);
    free(all);
}

/* With QSGD: sum of results + sum over ranks of the residuals = sum of the
 * inputs, within rounding. */
static void check_invariant(model *m, int b, MPI_Datatype type, const void *recv, void *eps)
{
    double *mine = zeros(), *all = zeros();
    double worst = 0;
    if (residual_of(MPI_COMM_WORLD, recv, N, type, eps) != MPI_SUCCESS) {
        FAIL("buffer %d: no residual at the end", b);
        return;
    }
    for (uint64_t i = 0; i < N; i++) mine[i] = get(eps, type, i);
    /* MPI_Reduce: not an allreduce, so never compressed. */
    MPI_Reduce(mine, all, (int)N, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    for (uint64_t i = 0; i < N && rank == 0; i++) {
        double off = fabs(m->results[i] + all[i] - m->inputs[i]);
        if (off > worst) worst = off;
    }
    if (worst > 1e-3) FAIL("buffer %d: sum of results + residuals misses the inputs by %g", b, worst);
    if (rank == 0) printf("invariant buffer=%d calls=%d max_error=%g\n", b, m->calls, worst);
    free(mine);
    free(all);
}

static void run_model(MPI_Datatype type)
{
    model models[BUFFERS];
    size_t vs = type == MPI_FLOAT ? 4 : 8;
    void *recv[BUFFERS], *send = values(N, vs), *eps = values(N, vs);
    MPI_Request persistent[BUFFERS] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    uint64_t clock = 0;
    for (int b = 0; b < BUFFERS; b++) {
        recv[b] = values(N, vs);
        model_init(&models[b]);
    }
    cfg.single = type == MPI_FLOAT;
    for (int t = 0; t < STEPS; t++)
        for (int b = 0; b < BUFFERS; b++) {
            model *m = &models[b];
            /* Buffer 0 in place, buffer 1 from a send buffer. */
            void *in = b == 0 ? recv[b] : send;
            int rc;
            for (uint64_t i = 0; i < N; i++) put(in, type, i, grad(b, t, rank, i));
            rc = call(b == 0 ? MPI_IN_PLACE : send, recv[b], (int)N, type, &persistent[b]);
            if (rc != MPI_SUCCESS) FAIL("buffer %d step %d: rc %d", b, t, rc);
            if (model_rhythm(m, ++clock)) FAIL("buffer %d step %d: the model drops a residual", b, t);
            model_call(m, b, t, type, recv[b]);
            for (uint64_t i = 0; i < N; i++) m->results[i] += get(recv[b], type, i);
            check_call(m, b, type, recv[b], eps);
            if (cfg.qsgd && cfg.feedback) adopt_residuals(m, type, eps);
        }
    for (int b = 0; b < BUFFERS; b++) {
        if (cfg.qsgd && cfg.feedback) check_invariant(&models[b], b, type, recv[b], eps);
        if (persistent[b] != MPI_REQUEST_NULL) MPI_Request_free(&persistent[b]);
        free(recv[b]);
        model_free(&models[b]);
    }
    free(send);
    free(eps);
}

/* Temporaries: tensors 0 and 2 take turns at buffer X, tensor 1 uses Y
 * between them, every step.  X's gaps alternate (2, 1, 2, ...), so after
 * its rhythm is known (its second use) each use drops the residual: the
 * model applies the rule of sparcml(7) (a gap unlike the one before drops
 * it) and must still match every call; at least one drop must happen. */
static void run_temporaries(void)
{
    model models[2];
    float *buf[2] = {values(N, 4), values(N, 4)}, *eps = values(N, 4);
    static const int key_of[3] = {0, 1, 0};
    uint64_t clock = 0;
    int drops = 0;
    cfg.single = 1;
    model_init(&models[0]);
    model_init(&models[1]);
    for (int t = 0; t < STEPS; t++)
        for (int tensor = 0; tensor < 3; tensor++) {
            int k = key_of[tensor];
            model *m = &models[k];
            drops += model_rhythm(m, ++clock);
            for (uint64_t i = 0; i < N; i++) buf[k][i] = (float)grad(tensor, t, rank, i);
            MPI_Allreduce(MPI_IN_PLACE, buf[k], (int)N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            model_call(m, tensor, t, MPI_FLOAT, buf[k]);
            check_call(m, k, MPI_FLOAT, buf[k], eps);
        }
    if (drops == 0) FAIL("the pattern dropped no residual");
    if (rank == 0) printf("drops=%d\n", drops);
    for (int k = 0; k < 2; k++) {
        model_free(&models[k]);
        free(buf[k]);
    }
    free(eps);
}

/* --- calls that stay exact ------------------------------------------------ */

/* buf must hold, at each of its n entries, the sum (or with max, the
 * maximum) over the ranks of grad(9, 0, r, i). */
static void expect(const char *what, const void *buf, MPI_Datatype elem, int n, int max)
{
    for (int i = 0; i < n; i++) {
        double want = max ? -INFINITY : 0, got = elem == MPI_INT ? ((const int *)buf)[i] : get(buf, elem, (uint64_t)i);
        for (int r = 0; r < P; r++) want = max ? fmax(want, grad(9, 0, r, (uint64_t)i)) : want + grad(9, 0, r, (uint64_t)i);
        if (got != want) {
            FAIL("%s: [%d] = %g, expected %g", what, i, got, want);
            return;
        }
    }
}

static void run_nonqualifying(void)
{
    int *ints = values(N, sizeof(int)), n = (int)N;
    float *floats = values(N, 4);
    MPI_Datatype dup;
    int rc;
    for (int i = 0; i < n; i++) ints[i] = (int)grad(9, 0, rank, (uint64_t)i);
    MPI_Allreduce(MPI_IN_PLACE, ints, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    expect("MPI_INT sum", ints, MPI_INT, n, 0);
    for (int i = 0; i < n; i++) floats[i] = (float)grad(9, 0, rank, (uint64_t)i);
    MPI_Allreduce(MPI_IN_PLACE, floats, n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
    expect("MPI_MAX", floats, MPI_FLOAT, n, 1);
    for (int i = 0; i < n; i++) floats[i] = (float)grad(9, 0, rank, (uint64_t)i);
    MPI_Allreduce(MPI_IN_PLACE, floats, SMALL, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    expect("below SPARCML_COMPRESS_MIN_BYTES", floats, MPI_FLOAT, SMALL, 0);
    for (int i = 0; i < n; i++) floats[i] = (float)grad(9, 0, rank, (uint64_t)i);
    /* A derived type stays with the vendor: its sum, or its error where
     * it defines MPI_SUM on predefined types only (MPICH). */
    MPI_Type_dup(MPI_FLOAT, &dup);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Allreduce(MPI_IN_PLACE, floats, n, dup, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Type_free(&dup);
    MPI_Error_class(rc, &rc);
    if (rc == MPI_SUCCESS) expect("derived type", floats, MPI_FLOAT, n, 0);
    else if (rc != MPI_ERR_OP) FAIL("derived type: error class %d, expected the vendor's MPI_ERR_OP", rc);
    if (residual_of(MPI_COMM_WORLD, floats, N, MPI_FLOAT, floats) != MPI_ERR_ARG)
        FAIL("a residual for a call that is not compressed");
    free(ints);
    free(floats);
}

/* A communicator freed and made again starts with no residual: its first
 * call's residual is that of a zero start. */
static void run_fresh_comm(void)
{
    model m;
    float *buf = values(N, 4), *eps = values(N, 4);
    cfg.single = 1;
    for (int round = 0; round < 2; round++) {
        MPI_Comm comm;
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        if (residual_of(comm, buf, N, MPI_FLOAT, eps) != MPI_ERR_ARG)
            FAIL("round %d: a residual before the first call", round);
        model_init(&m);
        for (uint64_t i = 0; i < N; i++) buf[i] = (float)grad(round, 0, rank, i);
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)N, MPI_FLOAT, MPI_SUM, comm);
        model_call(&m, round, 0, MPI_FLOAT, buf);
        if (residual_of(comm, buf, N, MPI_FLOAT, eps) != MPI_SUCCESS) FAIL("round %d: no residual", round);
        for (uint64_t i = 0; i < N; i++)
            if (buf[i] != m.sum[i] || eps[i] != m.eps[rank][i]) {
                FAIL("round %d: [%llu] result %g residual %g, expected %g and %g", round, (unsigned long long)i,
                     buf[i], eps[i], m.sum[i], m.eps[rank][i]);
                break;
            }
        MPI_Comm_free(&comm);
        model_free(&m);
    }
    free(buf);
    free(eps);
}

static void run_mismatch(void)
{
    float *buf = values(N, 4);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int t = 0; t < 2; t++) {
        int rc, cls;
        for (uint64_t i = 0; i < N; i++) buf[i] = (float)grad(9, t, rank, i);
        rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Error_class(rc, &cls);
        if (cls != MPI_ERR_OTHER) FAIL("call %d: error class %d, expected MPI_ERR_OTHER", t, cls);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    free(buf);
}

static void run_capped(void)
{
    float *buf = values(N, 4), *eps = values(N, 4);
    for (int t = 0; t < 3; t++) {
        int rc;
        for (uint64_t i = 0; i < N; i++) buf[i] = (float)grad(9, 0, rank, i);
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        expect("capped", buf, MPI_FLOAT, (int)N, 0);
        rc = residual_of(MPI_COMM_WORLD, buf, N, MPI_FLOAT, eps);
        for (uint64_t i = 0; rc == MPI_SUCCESS && i < N; i++)
            if (eps[i] != 0) {
                FAIL("capped: residual[%llu] = %g", (unsigned long long)i, eps[i]);
                break;
            }
    }
    free(buf);
    free(eps);
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "model", *how = argc > 2 ? argv[2] : "blocking";
    const char *type = argc > 3 ? argv[3] : "float";
    int total;
    if (argc > 4) N = strtoull(argv[4], NULL, 10);
    if (argc > 5) STEPS = atoi(argv[5]);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (P > 8) MPI_Abort(MPI_COMM_WORLD, 2);
    read_settings();
    residual_of = (sparcml_compress_residual_fn *)dlsym(RTLD_DEFAULT, "sparcml_compress_residual");
    if (!residual_of) {
        if (rank == 0) fprintf(stderr, "libsparcml.so is not loaded\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (strcmp(how, "wait") == 0) call_mode = CALL_WAIT;
    else if (strcmp(how, "test") == 0) call_mode = CALL_TEST;
    else if (strcmp(how, "persistent") == 0) call_mode = CALL_PERSISTENT;
    if (strcmp(what, "model") == 0) run_model(strcmp(type, "double") == 0 ? MPI_DOUBLE : MPI_FLOAT);
    else if (strcmp(what, "nonqualifying") == 0) run_nonqualifying();
    else if (strcmp(what, "fresh_comm") == 0) run_fresh_comm();
    else if (strcmp(what, "capped") == 0) run_capped();
    else if (strcmp(what, "temporaries") == 0) run_temporaries();
    else if (strcmp(what, "mismatch") == 0) run_mismatch();
    else {
        if (rank == 0) fprintf(stderr, "usage: compress [model|temporaries|nonqualifying|fresh_comm|capped|mismatch] [blocking|wait|test|persistent] [float|double] [N] [STEPS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0 && routes[0] + routes[1]) printf("routes selected=%d vendor=%d spent=%d\n", routes[0], routes[1], spent);
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("failures=%d\n", total);
    MPI_Finalize();
    return 0;
}
