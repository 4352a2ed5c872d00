/* sparse_allreduce.c -- correctness of tagged allreduces (run with the shim
 * preloaded, any P, any SPARCML_ALGORITHM).
 *
 * For MPI_COMM_WORLD and a split sub-communicator with non-contiguous,
 * reversed ranks; float, double, int32, int64; densities 0, 1e-4, 1e-2,
 * 0.3, 1; random, identical, disjoint, skewed (one rank empty, one
 * dense) and clustered (every rank's indices in the first quarter) index
 * sets; with and without MPI_IN_PLACE; through MPI_Allreduce
 * and MPI_Allreduce_c (or, with --call=wait|test|persistent, their
 * non-blocking forms MPI_Iallreduce and MPI_Iallreduce_c, or the persistent
 * ones):
 *  - the result equals a reference sum computed here from every rank's
 *    regenerated input (exact for integers, with two's complement wrap;
 *    for floats within P * epsilon * sum|x_i| of a double reference: the
 *    worst-case error of summing P values in any order is (P-1) * eps/2 *
 *    sum|x_i|);
 *  - the result holds exactly the union of the inputs' indices (a dense
 *    input holds every index) and is sparse exactly when the size rule of
 *    sparcml-stream(7) says so;
 *  - the result stream is bitwise identical on all ranks (hash compared);
 *  - a second and third call with the same buffers give the same bytes.
 *
 * Options (tests/scripts/scale.sh uses them at P = 16..64, where the full
 * matrix and every rank checking every value would take hours on two
 * cores):
 *   --types=LIST   comma-separated value types (float,double,int32,int64;
 *                  default all four);
 *   --check=slice  each rank checks the values of its own 1/P of the
 *                  indices against the reference instead of all of them
 *                  (and receives only that slice of the reference).
 *                  Together with the hash comparison (the result is
 *                  bitwise the same on every rank) the slices still check
 *                  every value of the result, at 1/P of the checking;
 *   --call=HOW     blocking (the default: MPI_Allreduce, MPI_Allreduce_c),
 *                  wait (MPI_Iallreduce, MPI_Iallreduce_c, then MPI_Wait)
 *                  or test (the same, then MPI_Test until it is done);
 *                  the request must be MPI_REQUEST_NULL afterwards;
 *                  persistent (MPI_Allreduce_init or _c -- Open MPI:
 *                  MPIX_Allreduce_init -- once per case, then MPI_Start and
 *                  MPI_Wait for each of the three calls; the handle must
 *                  stay the same, then MPI_Request_free)
 *                  (tests/scripts/nonblocking.sh).  Without MPI-4 (Open
 *                  MPI 4.1) the large-count cases use the int forms.
 *   --hashes       rank 0 of MPI_COMM_WORLD prints each of its cases' first
 *                  result hash ("hash SEED COMM HASH"): two runs that must
 *                  give the same bits (SPARCML_PIPELINE_CHUNKS, in
 *                  tests/scripts/pipeline.sh) are compared line by line.
 *   --hashes=FILE  the same lines into FILE: where other ranks print too
 *                  (SPARCML_VERBOSE), Open MPI's forwarding of the ranks'
 *                  output may cut a line into another's.
 *
 * Under SPARCML_QSGD_BITS=b (float and double only; integers stay exact) the
 * tolerance is a hard bound instead: one quantization moves a value by at
 * most scale/s (s = 2^(b-1) - 1), the scale of a bucket is at most
 * G = max_i sum_r |x_ri| (every message value is a partial sum), and a value
 * passes through at most P + 2 ceil(log2 P) + 1 quantizations (recursive
 * doubling: the fold and both operands of every round; split: P - 1 parts
 * and the allgather). */
#include <float.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#include "testlib.h"
#if MPI_VERSION < 4
#include <mpi-ext.h> /* Open MPI 4.1: MPIX_Allreduce_init */
#endif

enum { PAT_RANDOM, PAT_IDENTICAL, PAT_DISJOINT, PAT_SKEWED, PAT_CLUSTERED, PAT_COUNT };
static const char *const pat_names[] = {"random", "identical", "disjoint", "skewed", "clustered"};
static const double densities[] = {0, 1e-4, 1e-2, 0.3, 1};
static const int vtypes[] = {SPARCML_FLOAT, SPARCML_DOUBLE, SPARCML_INT32, SPARCML_INT64};

typedef struct tcase {
    uint64_t seed, dim;
    int vtype, pattern, inplace, large_count_api;
    double density;
    const char *comm_name;
    int sparse_input; /* sparse even where dense would be smaller */
} tcase;

static int failures, checks, qsgd_levels_s;
static int type_enabled[5] = {0, 1, 1, 1, 1}; /* by enum sparcml_value_type */
static int check_own_slice, print_hashes, world_rank;
static FILE *hash_file; /* where --hashes prints: stdout or FILE */
enum { CALL_BLOCKING, CALL_WAIT, CALL_TEST, CALL_PERSISTENT };
static int call_how = CALL_BLOCKING;
/* SPARCML_ALGORITHM unset or auto: the selector may pick another algorithm
 * on a repeated call once it has learnt how the indices overlap. */
static int adaptive;

static void fail(const tcase *t, int rank, const char *what)
{
    if (failures++ < 20)
        fprintf(stderr, "FAIL rank %d: %s [comm=%s type=%s N=%llu d=%g pattern=%s inplace=%d]\n",
                rank, what, t->comm_name, sparcml_value_type_name(t->vtype),
                (unsigned long long)t->dim, t->density, pat_names[t->pattern], t->inplace);
}

/* Does rank r (of P) hold index i in case t? */
static int holds(const tcase *t, int r, int P, uint64_t i)
{
    double u = (double)(t_rand(t->seed ^ 0x51, (uint64_t)r * t->dim + i) >> 11) / 9007199254740992.0;
    switch (t->pattern) {
    case PAT_IDENTICAL:
        return (double)(t_rand(t->seed ^ 0x52, i) >> 11) / 9007199254740992.0 < t->density;
    case PAT_DISJOINT:
        return (int)(i % (uint64_t)P) == r && u < t->density * P;
    case PAT_SKEWED:
        if (r == 0) return 0;
        if (r == 1 % P) return 1;
        return u < t->density;
    case PAT_CLUSTERED: /* the density of the whole vector, in a quarter */
        return i < t->dim / 4 && u < 4 * t->density;
    default:
        return u < t->density;
    }
}

/* The value rank r contributes at index i, as a double and as raw bits. */
static void value_of(const tcase *t, int r, uint64_t i, void *out)
{
    uint64_t x = t_rand(t->seed ^ 0x77, (uint64_t)r * t->dim + i);
    double f = (double)(x >> 11) / 4503599627370496.0 - 1.0; /* [-1, 1) */
    switch (t->vtype) {
    case SPARCML_FLOAT: { float v = (float)f; memcpy(out, &v, 4); break; }
    case SPARCML_DOUBLE: memcpy(out, &f, 8); break;
    case SPARCML_INT32: { int32_t v = (int32_t)(x >> 33) - (1 << 30); memcpy(out, &v, 4); break; }
    default: memcpy(out, &x, 8); break; /* full range: sums wrap */
    }
}

/* Rank r's entries in case t: its indices in ascending order into idx and
 * their values (raw bits, the type's size each) into vals; returns how
 * many.  Computed once per case: the reference and every input use them. */
static uint64_t own_entries(const tcase *t, int r, int P, uint64_t *idx, char *vals)
{
    size_t vs = sparcml_value_size(t->vtype);
    uint64_t nnz = 0;
    for (uint64_t i = 0; i < t->dim; i++) {
        if (!holds(t, r, P, i)) continue;
        idx[nnz] = i;
        value_of(t, r, i, vals + nnz * vs);
        nnz++;
    }
    return nnz;
}

/* Write the input stream of the nnz entries into buf (count words). */
static void build_input(const tcase *t, const uint64_t *idx, const char *vals, uint64_t nnz, void *buf,
                        MPI_Count count)
{
    size_t vs = sparcml_value_size(t->vtype);
    if (!t->sparse_input && sparcml_prefers_dense(t->dim, t->vtype, nnz)) {
        /* Dense input: expand the entries (zeros elsewhere). */
        char *d = (char *)buf + SPARCML_HEADER_BYTES;
        sparcml_write_header(buf, t->dim, t->vtype, t->dim, SPARCML_DENSE);
        memset(d, 0, t->dim * vs);
        for (uint64_t j = 0; j < nnz; j++) memcpy(d + idx[j] * vs, vals + j * vs, vs);
    } else if (sparcml_stream_from_sorted(buf, count, t->dim, t->vtype, nnz, idx, vals) != SPARCML_OK) {
        fprintf(stderr, "test bug: cannot build input\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

/* The indices this rank checks: all, or with --check=slice its own 1/P. */
static void checked_range(const tcase *t, int rank, int P, uint64_t *lo, uint64_t *hi)
{
    *lo = 0;
    *hi = t->dim;
    if (!check_own_slice) return;
    *lo = t->dim * (uint64_t)rank / (uint64_t)P;
    *hi = t->dim * (uint64_t)(rank + 1) / (uint64_t)P;
}

/* The reference of a case: every rank adds up its own regenerated input
 * (own_entries()), and the vendor's PMPI_Allreduce
 * (PMPI_Reduce_scatter with --check=slice) sums the ranks' arrays --
 * independent of the library, which interposes only MPI_*.  Computed once,
 * then used by every repetition. */
typedef struct reference {
    uint64_t lo, hi;  /* the checked indices */
    double *sum, *mag; /* floating point: sum_r x_ri and sum_r |x_ri| */
    uint64_t *isum;   /* integers: the sum modulo 2^64 */
    unsigned char *held; /* some rank holds index i */
    uint64_t n_union; /* entries of the union of the inputs' indices */
    double qtol;      /* the extra tolerance QSGD allows (0 without) */
} reference;

/* The per-case arrays of the harness (entries, the dense expansion of a
 * result, the reference's sums), kept from case to case and grown to the
 * largest dimension: under ASan every large allocation is a fresh mapping,
 * faulted in and later unmapped with a TLB flush, and seven of them per
 * case would be most of a sanitizer run's time.  The buffers handed to
 * MPI_Allreduce stay exact-size allocations of each case (run_case), so
 * ASan still sees any write past them. */
static struct workspace {
    uint64_t dim; /* what the arrays hold room for */
    uint64_t *idx;
    char *vals, *got;
    double *sums; /* room for a case's sums and, right after them, its magnitudes */
    uint64_t *isum;
    unsigned char *held;
} work;

static void workspace_free(void)
{
    free(work.idx); free(work.vals); free(work.got); free(work.sums); free(work.isum); free(work.held);
    work = (struct workspace){0};
}

static void workspace_fit(uint64_t dim)
{
    size_t n = (size_t)dim + 1;
    if (work.idx && dim <= work.dim) return;
    workspace_free();
    work = (struct workspace){.dim = dim, .idx = malloc(n * 8), .vals = malloc(n * 8), .got = malloc(n * 8),
                              .sums = malloc(2 * n * sizeof *work.sums), .isum = malloc(n * sizeof *work.isum),
                              .held = malloc(n)};
    if (!work.idx || !work.vals || !work.got || !work.sums || !work.isum || !work.held) MPI_Abort(MPI_COMM_WORLD, 2);
}

/* This rank's value v (raw bits) at index i, into slot i. */
static void set_own_value(const tcase *t, reference *ref, uint64_t i, const char *v)
{
    switch (t->vtype) {
    case SPARCML_FLOAT: { float f; memcpy(&f, v, 4); ref->sum[i] = f; ref->mag[i] = fabs(f); break; }
    case SPARCML_DOUBLE: { double f; memcpy(&f, v, 8); ref->sum[i] = f; ref->mag[i] = fabs(f); break; }
    case SPARCML_INT32: { int32_t x; memcpy(&x, v, 4); ref->isum[i] = (uint32_t)x; break; }
    default: { uint64_t x; memcpy(&x, v, 8); ref->isum[i] = x; break; }
    }
}

/* Sum the ranks' arrays of n elements each into the checked range (moved
 * to the front with --check=slice), by the vendor.  The sums stay within
 * counts of int: dims here are far below 2^31. */
static void vendor_sum(void *a, int n, MPI_Datatype type, MPI_Op op, const int *counts, MPI_Comm comm)
{
    int rc = counts ? PMPI_Reduce_scatter(MPI_IN_PLACE, a, counts, type, op, comm)
                    : PMPI_Allreduce(MPI_IN_PLACE, a, n, type, op, comm);
    if (rc != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 2);
}

/* Build the reference from this rank's `mine` entries (collective). */
static void reference_build(const tcase *t, MPI_Comm comm, const uint64_t *idx, const char *vals, uint64_t mine,
                            reference *ref)
{
    int rank, P, any_dense = 0, levels = 0, n_all = (int)t->dim + 1, *counts = NULL;
    size_t vs = sparcml_value_size(t->vtype);
    uint64_t *nnz, n = 0;
    double G = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    checked_range(t, rank, P, &ref->lo, &ref->hi);
    ref->sum = memset(work.sums, 0, 2 * (size_t)n_all * sizeof *ref->sum);
    ref->mag = ref->sum + n_all;
    ref->isum = memset(work.isum, 0, (size_t)n_all * sizeof *ref->isum);
    ref->held = memset(work.held, 0, (size_t)n_all);
    nnz = calloc((size_t)P, sizeof *nnz);
    if (check_own_slice) counts = calloc((size_t)P, sizeof *counts);
    if (!nnz || (check_own_slice && !counts)) MPI_Abort(MPI_COMM_WORLD, 2);
    for (uint64_t j = 0; j < mine; j++) {
        ref->held[idx[j]] = 1;
        set_own_value(t, ref, idx[j], vals + j * vs);
    }
    for (int r = 0; check_own_slice && r < P; r++) counts[r] = (int)(t->dim * (uint64_t)(r + 1) / (uint64_t)P - t->dim * (uint64_t)r / (uint64_t)P);
    if (t->vtype == SPARCML_FLOAT || t->vtype == SPARCML_DOUBLE) {
        /* Sliced, each array apart; else both in one call (mag adjoins
         * sum, whose element n_all - 1 is zero everywhere). */
        vendor_sum(ref->sum, counts ? n_all - 1 : 2 * n_all - 1, MPI_DOUBLE, MPI_SUM, counts, comm);
        if (counts) vendor_sum(ref->mag, n_all - 1, MPI_DOUBLE, MPI_SUM, counts, comm);
    } else {
        vendor_sum(ref->isum, n_all - 1, MPI_UINT64_T, MPI_SUM, counts, comm);
    }
    vendor_sum(ref->held, n_all - 1, MPI_UNSIGNED_CHAR, MPI_MAX, counts, comm);
    if (PMPI_Allgather(&mine, 1, MPI_UINT64_T, nnz, 1, MPI_UINT64_T, comm) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 2);
    for (uint64_t j = 0; j < ref->hi - ref->lo; j++) {
        n += ref->held[j];
        G = fmax(G, ref->mag[j]);
    }
    if (check_own_slice) {
        PMPI_Allreduce(MPI_IN_PLACE, &n, 1, MPI_UINT64_T, MPI_SUM, comm);
        PMPI_Allreduce(MPI_IN_PLACE, &G, 1, MPI_DOUBLE, MPI_MAX, comm);
    }
    /* build_input's rule: a rank sends dense where that is smaller, and a
     * dense input supplies every index. */
    for (int r = 0; r < P; r++)
        any_dense |= !t->sparse_input && sparcml_prefers_dense(t->dim, t->vtype, nnz[r]);
    ref->n_union = any_dense ? t->dim : n;
    if (any_dense) memset(ref->held, 1, (size_t)n_all);
    while ((1 << levels) < P) levels++;
    ref->qtol = qsgd_levels_s && (t->vtype == SPARCML_FLOAT || t->vtype == SPARCML_DOUBLE)
                    ? (P + 2 * levels + 1) * G / qsgd_levels_s : 0;
    free(nnz);
    free(counts);
}

/* Check result (dense expansion `got`) against the reference. */
static void check_values(const tcase *t, int rank, int P, const reference *ref, const void *got)
{
    size_t vs = sparcml_value_size(t->vtype);
    int bad = 0;
    for (uint64_t i = ref->lo; i < ref->hi && !bad; i++) {
        uint64_t j = i - ref->lo;
        const char *g = (const char *)got + i * vs;
        switch (t->vtype) {
        case SPARCML_FLOAT: { float f; memcpy(&f, g, 4);
            bad = !(fabs(f - ref->sum[j]) <= P * FLT_EPSILON * ref->mag[j] + ref->qtol); break; }
        case SPARCML_DOUBLE: { double f; memcpy(&f, g, 8);
            bad = !(fabs(f - ref->sum[j]) <= P * DBL_EPSILON * ref->mag[j] + ref->qtol); break; }
        case SPARCML_INT32: { uint32_t x; memcpy(&x, g, 4); bad = x != (uint32_t)ref->isum[j]; break; }
        default: { uint64_t x; memcpy(&x, g, 8); bad = x != ref->isum[j]; break; }
        }
        if (bad) {
            char msg[128];
            snprintf(msg, sizeof msg, "wrong value at index %llu", (unsigned long long)i);
            fail(t, rank, msg);
        }
    }
}

/* The result's format follows the size rule on the union, and a sparse
 * result holds exactly the union's indices (in the checked range)
 * (sparcml-stream(7)). */
static void check_format(const tcase *t, int rank, const reference *ref, const void *result)
{
    sparcml_header h;
    uint64_t at = 0, idx = 0, n = ref->n_union;
    unsigned char v[8];
    sparcml_stream_header(result, &h);
    if ((h.format == SPARCML_DENSE) != sparcml_prefers_dense(t->dim, t->vtype, n)) {
        fail(t, rank, h.format == SPARCML_DENSE ? "dense result where the sparse one is smaller"
                                                : "sparse result where the dense one is not larger");
        return;
    }
    if (h.format == SPARCML_DENSE) return;
    if (h.nnz != n) {
        fail(t, rank, "sparse result does not hold exactly the union of the indices");
        return;
    }
    while (at < n && (sparcml_stream_entry(result, at, &idx, v), idx < ref->lo)) at++;
    for (uint64_t i = ref->lo; i < ref->hi; i++) {
        if (!ref->held[i - ref->lo]) continue;
        if (at < n) sparcml_stream_entry(result, at++, &idx, v);
        if (at == 0 || idx != i) {
            fail(t, rank, "sparse result's indices are not the union of the inputs'");
            return;
        }
    }
}

/* --call=persistent: the case's persistent request. */
static int persistent_init(const tcase *t, const void *send, void *recv, MPI_Count count, MPI_Datatype type,
                           MPI_Comm comm, MPI_Request *req)
{
#if MPI_VERSION >= 4
    if (t->large_count_api) return MPI_Allreduce_init_c(send, recv, count, type, MPI_SUM, comm, MPI_INFO_NULL, req);
    return MPI_Allreduce_init(send, recv, (int)count, type, MPI_SUM, comm, MPI_INFO_NULL, req);
#else
    (void)t;
    return MPIX_Allreduce_init(send, recv, (int)count, type, MPI_SUM, comm, MPI_INFO_NULL, req);
#endif
}

/* One call the way --call says: blocking, or started and then completed
 * by MPI_Wait or by MPI_Test in a loop, or a start of the persistent
 * request *persist and MPI_Wait.  The large-count API where the case asks
 * for it. */
static int call_allreduce(const tcase *t, const void *send, void *recv, MPI_Count count,
                          MPI_Datatype type, MPI_Comm comm, MPI_Request *persist)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int rc, done = 0;
    if (call_how == CALL_PERSISTENT) {
        MPI_Request handle = *persist;
        rc = MPI_Start(persist);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(persist, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && *persist != handle) {
            int rank;
            MPI_Comm_rank(comm, &rank);
            fail(t, rank, "the persistent handle changed");
        }
        return rc;
    }
    if (call_how == CALL_BLOCKING) {
        if (t->large_count_api) return t_allreduce_c(send, recv, count, type, MPI_SUM, comm);
        return MPI_Allreduce(send, recv, (int)count, type, MPI_SUM, comm);
    }
    if (t->large_count_api)
        rc = t_iallreduce_c(send, recv, count, type, MPI_SUM, comm, &req);
    else
        rc = MPI_Iallreduce(send, recv, (int)count, type, MPI_SUM, comm, &req);
    if (rc != MPI_SUCCESS) return rc;
    if (call_how == CALL_WAIT) {
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        do rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        while (rc == MPI_SUCCESS && !done);
    }
    if (rc == MPI_SUCCESS && req != MPI_REQUEST_NULL) {
        int rank;
        MPI_Comm_rank(comm, &rank);
        fail(t, rank, "the completed request is not MPI_REQUEST_NULL");
    }
    return rc;
}

static void run_case(const tcase *t, MPI_Comm comm, MPI_Datatype type)
{
    int rank, P, rc;
    /* sparcml_capacity suffices for results, not for larger sparse inputs */
    MPI_Count count = t->sparse_input ? sparcml_sparse_capacity(t->dim, t->vtype, t->dim)
                                      : sparcml_capacity(t->dim, t->vtype);
    void *send = t_alloc_words(count), *recv = t_alloc_words(count);
    void *got;
    uint64_t first_hash = 0, *idx, nnz;
    char *vals;
    reference ref = {0};
    MPI_Request persist = MPI_REQUEST_NULL;
    workspace_fit(t->dim);
    idx = work.idx;
    vals = work.vals;
    got = work.got;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    nnz = own_entries(t, rank, P, idx, vals);
    reference_build(t, comm, idx, vals, nnz, &ref);
    /* The input is built once, into send.  In place, where every call
     * overwrites it, recv gets a copy before each call, the words after the
     * stream holding the same garbage (0xA5) as recv's otherwise. */
    if (t->inplace) memset(send, 0xA5, (size_t)count * 8);
    build_input(t, idx, vals, nnz, send, count);
    if (call_how == CALL_PERSISTENT
        && persistent_init(t, t->inplace ? MPI_IN_PLACE : send, recv, count, type, comm, &persist) != MPI_SUCCESS)
        fail(t, rank, "the persistent allreduce could not be initialised");
    for (int rep = 0; rep < 3; rep++) {
        sparcml_header h;
        uint64_t hash;
        int repeat;
        if (t->inplace) memcpy(recv, send, (size_t)count * 8);
        else memset(recv, 0xA5, (size_t)count * 8); /* garbage must not leak into the result */
        rc = call_allreduce(t, t->inplace ? MPI_IN_PLACE : send, recv, count, type, comm, &persist);
        checks++;
        if (rc != MPI_SUCCESS) {
            fail(t, rank, call_how == CALL_BLOCKING   ? "MPI_Allreduce returned an error"
                          : call_how == CALL_WAIT     ? "MPI_Iallreduce or MPI_Wait returned an error"
                          : call_how == CALL_TEST     ? "MPI_Iallreduce or MPI_Test returned an error"
                                                      : "MPI_Start or MPI_Wait returned an error");
            break;
        }
        if (sparcml_stream_header(recv, &h) != SPARCML_OK || h.dim != t->dim
            || h.value_type != t->vtype) {
            fail(t, rank, "result is not a valid stream");
            break;
        }
        hash = t_hash(recv, h.format == SPARCML_DENSE ? sparcml_dense_bytes(h.dim, h.value_type)
                                                    : sparcml_sparse_bytes(h.dim, h.value_type, h.nnz));
        if (!t_same_everywhere(hash, comm)) fail(t, rank, "result differs between ranks");
        /* Quantization draws new random numbers on every call (the call
         * number is part of the key), so then each result is checked on its
         * own instead of against the first.  Otherwise a forced algorithm
         * must give the very same bits every time; auto may have moved to
         * another algorithm (another format or another order of additions),
         * whose result must then be right on its own.  Either way it is the
         * same on all ranks (above). */
        repeat = rep > 0 && !qsgd_levels_s;
        if (repeat && hash != first_hash && !adaptive) fail(t, rank, "repeated call gave a different result");
        if (!repeat) first_hash = hash;
        if (rep == 0 && print_hashes && world_rank == 0)
            fprintf(hash_file, "hash %llu %s %016llx\n", (unsigned long long)t->seed, t->comm_name,
                    (unsigned long long)hash);
        if (!repeat || hash != first_hash) {
            check_format(t, rank, &ref, recv);
            sparcml_stream_to_dense(recv, got, t->dim);
            check_values(t, rank, P, &ref, got);
        }
    }
    if (persist != MPI_REQUEST_NULL) MPI_Request_free(&persist);
    free(send); free(recv);
}

static void run_all(MPI_Comm comm, const char *name, MPI_Datatype types[4], uint64_t seed)
{
    int n = 0;
    /* First on the communicator, before any call has grown its pools: no
     * entries at all in fewer elements than ranks (P >= 3), so some split
     * slices are empty and their sums have no width. */
    for (int v = 0; v < 4; v++) {
        tcase t = {seed + 3000 + (uint64_t)v, 2, vtypes[v], PAT_RANDOM, 0, 0, densities[0], name, 0};
        if (type_enabled[vtypes[v]]) run_case(&t, comm, types[v]);
    }
    for (int v = 0; v < 4; v++)
        for (int d = 0; d < 5; d++)
            for (int p = 0; p < PAT_COUNT; p++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    tcase t = {seed + (uint64_t)n, 20011, vtypes[v], p, inplace, n % 2, densities[d], name, 0};
                    if (type_enabled[vtypes[v]]) run_case(&t, comm, types[v]);
                    n++;
                }
    /* Fewer elements than ranks: some slices are empty. */
    for (int v = 0; v < 4; v++)
        for (int d = 3; d < 5; d++) {
            tcase t = {seed + 1000 + (uint64_t)n++, 5, vtypes[v], PAT_RANDOM, v % 2, 0, densities[d], name, 0};
            if (type_enabled[vtypes[v]]) run_case(&t, comm, types[v]);
        }
    /* Sparse inputs larger than their dense form (valid input), and N = 0:
     * the result's format follows the size rule at every P, P = 1 too. */
    for (int v = 0; v < 4; v++)
        for (int inplace = 0; inplace < 2 && type_enabled[vtypes[v]]; inplace++) {
            tcase big = {seed + 2000 + (uint64_t)n++, 1000, vtypes[v], PAT_RANDOM, inplace, 0, 0.9, name, 1};
            tcase empty = {seed + 2000 + (uint64_t)n++, 0, vtypes[v], PAT_RANDOM, inplace, 0, 0, name, 1};
            run_case(&big, comm, types[v]);
            run_case(&empty, comm, types[v]);
        }
}

/* --types=LIST, --check=slice and --call=HOW (see the top); 0, or -1 on a
 * bad option. */
static int parse_options(int argc, char **argv)
{
    for (int a = 1; a < argc; a++) {
        if (strncmp(argv[a], "--types=", 8) == 0) {
            char list[64], *save = NULL;
            snprintf(list, sizeof list, "%s", argv[a] + 8);
            for (int v = 1; v <= 4; v++) type_enabled[v] = 0;
            for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int v = 1;
                while (v <= 4 && strcmp(tok, sparcml_value_type_name(v)) != 0) v++;
                if (v > 4) return -1;
                type_enabled[v] = 1;
            }
        } else if (strcmp(argv[a], "--hashes") == 0) {
            print_hashes = 1;
            hash_file = stdout;
        } else if (strncmp(argv[a], "--hashes=", 9) == 0) {
            print_hashes = 1;
            hash_file = world_rank == 0 ? fopen(argv[a] + 9, "w") : stdout; /* rank 0 prints */
            if (!hash_file) return -1;
        } else if (strcmp(argv[a], "--check=slice") == 0) {
            check_own_slice = 1;
        } else if (strcmp(argv[a], "--call=blocking") == 0) {
            call_how = CALL_BLOCKING;
        } else if (strcmp(argv[a], "--call=wait") == 0) {
            call_how = CALL_WAIT;
        } else if (strcmp(argv[a], "--call=test") == 0) {
            call_how = CALL_TEST;
        } else if (strcmp(argv[a], "--call=persistent") == 0) {
            call_how = CALL_PERSISTENT;
        } else {
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Datatype types[4];
    MPI_Comm sub;
    int rank, size, total_fail;
    const char *qbits = getenv("SPARCML_QSGD_BITS");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    world_rank = rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (parse_options(argc, argv) != 0) {
        if (rank == 0)
            fprintf(stderr, "usage: sparse_allreduce [--types=float,double,int32,int64] [--check=slice]"
                            " [--call=blocking|wait|test|persistent] [--hashes[=FILE]]\n");
        MPI_Finalize();
        return 2;
    }
    if (qbits && atoi(qbits) > 0) qsgd_levels_s = (1 << (atoi(qbits) - 1)) - 1;
    adaptive = !getenv("SPARCML_ALGORITHM") || strcasecmp(getenv("SPARCML_ALGORITHM"), "auto") == 0;
    for (int v = 0; v < 4; v++) sparcml_type_create(vtypes[v], &types[v]);

    run_all(MPI_COMM_WORLD, "world", types, 1);
    /* Non-contiguous members in reversed order: ranks of one parity. */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &sub);
    MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
    run_all(sub, "split", types, 5000 + (uint64_t)(rank % 2));
    MPI_Comm_free(&sub);

    workspace_free();
    for (int v = 0; v < 4; v++) MPI_Type_free(&types[v]);
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    total_fail = failures;
    if (rank == 0)
        printf("sparse_allreduce: P=%d%s calls_per_rank=%d failures=%d\n", size,
               call_how == CALL_WAIT ? " call=wait" : call_how == CALL_TEST ? " call=test"
               : call_how == CALL_PERSISTENT ? " call=persistent" : "", checks,
               total_fail);
    if (hash_file && hash_file != stdout) fclose(hash_file);
    MPI_Finalize();
    return total_fail ? 1 : 0;
}
