/*
 * sparcml_bench.c -- the measurement rig of sparcml (bench/RESULTS.md).
 *
 * A plain MPI program: built with mpicc.mpich, never linked to libsparcml
 * (only the header-only helpers of ../include/sparcml.h are used); run it
 * with the shim preloaded like any application:
 *
 *   mpicc.mpich -O2 -std=c11 bench/sparcml_bench.c -o sparcml_bench -lm
 *   mpiexec.mpich -n 8 env LD_PRELOAD=build/src/.libs/libsparcml.so \
 *       SPARCML_ALGORITHM=auto ./sparcml_bench --n 16777216 --density 1e-3
 *
 * Modes:
 *   (default)    time the methods of --methods (dense, allgather, sparcml)
 *                on one problem; one CSV line per method on rank 0.
 *   --bytes      only warm-up plus one tagged call, for a run with
 *                SPARCML_VERBOSE=1: the caller parses "bytes_sent=" and
 *                "algorithm=" from the library's last verbose line.
 *   --overhead   untagged MPI_FLOAT MPI_Allreduce, 8 B .. 1 MiB (x4), median
 *                per-call time over many batches (run once with the shim and
 *                once with an empty preload: "overhead" lines); also, in the
 *                same process, MPI_Allreduce against PMPI_Allreduce in
 *                alternating batches ("inproc" lines: median ratio of the
 *                pairs, i.e. what the shim adds with machine noise cancelled).
 *   --agree      latency of a tiny tagged call (N=8, k=1) against a plain
 *                8-byte MPI_Allreduce and an emulation of the agreement
 *                step (AGREE_FIELDS int64 with a user-defined op).
 *   --cpu        also report, per method, how busy the whole machine was
 *                while it ran (rank 0 reads /proc/stat around each timed
 *                call: busy jiffies over all jiffies, summed over the
 *                repetitions; 10 ms granularity, so use many --reps): a
 *                "# cpu" line per method.  Shows whether a run is bound by
 *                the machine's cores rather than the (emulated) network.
 *   --cold       time every method cold and warm: in each repetition the
 *                application first reads and writes every word of a
 *                64 MiB buffer (--cold-mib M: M MiB), untimed, as a
 *                training step's computation would between two calls; then
 *                the method's call is timed ("<method>_cold" rows), and
 *                right after it the same call once more ("<method>_warm"
 *                rows: its data and code just used).
 *   --smoke      tiny problems, all patterns, float and double, checks that
 *                the tagged result equals the dense one bit for bit; exit
 *                status 1 on any difference or error.
 *
 * Methods:
 *   dense      MPI_Allreduce(MPI_FLOAT or MPI_DOUBLE) of the densified vector
 *   allgather  the baseline frameworks use for sparse tensors: MPI_Allgather
 *              of the counts, MPI_Allgatherv of the (4-byte) indices and of
 *              the values, then a local merge into a sparse result (sorted
 *              merge-add) or a dense one (scatter-add), whichever is smaller
 *   sparcml    MPI_Allreduce on the tagged datatype; which algorithm runs is
 *              the library's business (SPARCML_ALGORITHM, set by the caller);
 *              the CSV method is "sparcml_" + $BENCH_LABEL if set, else
 *              "sparcml_" + $SPARCML_ALGORITHM (or "sparcml_auto")
 *
 * A time is, for every repetition, the maximum over ranks of one call
 * preceded by an MPI_Barrier; the CSV reports the median and the minimum
 * over repetitions.  Every method's result is verified (checksum against
 * the inputs; with --smoke the full vector against the dense result).
 *
 * CSV columns (--header prints them):
 *   method,P,N,density,pattern,vtype,median_s,min_s,bytes_sent_per_rank,
 *   bound_disjoint_s,bound_identical_s,bound_applies,k,reps
 * bytes_sent_per_rank is rank 0's count: for dense what a bandwidth-optimal
 * allreduce sends, 2(P-1)/P N vs (the library's convention); for allgather
 * what a ring allgather sends (everything but the own block); for sparcml
 * "NA" (see --bytes).  The bounds are Lemma 5.1 of the SparCML paper with
 * --alpha-us and --beta-ns: log2(P) a + (P-1) k b e (disjoint indices) and
 * log2(P) a + 2 (P-1)/P k b e (identical), e = index + value bytes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "../include/sparcml.h"

enum { PAT_RANDOM, PAT_IDENTICAL, PAT_DISJOINT };
static const char *const pattern_names[] = {"random", "identical", "disjoint"};
enum { M_DENSE = 1, M_ALLGATHER = 2, M_SPARCML = 4 };

typedef struct {
    uint64_t N;
    double density;
    int64_t k_opt; /* --k overrides --density */
    int pattern, vtype, reps, warmup;
    int methods;
    double alpha_us, beta_ns;
    int mode_bytes, mode_overhead, mode_agree, mode_smoke, header, cpu;
    uint64_t seed;
    double min_bytes, max_bytes;
    int batches;
    int quiet;
    uint64_t cold_bytes; /* --cold: the buffer overwritten before a cold call (0: none) */
} options;

static int rank, nprocs;

static void die0(const char *msg)
{
    if (rank == 0) fprintf(stderr, "sparcml_bench: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void *xalloc(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!p) {
        fprintf(stderr, "sparcml_bench: rank %d: out of memory (%zu bytes)\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* SMPI build only (scripts/smpi_sweep.sh compiles with
 * -DSPARCML_BENCH_SMPI_SHARED): SMPI runs every rank in one process, so
 * the large benchmark buffers whose contents decide nothing (the dense
 * method's input and output, the allgather baseline's dense result, the
 * dense part of the sparcml result) use SMPI's shared allocations: their
 * pages are one file mapped again and again, contents garbage, message
 * sizes unchanged (SMPI also skips copying shared bytes).  What steers the
 * library stays real: the input stream, every library buffer, and in the
 * result buffer the first BENCH_SHARED_PRIVATE_KB (default 1024) KiB
 * (header and a sparse result up to that size) and the rank's own 1/P
 * slice of a dense result (the library counts its nonzeros to learn the
 * union size).  Results that lie in shared memory are not verified
 * (result_checkable). */
#ifdef SPARCML_BENCH_SMPI_SHARED
static size_t private_prefix(void)
{
    const char *e = getenv("BENCH_SHARED_PRIVATE_KB");
    return (e && *e ? (size_t)atol(e) : 1024) * 1024;
}

static void *xalloc_shared(size_t bytes)
{
    void *p = SMPI_SHARED_MALLOC((bytes + 63) & ~(size_t)63);
    if (!p) {
        fprintf(stderr, "sparcml_bench: rank %d: out of memory (%zu bytes)\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* The sparcml result buffer: shared but for [0, prefix) and the own slice
 * of a dense result (page-rounded outwards by SMPI). */
static void *xalloc_result(size_t bytes, uint64_t N, size_t vs)
{
    uint64_t base = N / (uint64_t)nprocs, extra = N % (uint64_t)nprocs, r = (uint64_t)rank;
    uint64_t lo = r * base + (r < extra ? r : extra), hi = lo + base + (r < extra);
    size_t pre = private_prefix(), a = SPARCML_HEADER_BYTES + lo * vs, b = SPARCML_HEADER_BYTES + hi * vs;
    size_t off[4];
    int n = 0;
    void *p;
    if (a < pre) a = pre;
    if (b < pre) b = pre;
    if (pre < a) { off[2 * n] = pre; off[2 * n + 1] = a; n++; }
    if (b < bytes) { off[2 * n] = b; off[2 * n + 1] = bytes; n++; }
    if (n == 0) return xalloc(bytes);
    p = SMPI_PARTIAL_SHARED_MALLOC(bytes, off, n);
    if (!p) {
        fprintf(stderr, "sparcml_bench: rank %d: out of memory (%zu bytes)\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

static void free_shared(void *p)
{
    if (p) SMPI_SHARED_FREE(p);
}
#else
#define xalloc_shared(bytes) xalloc(bytes)
#define xalloc_result(bytes, N, vs) xalloc(bytes)
#define free_shared(p) free(p)
#endif

/* ------------------------------------------------------------ random data */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct { uint64_t s; } rng;
static uint64_t rng_next(rng *r) { return mix64(r->s += 0x9e3779b97f4a7c15ull); }
static uint64_t rng_below(rng *r, uint64_t n) /* uniform in [0, n), n > 0 */
{
    uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;
    do x = rng_next(r); while (x >= lim);
    return x % n;
}

/* k distinct numbers of [0, range), sorted, drawn with a bitmap. */
static void pick_sorted(uint64_t range, uint64_t k, uint64_t seed, uint64_t *out)
{
    uint64_t words = (range + 63) / 64, n = 0, want, i;
    uint64_t *bits = calloc(words ? words : 1, 8);
    int complement = k > range / 2;
    rng r = {seed};
    if (!bits) die0("out of memory");
    want = complement ? range - k : k;
    while (n < want) {
        uint64_t x = rng_below(&r, range);
        if (!(bits[x / 64] >> (x % 64) & 1)) {
            bits[x / 64] |= 1ull << (x % 64);
            n++;
        }
    }
    n = 0;
    for (i = 0; i < range; i++)
        if (((bits[i / 64] >> (i % 64)) & 1) != (uint64_t)complement) out[n++] = i;
    free(bits);
}

/* This rank's problem: k sorted indices and integer values 1..8 (all sums
 * exact in float and double, whatever the order of addition). */
typedef struct {
    uint64_t N, k;
    int vtype;
    size_t vs;
    unsigned iw;
    uint64_t *idx;
    void *val;
    MPI_Datatype mpi_vt;
} problem;

static double get_val(const problem *p, const void *v, uint64_t i)
{
    return p->vtype == SPARCML_FLOAT ? (double)((const float *)v)[i] : ((const double *)v)[i];
}

static void set_val(const problem *p, void *v, uint64_t i, double x)
{
    if (p->vtype == SPARCML_FLOAT) ((float *)v)[i] = (float)x;
    else ((double *)v)[i] = x;
}

static int make_problem(problem *p, const options *o, uint64_t N, double density, int64_t k_opt,
                        int pattern, int vtype, uint64_t seed)
{
    uint64_t k, i, range, pseed;
    rng r;
    memset(p, 0, sizeof *p);
    p->N = N;
    p->vtype = vtype;
    p->vs = sparcml_value_size(vtype);
    p->iw = sparcml_index_width(N);
    p->mpi_vt = vtype == SPARCML_FLOAT ? MPI_FLOAT : MPI_DOUBLE;
    k = k_opt >= 0 ? (uint64_t)k_opt : (uint64_t)llround(density * (double)N);
    if (k == 0 && density > 0 && k_opt < 0) k = 1;
    if (k > N) return -1;
    range = pattern == PAT_DISJOINT ? N / (uint64_t)nprocs : N;
    if (k > range) return -1;
    p->k = k;
    p->idx = xalloc((k ? k : 1) * sizeof(uint64_t));
    p->val = xalloc((k ? k : 1) * p->vs);
    pseed = pattern == PAT_IDENTICAL ? seed : mix64(seed ^ (0x1000003ull * (uint64_t)(rank + 1)));
    pick_sorted(range, k, pseed, p->idx);
    if (pattern == PAT_DISJOINT)
        for (i = 0; i < k; i++) p->idx[i] = p->idx[i] * (uint64_t)nprocs + (uint64_t)rank;
    r.s = mix64(seed + 77 + (uint64_t)rank);
    for (i = 0; i < k; i++) set_val(p, p->val, i, (double)(1 + rng_below(&r, 8)));
    (void)o;
    return 0;
}

static void free_problem(problem *p)
{
    free(p->idx);
    free(p->val);
}

/* Checksum of a set of (index, value) entries: sum of (index+1)*value as
 * wrap-around integers (values are small integers).  The checksum of a sum
 * equals the sum of the checksums. */
static uint64_t ck_entry(uint64_t i, double v) { return (i + 1) * (uint64_t)(int64_t)v; }

static uint64_t ck_pairs(const problem *p, const uint64_t *idx, const void *val, uint64_t n)
{
    uint64_t c = 0, i;
    for (i = 0; i < n; i++) c += ck_entry(idx[i], get_val(p, val, i));
    return c;
}

static uint64_t ck_dense(const problem *p, const void *dense)
{
    uint64_t c = 0, i;
    for (i = 0; i < p->N; i++) {
        double v = get_val(p, dense, i);
        if (v != 0) c += ck_entry(i, v);
    }
    return c;
}

static uint64_t ck_stream(const problem *p, const void *buf)
{
    sparcml_header h;
    uint64_t c = 0, i, j;
    char v[8];
    if (sparcml_stream_header(buf, &h) != SPARCML_OK) return 0xbadull;
    for (i = 0; i < h.nnz; i++) {
        double x;
        sparcml_stream_entry(buf, i, &j, v);
        x = p->vtype == SPARCML_FLOAT ? (double)*(float *)(void *)v : *(double *)(void *)v;
        if (x != 0) c += ck_entry(j, x);
    }
    return c;
}

/* ------------------------------------------------------------ methods */

typedef struct {
    problem *p;
    /* dense */
    void *dense_in, *dense_out;
    /* allgather */
    int *counts, *displs;
    uint32_t *my_idx32, *g_idx, *t_idx;
    void *g_val, *t_val, *ag_dense;
    uint64_t ag_nnz;            /* sparse result: entries in g_idx/g_val (or t_*) */
    uint32_t *ag_res_idx;
    void *ag_res_val;
    int ag_result_dense;
    uint64_t ag_bytes;
    /* sparcml */
    MPI_Datatype stype;
    MPI_Count count;
    void *sbuf, *rbuf;
} bench_state;

static void densify(const problem *p, void *dense)
{
    memset(dense, 0, p->N * p->vs);
    for (uint64_t i = 0; i < p->k; i++)
        set_val(p, dense, p->idx[i], get_val(p, p->val, i));
}

static int run_dense(bench_state *b)
{
    return MPI_Allreduce(b->dense_in, b->dense_out, (int)b->p->N, b->p->mpi_vt, MPI_SUM,
                         MPI_COMM_WORLD);
}

/* Merge-add two sorted runs; returns the length of the result. */
#define DEFINE_MERGE(NAME, T)                                                                   \
    static uint64_t NAME(const uint32_t *ai, const T *av, uint64_t na, const uint32_t *bi,     \
                         const T *bv, uint64_t nb, uint32_t *oi, T *ov)                        \
    {                                                                                           \
        uint64_t a = 0, c = 0, n = 0;                                                           \
        while (a < na && c < nb) {                                                              \
            if (ai[a] < bi[c]) { oi[n] = ai[a]; ov[n++] = av[a++]; }                            \
            else if (bi[c] < ai[a]) { oi[n] = bi[c]; ov[n++] = bv[c++]; }                       \
            else { oi[n] = ai[a]; ov[n++] = av[a++] + bv[c++]; }                                \
        }                                                                                       \
        while (a < na) { oi[n] = ai[a]; ov[n++] = av[a++]; }                                    \
        while (c < nb) { oi[n] = bi[c]; ov[n++] = bv[c++]; }                                    \
        return n;                                                                               \
    }
DEFINE_MERGE(merge_f, float)
DEFINE_MERGE(merge_d, double)

#define DEFINE_SCATTER(NAME, T)                                                      \
    static void NAME(T *dense, const uint32_t *idx, const T *val, uint64_t n)         \
    {                                                                                 \
        for (uint64_t i = 0; i < n; i++) dense[idx[i]] += val[i];                     \
    }
DEFINE_SCATTER(scatter_f, float)
DEFINE_SCATTER(scatter_d, double)

static int run_allgather(bench_state *b)
{
    problem *p = b->p;
    int P = nprocs, k = (int)p->k, rc, r;
    uint64_t total = 0;
    size_t vs = p->vs;
    rc = MPI_Allgather(&k, 1, MPI_INT, b->counts, 1, MPI_INT, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return rc;
    for (r = 0; r < P; r++) {
        b->displs[r] = (int)total;
        total += (uint64_t)b->counts[r];
    }
    rc = MPI_Allgatherv(b->my_idx32, k, MPI_UINT32_T, b->g_idx, b->counts, b->displs,
                        MPI_UINT32_T, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return rc;
    rc = MPI_Allgatherv(p->val, k, p->mpi_vt, b->g_val, b->counts, b->displs, p->mpi_vt,
                        MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return rc;
    /* What a ring allgather sends: everything but the own block. */
    b->ag_bytes = (uint64_t)(P - 1) * sizeof(int) + (total - (uint64_t)k) * (4 + vs);
    b->ag_result_dense = total * (4 + vs) >= p->N * vs;
    if (b->ag_result_dense) {
        memset(b->ag_dense, 0, p->N * vs);
        if (p->vtype == SPARCML_FLOAT) scatter_f(b->ag_dense, b->g_idx, b->g_val, total);
        else scatter_d(b->ag_dense, b->g_idx, b->g_val, total);
        return MPI_SUCCESS;
    }
    {
        /* Pairwise merge tree over the P sorted runs (ping-pong buffers). */
        uint64_t start[1024 + 1], len[1024];
        uint32_t *si = b->g_idx, *di = b->t_idx;
        char *sv = b->g_val, *dv = b->t_val;
        int runs = P;
        for (r = 0; r < P; r++) {
            start[r] = (uint64_t)b->displs[r];
            len[r] = (uint64_t)b->counts[r];
        }
        while (runs > 1) {
            uint64_t out = 0;
            int nr = 0;
            for (r = 0; r < runs; r += 2) {
                uint64_t n;
                if (r + 1 < runs) {
                    if (p->vtype == SPARCML_FLOAT)
                        n = merge_f(si + start[r], (float *)(void *)sv + start[r], len[r],
                                    si + start[r + 1], (float *)(void *)sv + start[r + 1],
                                    len[r + 1], di + out, (float *)(void *)dv + out);
                    else
                        n = merge_d(si + start[r], (double *)(void *)sv + start[r], len[r],
                                    si + start[r + 1], (double *)(void *)sv + start[r + 1],
                                    len[r + 1], di + out, (double *)(void *)dv + out);
                } else {
                    n = len[r];
                    memcpy(di + out, si + start[r], n * 4);
                    memcpy(dv + out * vs, sv + start[r] * vs, n * vs);
                }
                start[nr] = out;
                len[nr++] = n;
                out += n;
            }
            runs = nr;
            { uint32_t *t = si; si = di; di = t; }
            { char *t = sv; sv = dv; dv = t; }
        }
        b->ag_res_idx = si + start[0];
        b->ag_res_val = sv + start[0] * vs;
        b->ag_nnz = len[0];
    }
    return MPI_SUCCESS;
}

static int run_sparcml(bench_state *b)
{
    return MPI_Allreduce(b->sbuf, b->rbuf, (int)b->count, b->stype, MPI_SUM, MPI_COMM_WORLD);
}

static void setup_state(bench_state *b, problem *p, int methods)
{
    memset(b, 0, sizeof *b);
    b->p = p;
    if (methods & M_DENSE) {
        b->dense_in = xalloc_shared(p->N * p->vs);
        b->dense_out = xalloc_shared(p->N * p->vs);
        densify(p, b->dense_in);
    }
    if (methods & M_ALLGATHER) {
        uint64_t total = p->k * (uint64_t)nprocs; /* every rank has k entries */
        b->counts = xalloc(sizeof(int) * (size_t)nprocs);
        b->displs = xalloc(sizeof(int) * (size_t)nprocs);
        b->my_idx32 = xalloc((p->k ? p->k : 1) * 4);
        for (uint64_t i = 0; i < p->k; i++) b->my_idx32[i] = (uint32_t)p->idx[i];
        b->g_idx = xalloc((total ? total : 1) * 4);
        b->g_val = xalloc((total ? total : 1) * p->vs);
        if (total * (4 + p->vs) >= p->N * p->vs) {
            b->ag_dense = xalloc_shared(p->N * p->vs);
        } else {
            b->t_idx = xalloc((total ? total : 1) * 4);
            b->t_val = xalloc((total ? total : 1) * p->vs);
        }
    }
    if (methods & M_SPARCML) {
        if (sparcml_type_create(p->vtype, &b->stype) != MPI_SUCCESS) die0("sparcml_type_create");
        b->count = sparcml_capacity(p->N, p->vtype);
        if (b->count > 0x7fffffff) die0("N too large for an int count");
        b->sbuf = xalloc((size_t)b->count * 8);
        b->rbuf = xalloc_result((size_t)b->count * 8, p->N, p->vs);
        if (sparcml_stream_from_sorted(b->sbuf, b->count, p->N, p->vtype, p->k, p->idx, p->val)
            != SPARCML_OK)
            die0("sparcml_stream_from_sorted failed");
    }
}

static void free_state(bench_state *b)
{
    free_shared(b->dense_in); free_shared(b->dense_out);
    free(b->counts); free(b->displs); free(b->my_idx32); free(b->g_idx); free(b->g_val);
    free(b->t_idx); free(b->t_val); free_shared(b->ag_dense);
    free(b->sbuf); free_shared(b->rbuf);
    if (b->stype != MPI_DATATYPE_NULL && b->stype != 0) MPI_Type_free(&b->stype);
}

/* Whether a method's result lies in real (not SMPI-shared) memory: always,
 * but in the SMPI build with shared buffers (see xalloc_shared). */
static int result_checkable(bench_state *b, int m)
{
#ifdef SPARCML_BENCH_SMPI_SHARED
    sparcml_header h;
    if (m == M_DENSE) return 0;
    if (m == M_ALLGATHER) return !b->ag_result_dense;
    if (sparcml_stream_header(b->rbuf, &h) != SPARCML_OK) return 1; /* reported as wrong */
    return h.format != SPARCML_DENSE && sparcml_sparse_bytes(h.dim, h.value_type, h.nnz) <= private_prefix();
#else
    (void)b; (void)m;
    return 1;
#endif
}

/* Checksum of a method's result (0xbad on a malformed stream). */
static uint64_t result_ck(bench_state *b, int m)
{
    problem *p = b->p;
    if (m == M_DENSE) return ck_dense(p, b->dense_out);
    if (m == M_SPARCML) return ck_stream(p, b->rbuf);
    if (b->ag_result_dense) return ck_dense(p, b->ag_dense);
    {
        uint64_t c = 0;
        for (uint64_t i = 0; i < b->ag_nnz; i++)
            c += ck_entry(b->ag_res_idx[i], get_val(p, b->ag_res_val, i));
        return c;
    }
}

/* The full result of a method as a dense vector (for --smoke). */
static void result_dense(bench_state *b, int m, void *out)
{
    problem *p = b->p;
    if (m == M_DENSE) { memcpy(out, b->dense_out, p->N * p->vs); return; }
    if (m == M_SPARCML) {
        if (sparcml_stream_to_dense(b->rbuf, out, p->N) != SPARCML_OK)
            memset(out, 0xff, p->N * p->vs);
        return;
    }
    if (b->ag_result_dense) { memcpy(out, b->ag_dense, p->N * p->vs); return; }
    memset(out, 0, p->N * p->vs);
    for (uint64_t i = 0; i < b->ag_nnz; i++)
        set_val(p, out, b->ag_res_idx[i], get_val(p, b->ag_res_val, i));
}

static int run_method(bench_state *b, int m)
{
    return m == M_DENSE ? run_dense(b) : m == M_ALLGATHER ? run_allgather(b) : run_sparcml(b);
}

/* ------------------------------------------------------------ timing */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Busy and total jiffies of all CPUs so far (/proc/stat), for --cpu. */
static void cpu_jiffies(unsigned long long *busy, unsigned long long *total)
{
    unsigned long long f[10] = {0};
    FILE *fp = fopen("/proc/stat", "r");
    *busy = *total = 0;
    if (!fp) return;
    if (fscanf(fp, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1], &f[2],
               &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9]) >= 8) {
        for (int i = 0; i < 8; i++) *total += f[i]; /* guest time is inside user */
        *busy = *total - f[3] - f[4];                /* less idle and iowait */
    }
    fclose(fp);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static const char *sparcml_label(void)
{
    static char buf[64];
    /* BENCH_LABEL (not a SPARCML_* name: the library rejects unknown ones)
     * names a run, e.g. "auto_defaults"; otherwise the algorithm. */
    const char *a = getenv("BENCH_LABEL");
    size_t i;
    if (!a || !*a) a = getenv("SPARCML_ALGORITHM");
    if (!a || !*a) a = "auto";
    snprintf(buf, sizeof buf, "sparcml_%s", a);
    for (i = 0; buf[i]; i++) buf[i] = (char)tolower((unsigned char)buf[i]);
    return buf;
}

static const char *method_name(int m)
{
    return m == M_DENSE ? "dense" : m == M_ALLGATHER ? "allgather" : sparcml_label();
}

static void print_header(void)
{
    printf("method,P,N,density,pattern,vtype,median_s,min_s,bytes_sent_per_rank,"
           "bound_disjoint_s,bound_identical_s,bound_applies,k,reps\n");
}

static int check_rc(int rc, const char *what)
{
    int all;
    MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (all != MPI_SUCCESS) {
        if (rank == 0) {
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0;
            MPI_Error_string(all, msg, &len);
            fprintf(stderr, "sparcml_bench: %s failed: %s%s\n", what, msg,
                    strcmp(what, "sparcml") == 0 ? " (is libsparcml.so preloaded?)" : "");
        }
        return 1;
    }
    return 0;
}

/* One call of method m, preceded by a barrier: its time is the slowest
 * rank's (into *out; --cpu adds the machine's busy and total jiffies).
 * Returns nonzero on an error (reported). */
static int timed_call(const options *o, bench_state *b, int m, double *out, unsigned long long *busy,
                      unsigned long long *total)
{
    double t0, dt;
    unsigned long long b0 = 0, t0j = 0, b1, t1j;
    int rc;
    MPI_Barrier(MPI_COMM_WORLD);
    if (o->cpu && rank == 0) cpu_jiffies(&b0, &t0j);
    t0 = MPI_Wtime();
    rc = run_method(b, m);
    dt = MPI_Wtime() - t0;
    if (o->cpu) {
        MPI_Barrier(MPI_COMM_WORLD); /* the last rank is done too */
        if (rank == 0) {
            cpu_jiffies(&b1, &t1j);
            *busy += b1 - b0;
            *total += t1j - t0j;
        }
    }
    if (check_rc(rc, m == M_SPARCML ? "sparcml" : method_name(m))) return 1;
    MPI_Allreduce(&dt, out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return 0;
}

/* --cold: what an application's computation between two calls does to the
 * caches, untimed: read and write every word of a buffer of `bytes` (kept
 * across calls, so its pages are mapped once). */
static uint64_t cold_sink;
static void overwrite_caches(uint64_t bytes)
{
    static uint64_t *buf;
    static uint64_t words, pass;
    if (!buf) {
        words = bytes / 8;
        buf = xalloc(words * 8);
        memset(buf, 0, words * 8);
    }
    pass++;
    for (uint64_t i = 0; i < words; i++) buf[i] = buf[i] * 3 + pass;
    cold_sink += buf[pass % words];
}

/* One CSV row of method `name` + `suffix`: median and minimum of t. */
static void print_row(const options *o, const problem *p, const char *name, const char *suffix, double *t,
                      int reps, const char *bytes, double bd, double bi)
{
    double med = median(t, reps);
    printf("%s%s,%d,%llu,%g,%s,%s,%.6e,%.6e,%s,%.6e,%.6e,%s,%llu,%d\n", name, suffix, nprocs,
           (unsigned long long)p->N, o->k_opt >= 0 ? (double)p->k / (double)p->N : o->density,
           pattern_names[o->pattern], sparcml_value_type_name(o->vtype), med, t[0], bytes, bd, bi,
           o->pattern == PAT_IDENTICAL ? "identical" : "disjoint", (unsigned long long)p->k, reps);
}

static int mode_timing(const options *o)
{
    problem p;
    bench_state b;
    static const int order[] = {M_DENSE, M_ALLGATHER, M_SPARCML};
    double *t[3], *tc[3], e, L, bd, bi;
    unsigned long long cpu_busy[3] = {0}, cpu_total[3] = {0};
    uint64_t ck_expect, ck_local;
    int m, r, bad = 0, reps = o->reps;
    int methods = o->mode_bytes ? M_SPARCML : o->methods;

    if (make_problem(&p, o, o->N, o->density, o->k_opt, o->pattern, o->vtype, o->seed) != 0)
        die0("k exceeds N (or N/P for the disjoint pattern)");
    setup_state(&b, &p, methods);
    ck_local = ck_pairs(&p, p.idx, p.val, p.k);
    MPI_Allreduce(&ck_local, &ck_expect, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);

    for (m = 0; m < 3; m++) {
        t[m] = xalloc(sizeof(double) * (size_t)(reps > 0 ? reps : 1));
        tc[m] = xalloc(sizeof(double) * (size_t)(reps > 0 ? reps : 1));
    }
    for (r = 0; r < o->warmup; r++)
        for (m = 0; m < 3; m++)
            if (methods & order[m])
                if (check_rc(run_method(&b, order[m]), order[m] == M_SPARCML ? "sparcml" : method_name(order[m]))) return 1;
    if (o->mode_bytes) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) { printf("# bytes-call\n"); fflush(stdout); }
        if (check_rc(run_sparcml(&b), "sparcml")) return 1;
        MPI_Barrier(MPI_COMM_WORLD);
        reps = 0;
    }
    for (r = 0; r < reps; r++) {
        for (m = 0; m < 3; m++) {
            if (!(methods & order[m])) continue;
            if (o->cold_bytes) {
                overwrite_caches(o->cold_bytes);
                if (timed_call(o, &b, order[m], &tc[m][r], &cpu_busy[m], &cpu_total[m])) return 1;
            }
            if (timed_call(o, &b, order[m], &t[m][r], &cpu_busy[m], &cpu_total[m])) return 1;
        }
    }
    /* Verify every method's (last) result against the inputs. */
    for (m = 0; m < 3; m++) {
        uint64_t c;
        int wrong, any;
        if (!(methods & order[m]) || (o->warmup + (o->mode_bytes ? 1 : reps)) == 0) continue;
        /* QSGD results are inexact by design (their error bound and rank
         * consistency are tested in tests/scripts/qsgd.sh): not compared. */
        if (order[m] == M_SPARCML && getenv("SPARCML_QSGD_BITS") && atoi(getenv("SPARCML_QSGD_BITS")) > 0)
            continue;
        /* SMPI shared buffers (xalloc_shared): a result in shared memory
         * is garbage by design, so not compared; counted on stderr. */
        if (!result_checkable(&b, order[m])) {
            if (rank == 0)
                fprintf(stderr, "sparcml_bench: %s: result not verified (SMPI shared buffer)\n",
                        method_name(order[m]));
            c = ck_expect;
        } else
            c = result_ck(&b, order[m]);
        wrong = c != ck_expect;
        MPI_Allreduce(&wrong, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any) {
            if (rank == 0)
                fprintf(stderr, "sparcml_bench: %s: WRONG RESULT (checksum mismatch)\n",
                        method_name(order[m]));
            bad = 1;
        }
    }

    e = (double)(p.iw + p.vs);
    L = nprocs > 1 ? log2((double)nprocs) : 0;
    bd = L * o->alpha_us * 1e-6 + (nprocs - 1) * (double)p.k * o->beta_ns * 1e-9 * e;
    bi = L * o->alpha_us * 1e-6 + 2.0 * (nprocs - 1) / nprocs * (double)p.k * o->beta_ns * 1e-9 * e;
    if (rank == 0 && reps > 0) {
        if (o->header) print_header();
        for (m = 0; m < 3; m++) {
            char bytes[32];
            if (!(methods & order[m])) continue;
            if (order[m] == M_DENSE)
                snprintf(bytes, sizeof bytes, "%llu",
                         (unsigned long long)(2 * (uint64_t)(nprocs - 1) * p.N * p.vs / (uint64_t)nprocs));
            else if (order[m] == M_ALLGATHER)
                snprintf(bytes, sizeof bytes, "%llu", (unsigned long long)b.ag_bytes);
            else
                snprintf(bytes, sizeof bytes, "NA");
            if (o->cold_bytes) {
                print_row(o, &p, method_name(order[m]), "_cold", tc[m], reps, bytes, bd, bi);
                print_row(o, &p, method_name(order[m]), "_warm", t[m], reps, bytes, bd, bi);
            } else {
                print_row(o, &p, method_name(order[m]), "", t[m], reps, bytes, bd, bi);
            }
        }
        for (m = 0; m < 3 && o->cpu; m++)
            if (methods & order[m])
                printf("# cpu method=%s busy=%.3f jiffies=%llu\n", method_name(order[m]),
                       cpu_total[m] ? (double)cpu_busy[m] / (double)cpu_total[m] : 0.0, cpu_total[m]);
        fflush(stdout);
    }
    for (m = 0; m < 3; m++) {
        free(t[m]);
        free(tc[m]);
    }
    free_state(&b);
    free_problem(&p);
    return bad;
}

/* ------------------------------------------------------------ --smoke */

static int mode_smoke(const options *o)
{
    static const struct { uint64_t N; double d; } cases[] = {
        {1, 1.0}, {7, 0.3}, {64, 0.1}, {1000, 0.001}, {1000, 0.02}, {1000, 0.3},
        {4099, 0.12}, {4099, 0.5}, {20000, 0.01},
    };
    int ncases = (int)(sizeof cases / sizeof cases[0]), done = 0, failed = 0;
    for (int c = 0; c < ncases; c++)
        for (int pat = 0; pat < 3; pat++)
            for (int vt = SPARCML_FLOAT; vt <= SPARCML_DOUBLE; vt++) {
                problem p;
                bench_state b;
                void *ref, *got;
                int bad = 0, any, m;
                if (make_problem(&p, o, cases[c].N, cases[c].d, -1, pat, vt,
                                 o->seed + (uint64_t)c * 131 + (uint64_t)pat) != 0)
                    continue; /* disjoint needs k <= N/P */
                setup_state(&b, &p, M_DENSE | M_ALLGATHER | M_SPARCML);
                for (int r = 0; r < (o->reps < 3 ? o->reps : 3); r++)
                    for (m = M_DENSE; m <= M_SPARCML; m <<= 1)
                        if (check_rc(run_method(&b, m), m == M_SPARCML ? "sparcml" : method_name(m)))
                            return 1;
                ref = xalloc(p.N * p.vs);
                got = xalloc(p.N * p.vs);
                result_dense(&b, M_DENSE, ref);
                for (m = M_ALLGATHER; m <= M_SPARCML; m <<= 1) {
                    result_dense(&b, m, got);
                    if (memcmp(ref, got, p.N * p.vs) != 0) {
                        fprintf(stderr, "sparcml_bench: smoke: rank %d: %s differs from dense "
                                "(P=%d N=%llu d=%g %s %s)\n", rank, method_name(m), nprocs,
                                (unsigned long long)p.N, cases[c].d, pattern_names[pat],
                                sparcml_value_type_name(vt));
                        bad = 1;
                    }
                }
                {
                    uint64_t loc = ck_pairs(&p, p.idx, p.val, p.k), all;
                    MPI_Allreduce(&loc, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
                    if (result_ck(&b, M_DENSE) != all) {
                        fprintf(stderr, "sparcml_bench: smoke: rank %d: dense result checksum wrong\n", rank);
                        bad = 1;
                    }
                }
                MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
                failed += any;
                done++;
                free(ref);
                free(got);
                free_state(&b);
                free_problem(&p);
            }
    if (rank == 0)
        printf("smoke: %s: %d cases, %d failed (P=%d, %s)\n", failed ? "FAILED" : "ok", done, failed,
               nprocs, sparcml_label());
    return failed ? 1 : 0;
}

/* ------------------------------------------------------------ --overhead, --agree */

/* Median (and minimum) over `batches` of the per-call time of `calls`
 * back-to-back calls of fn, each batch after a barrier, max over ranks. */
typedef int (*call_fn)(void *ctx);
static void time_batches(call_fn fn, void *ctx, int calls, int batches, double *med, double *mn)
{
    double *t = xalloc(sizeof(double) * (size_t)batches);
    for (int i = 0; i < calls * 4 + 10; i++) fn(ctx); /* warm-up */
    for (int bt = 0; bt < batches; bt++) {
        double t0, dt, mx;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int i = 0; i < calls; i++) fn(ctx);
        dt = (MPI_Wtime() - t0) / calls;
        MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        t[bt] = mx;
    }
    *med = median(t, batches);
    *mn = t[0];
    free(t);
}

typedef struct { float *in, *out; int n; } plain_ctx;
static int plain_call(void *v)
{
    plain_ctx *c = v;
    return MPI_Allreduce(c->in, c->out, c->n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

/* Calls per batch: about 1 MiB of payload per batch, 4 .. 256 calls. */
static int calls_for(double bytes)
{
    double c = 1048576.0 / bytes;
    return c < 4 ? 4 : c > 256 ? 256 : (int)c;
}

static int pmpi_call(void *v)
{
    plain_ctx *c = v;
    return PMPI_Allreduce(c->in, c->out, c->n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

/* The same untagged call through MPI_Allreduce (the shim, when preloaded)
 * and straight to PMPI_Allreduce (the vendor), in alternating batches of one
 * process: the shim's cost with machine noise mostly cancelled.  Prints
 * the medians of both and the median of the per-pair ratios. */
static void inproc_pairs(plain_ctx *c, double sz, int calls, int batches)
{
    double *ratio = xalloc(sizeof(double) * (size_t)batches);
    double *tm = xalloc(sizeof(double) * (size_t)batches), *tp = xalloc(sizeof(double) * (size_t)batches);
    for (int i = 0; i < calls * 4 + 10; i++) { plain_call(c); pmpi_call(c); }
    for (int bt = 0; bt < batches; bt++) {
        double t[2], mx[2];
        for (int w = 0; w < 2; w++) {
            /* alternate which one goes first, so neither always follows the barrier */
            call_fn fn = (w ^ (bt & 1)) ? pmpi_call : plain_call;
            double t0;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            for (int i = 0; i < calls; i++) fn(c);
            t[fn == pmpi_call] = (MPI_Wtime() - t0) / calls;
        }
        MPI_Allreduce(t, mx, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        tm[bt] = mx[0];
        tp[bt] = mx[1];
        ratio[bt] = mx[0] / mx[1];
    }
    if (rank == 0)
        printf("inproc,%d,%.0f,%.6e,%.6e,%.4f,%d,%d\n", nprocs, sz, median(tm, batches),
               median(tp, batches), median(ratio, batches), calls, batches);
    free(ratio);
    free(tm);
    free(tp);
}

static int mode_overhead(const options *o)
{
    plain_ctx c;
    size_t maxn = (size_t)(o->max_bytes / 4) + 1;
    c.in = xalloc(maxn * 4);
    c.out = xalloc(maxn * 4);
    for (size_t i = 0; i < maxn; i++) c.in[i] = 1.0f;
    if (rank == 0 && o->header) printf("method,P,bytes,median_s,min_s,calls_per_batch,batches\n");
    /* 8 B, 32 B, ... (x4) below max_bytes, then max_bytes itself (1 MiB). */
    for (double sz = o->min_bytes;; sz *= 4) {
        double med, mn;
        int calls;
        int last = sz >= o->max_bytes * 0.9999;
        if (last) sz = o->max_bytes;
        c.n = (int)(sz / 4);
        calls = calls_for(sz);
        time_batches(plain_call, &c, calls, o->batches, &med, &mn);
        if (rank == 0) printf("overhead,%d,%.0f,%.6e,%.6e,%d,%d\n", nprocs, sz, med, mn, calls, o->batches);
        inproc_pairs(&c, sz, calls, o->batches);
        fflush(stdout);
        if (last) break;
    }
    free(c.in);
    free(c.out);
    return 0;
}

typedef struct { MPI_Datatype t; MPI_Count count; void *s, *r; } tagged_ctx;
static int tagged_call(void *v)
{
    tagged_ctx *c = v;
    return MPI_Allreduce(c->s, c->r, (int)c->count, c->t, MPI_SUM, MPI_COMM_WORLD);
}

/* The agreement record of src/core/agree.c: 17 int64 fields. */
#define AGREE_FIELDS 17
typedef struct { MPI_Datatype t; MPI_Op op; int64_t v[AGREE_FIELDS]; } agree_ctx;
static void agree_max(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const int64_t *a = in;
    int64_t *b = inout;
    (void)dt;
    for (int i = 0; i < *len * AGREE_FIELDS; i++) if (a[i] > b[i]) b[i] = a[i];
}
static int agree_call(void *v)
{
    agree_ctx *c = v;
    return MPI_Allreduce(MPI_IN_PLACE, c->v, 1, c->t, c->op, MPI_COMM_WORLD);
}

static int mode_agree(const options *o)
{
    plain_ctx pc;
    tagged_ctx tc;
    agree_ctx ac;
    float in[2] = {1, 2}, out[2];
    uint64_t N = o->N, idx = (uint64_t)rank % N;
    float one = 1.0f;
    double med, mn;
    int calls = 64, rc;
    pc.in = in; pc.out = out; pc.n = 2;
    sparcml_type_create(SPARCML_FLOAT, &tc.t);
    tc.count = sparcml_capacity(N, SPARCML_FLOAT);
    tc.s = xalloc((size_t)tc.count * 8);
    tc.r = xalloc((size_t)tc.count * 8);
    sparcml_stream_from_sorted(tc.s, tc.count, N, SPARCML_FLOAT, 1, &idx, &one);
    MPI_Type_contiguous(AGREE_FIELDS, MPI_INT64_T, &ac.t);
    MPI_Type_commit(&ac.t);
    MPI_Op_create(agree_max, 1, &ac.op);
    memset(ac.v, 0, sizeof ac.v);
    rc = tagged_call(&tc);
    if (check_rc(rc, "sparcml")) return 1;
    if (rank == 0 && o->header) printf("method,P,N,median_s,min_s,calls_per_batch,batches\n");
    /* Interleave the three so that drift affects all alike. */
    for (int round = 0; round < 3; round++) {
        time_batches(plain_call, &pc, calls, o->batches, &med, &mn);
        if (rank == 0) printf("plain_allreduce_8B,%d,%d,%.6e,%.6e,%d,%d\n", nprocs, 2, med, mn, calls, o->batches);
        time_batches(tagged_call, &tc, calls, o->batches, &med, &mn);
        if (rank == 0) printf("%s_N%llu_k1,%d,%llu,%.6e,%.6e,%d,%d\n", sparcml_label(),
                              (unsigned long long)N, nprocs, (unsigned long long)N, med, mn, calls, o->batches);
        time_batches(agree_call, &ac, calls, o->batches, &med, &mn);
        if (rank == 0) printf("agree_emulation_userop,%d,%d,%.6e,%.6e,%d,%d\n", nprocs, AGREE_FIELDS, med, mn,
                              calls, o->batches);
        fflush(stdout);
    }
    MPI_Op_free(&ac.op);
    MPI_Type_free(&ac.t);
    MPI_Type_free(&tc.t);
    free(tc.s);
    free(tc.r);
    return 0;
}

/* ------------------------------------------------------------ main */

static void usage(void)
{
    if (rank == 0)
        fprintf(stderr,
                "usage: sparcml_bench [--n N] [--density D | --k K] [--pattern random|identical|disjoint]\n"
                "         [--vtype float|double] [--reps R>=10] [--warmup W] [--methods dense,allgather,sparcml]\n"
                "         [--alpha-us A] [--beta-ns B] [--seed S] [--header] [--cold [--cold-mib 64]]\n"
                "       sparcml_bench --bytes [problem options]   (run with SPARCML_VERBOSE=1)\n"
                "       sparcml_bench --overhead [--min-bytes 8] [--max-bytes 1048576] [--batches 200]\n"
                "       sparcml_bench --agree [--n 8] [--batches 200]\n"
                "       sparcml_bench --smoke\n");
}

static int parse_args(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        char key[64];
        const char *eq = strchr(a, '=');
        if (strncmp(a, "--", 2) != 0) return -1;
        if (eq) {
            size_t n = (size_t)(eq - a);
            if (n >= sizeof key) return -1;
            memcpy(key, a, n);
            key[n] = '\0';
            v = eq + 1;
        } else {
            snprintf(key, sizeof key, "%s", a);
        }
#define FLAG(name, field) if (strcmp(key, name) == 0) { if (v) return -1; o->field = 1; continue; }
        FLAG("--bytes", mode_bytes)
        FLAG("--overhead", mode_overhead)
        FLAG("--agree", mode_agree)
        FLAG("--smoke", mode_smoke)
        FLAG("--cpu", cpu)
        FLAG("--header", header)
#undef FLAG
        if (strcmp(key, "--cold") == 0 && !v) {
            if (!o->cold_bytes) o->cold_bytes = 64ull << 20;
            continue;
        }
        if (!v) {
            if (i + 1 >= argc) return -1;
            v = argv[++i];
        }
        char *end;
        if (strcmp(key, "--n") == 0) { o->N = strtoull(v, &end, 10); if (*end || !o->N) return -1; }
        else if (strcmp(key, "--density") == 0) { o->density = strtod(v, &end); if (*end || o->density < 0 || o->density > 1) return -1; }
        else if (strcmp(key, "--k") == 0) { o->k_opt = strtoll(v, &end, 10); if (*end || o->k_opt < 0) return -1; }
        else if (strcmp(key, "--reps") == 0) { o->reps = atoi(v); if (o->reps < 1) return -1; }
        else if (strcmp(key, "--warmup") == 0) { o->warmup = atoi(v); if (o->warmup < 0) return -1; }
        else if (strcmp(key, "--alpha-us") == 0) { o->alpha_us = strtod(v, &end); if (*end) return -1; }
        else if (strcmp(key, "--beta-ns") == 0) { o->beta_ns = strtod(v, &end); if (*end) return -1; }
        else if (strcmp(key, "--seed") == 0) { o->seed = strtoull(v, &end, 10); if (*end) return -1; }
        else if (strcmp(key, "--min-bytes") == 0) { o->min_bytes = strtod(v, &end); if (*end || o->min_bytes < 4) return -1; }
        else if (strcmp(key, "--max-bytes") == 0) { o->max_bytes = strtod(v, &end); if (*end || o->max_bytes < 4) return -1; }
        else if (strcmp(key, "--cold-mib") == 0) { o->cold_bytes = strtoull(v, &end, 10) << 20; if (*end || !o->cold_bytes) return -1; }
        else if (strcmp(key, "--batches") == 0) { o->batches = atoi(v); if (o->batches < 1) return -1; }
        else if (strcmp(key, "--pattern") == 0) {
            int p;
            for (p = 0; p < 3 && strcmp(v, pattern_names[p]) != 0; p++) {}
            if (p == 3) return -1;
            o->pattern = p;
        } else if (strcmp(key, "--vtype") == 0) {
            if (strcmp(v, "float") == 0) o->vtype = SPARCML_FLOAT;
            else if (strcmp(v, "double") == 0) o->vtype = SPARCML_DOUBLE;
            else return -1;
        } else if (strcmp(key, "--methods") == 0) {
            char buf[128], *tok, *save;
            snprintf(buf, sizeof buf, "%s", v);
            o->methods = 0;
            for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (strcmp(tok, "dense") == 0) o->methods |= M_DENSE;
                else if (strcmp(tok, "allgather") == 0) o->methods |= M_ALLGATHER;
                else if (strcmp(tok, "sparcml") == 0) o->methods |= M_SPARCML;
                else return -1;
            }
            if (!o->methods) return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    options o = {
        .N = 16777216, .density = 1e-3, .k_opt = -1, .pattern = PAT_RANDOM, .vtype = SPARCML_FLOAT,
        .reps = 10, .warmup = 1, .methods = M_DENSE | M_ALLGATHER | M_SPARCML,
        .alpha_us = 3, .beta_ns = 0.25, .seed = 12345, .min_bytes = 8, .max_bytes = 1048576,
        .batches = 200,
    };
    int rc, N_given = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    /* Errors come back as codes, so a tagged call without the shim is
     * reported (and fails the run) instead of aborting without a word. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 1; i < argc; i++) if (strncmp(argv[i], "--n", 3) == 0 && (argv[i][3] == 0 || argv[i][3] == '=')) N_given = 1;
    if (parse_args(argc, argv, &o) != 0 || o.mode_bytes + o.mode_overhead + o.mode_agree + o.mode_smoke > 1) {
        usage();
        MPI_Finalize();
        return 2;
    }
    if (o.mode_agree && !N_given) o.N = 8;
    if (!o.mode_smoke && !o.mode_overhead && !o.mode_agree && !o.mode_bytes && o.reps < 10 && rank == 0)
        fprintf(stderr, "sparcml_bench: warning: --reps %d < 10: medians are not reliable\n", o.reps);
    if (nprocs > 1024) die0("at most 1024 ranks");
    if (o.N > 0xffffffffull) die0("N must be <= 2^32 (4-byte indices)");
    if (o.mode_smoke) rc = mode_smoke(&o);
    else if (o.mode_overhead) rc = mode_overhead(&o);
    else if (o.mode_agree) rc = mode_agree(&o);
    else rc = mode_timing(&o);
    MPI_Finalize();
    return rc;
}
