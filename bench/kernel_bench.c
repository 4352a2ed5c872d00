/* kernel_bench.c -- times the hot stream kernels of src/kernel/stream.c against a
 * memcpy of the same bytes, side by side in one run (best of 5), and the
 * merge-add against its portable path (stream_force_portable: the loops
 * that run without AVX2) and against a plain two-pointer merge-add
 * (baseline_*, benchmark code only).
 *
 *   kernel_bench          CSV on stdout: kernel,case,vtype,iw,k,ns_per_entry,
 *                         memcpy_ns_per_entry,x_memcpy,x_baseline
 *                         (merge-add, scatter-add, densify, slicing, the
 *                         stream builders of include/sparcml.h, QSGD block
 *                         encode and decode, top-k selection)
 *   kernel_bench --merge  the same CSV, merge-add only
 *   kernel_bench --builders  the same CSV, the builders and QSGD only
 *   kernel_bench --topk   the same CSV, top-k selection only
 *   kernel_bench --scan   CSV: transparent mode's passes over a dense
 *                         buffer (the one-read gather, the densify sweep,
 *                         and both together) against a plain read and a
 *                         memcpy of the buffer, and against the two-pass
 *                         kernels (baseline_*: count, gather, zero fill
 *                         and scatter), AVX2 and portable
 *   kernel_bench --smoke  no timing: the library's merge-add must write the
 *                         same bytes as the baseline on the benchmark's
 *                         inputs (and small ones); exit 1 on any difference. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernel/qsgd.h"
#include "kernel/stream.h"
#include "kernel/topk.h"

/* ------------------------------------------------- the baseline merge-add */

#define BASELINE_MERGE(NAME, VT, IT)                                           \
    static uint64_t baseline_merge_##NAME(const void *ai_, const void *av_,    \
                                          uint64_t an, const void *bi_,        \
                                          const void *bv_, uint64_t bn,        \
                                          void *oi_, void *ov_)                \
    {                                                                          \
        const IT *ai = ai_, *bi = bi_;                                         \
        const VT *av = av_, *bv = bv_;                                         \
        IT *oi = oi_;                                                          \
        VT *ov = ov_;                                                          \
        uint64_t i = 0, j = 0, o = 0;                                          \
        while (i < an && j < bn) {                                             \
            IT x = ai[i], y = bi[j];                                           \
            if (x < y) { oi[o] = x; ov[o++] = av[i++]; }                       \
            else if (y < x) { oi[o] = y; ov[o++] = bv[j++]; }                  \
            else { oi[o] = x; ov[o++] = (VT)(av[i++] + bv[j++]); }             \
        }                                                                      \
        for (; i < an; i++, o++) { oi[o] = ai[i]; ov[o] = av[i]; }             \
        for (; j < bn; j++, o++) { oi[o] = bi[j]; ov[o] = bv[j]; }             \
        return o;                                                              \
    }

BASELINE_MERGE(f32_i32, float, uint32_t)
BASELINE_MERGE(f32_i64, float, uint64_t)
BASELINE_MERGE(f64_i32, double, uint32_t)
BASELINE_MERGE(f64_i64, double, uint64_t)

typedef uint64_t (*merge_fn)(const void *, const void *, uint64_t, const void *,
                             const void *, uint64_t, void *, void *);

static merge_fn baseline_merge_for(int vtype, unsigned iw)
{
    if (vtype == SPARCML_FLOAT) return iw == 8 ? baseline_merge_f32_i64 : baseline_merge_f32_i32;
    return iw == 8 ? baseline_merge_f64_i64 : baseline_merge_f64_i32;
}

/* A merge-add of two sparse streams by the plain two-pointer loop above
 * (the benchmark's inputs never go dense): merge at the bound's value
 * offset, then re-header and move. */
static sv baseline_merge_add(const sv *a, const sv *b, void *outbuf)
{
    uint64_t n = a->nnz + b->nnz;
    sv out = stream_init(outbuf, a->dim, a->vtype, n, 0);
    char *vals = out.val;
    n = baseline_merge_for(a->vtype, a->iw)(a->idx, a->val, a->nnz, b->idx, b->val,
                                            b->nnz, out.idx, vals);
    out = stream_init(outbuf, a->dim, a->vtype, n, 0);
    memmove(out.val, vals, n * out.vs);
    return out;
}

/* ----------------------------------------------------------------- inputs */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void put_value(sv *s, uint64_t i, uint64_t *rng)
{
    double v = (double)(rng_next(rng) % 2000001) / 1000.0 - 1000.0;
    if (s->vtype == SPARCML_FLOAT) ((float *)s->val)[i] = (float)v;
    else ((double *)s->val)[i] = v;
}

enum overlap { DISJOINT, TENTH, HALF, IDENTICAL };
static const char *overlap_name[] = {"disjoint", "tenth", "half", "identical"};
static const uint64_t overlap_tenths[] = {0, 1, 5, 10}; /* of each one's indices shared */

/* Two sparse streams of k entries each at random sorted indices: disjoint,
 * a tenth or half of each one's indices shared, or the same indices.
 * Which of the two owns an unshared index is random (what makes a
 * two-pointer merge mispredict).  With 32-bit indices the dimension is
 * 2^28, as large as the AVX2 merge takes indices as they are. */
static void make_pair(int vtype, unsigned iw, uint64_t k, enum overlap ov, void *abuf,
                      void *bbuf, sv *a, sv *b, uint64_t seed)
{
    uint64_t dim = iw == 8 ? (uint64_t)1 << 40 : (uint64_t)1 << 28;
    uint64_t rng = seed, shared = k * overlap_tenths[ov] / 10;
    uint64_t total = 2 * k - shared, gap = dim / total;
    uint64_t na = 0, nb = 0, left_a = k - shared, left_b = k - shared;
    *a = stream_init(abuf, dim, vtype, k, 0);
    *b = stream_init(bbuf, dim, vtype, k, 0);
    for (uint64_t m = 0; m < total; m++) {
        uint64_t x = m * gap + rng_next(&rng) % gap;
        uint64_t left = left_a + left_b + shared, r = rng_next(&rng) % left;
        int to_a = r < left_a + shared, to_b = r >= left_a;
        if (to_a && to_b) shared--;
        else if (to_a) left_a--;
        else left_b--;
        if (to_a) { sparcml_put_index(a->idx, iw, na, x); put_value(a, na++, &rng); }
        if (to_b) { sparcml_put_index(b->idx, iw, nb, x); put_value(b, nb++, &rng); }
    }
}

/* ----------------------------------------------------------------- timing */

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

#define BEST_OF 5

/* Best of 5 of `reps` back-to-back calls, per call. */
#define TIME_BEST(best, reps, stmt)                                            \
    do {                                                                       \
        best = 1e300;                                                          \
        for (int t_ = 0; t_ < BEST_OF; t_++) {                                 \
            double t0_ = now_ns();                                             \
            for (int r_ = 0; r_ < (reps); r_++) { stmt; }                      \
            double dt_ = (now_ns() - t0_) / (reps);                            \
            if (dt_ < best) best = dt_;                                        \
        }                                                                      \
    } while (0)

static volatile uint64_t sink;

static void row(const char *kernel, const char *cas, int vtype, unsigned iw, uint64_t k,
                double ns, double memcpy_ns, double base_ns)
{
    printf("%s,%s,%s,%u,%llu,%.3f,%.3f,%.2f,", kernel, cas,
           vtype == SPARCML_FLOAT ? "f32" : "f64", iw * 8, (unsigned long long)k,
           ns / (double)k, memcpy_ns / (double)k, ns / memcpy_ns);
    if (base_ns > 0) printf("%.2f\n", ns / base_ns);
    else printf("\n");
    fflush(stdout);
}

/* One input pair: merge-add (library, its portable path, baseline, memcpy
 * of both inputs), and for the disjoint pair also accumulate / densify /
 * slice unless merge_only. */
static void bench_pair(int vtype, unsigned iw, uint64_t k, enum overlap ov, char *abuf,
                       char *bbuf, char *obuf, char *cbuf, int merge_only)
{
    sv a, b, out;
    double lib, port, base, cpy;
    int reps = (int)(4000000 / k) + 1;
    make_pair(vtype, iw, k, ov, abuf, bbuf, &a, &b, 0x9E3779B97F4A7C15ull + k + ov);
    uint64_t in_bytes = stream_bytes(&a) + stream_bytes(&b);
    cpy = base = lib = port = 1e300;
    for (int round = 0; round < 3; round++) { /* in turn: a load on the machine meets all alike */
        double t;
        TIME_BEST(t, reps, (memcpy(cbuf, abuf, stream_bytes(&a)),
                            memcpy(cbuf + stream_bytes(&a), bbuf, stream_bytes(&b)),
                            sink += (uint64_t)cbuf[in_bytes - 1]));
        cpy = t < cpy ? t : cpy;
        TIME_BEST(t, reps, (out = baseline_merge_add(&a, &b, obuf), sink += out.nnz));
        base = t < base ? t : base;
        TIME_BEST(t, reps, (out = stream_merge_add(&a, &b, obuf), sink += out.nnz));
        lib = t < lib ? t : lib;
        stream_force_portable(1);
        TIME_BEST(t, reps, (out = stream_merge_add(&a, &b, obuf), sink += out.nnz));
        stream_force_portable(0);
        port = t < port ? t : port;
    }
    /* per input entry: 2k entries */
    row("merge_add", overlap_name[ov], vtype, iw, 2 * k, lib, cpy, base);
    row("merge_add_portable", overlap_name[ov], vtype, iw, 2 * k, port, cpy, base);
    row("merge_add_baseline", overlap_name[ov], vtype, iw, 2 * k, base, cpy, base);
    if (ov != DISJOINT || merge_only) return;

    /* Scatter-add of b into a dense slice of dimension 8k (b re-based). */
    uint64_t dim = 8 * k;
    sv s = stream_init(abuf, dim, vtype, k, 0);
    for (uint64_t i = 0; i < k; i++) sparcml_put_index(s.idx, s.iw, i, 8 * i + i % 8);
    memcpy(s.val, b.val, k * s.vs);
    sv acc = stream_init(obuf, dim, vtype, dim, 1);
    memset(acc.val, 0, dim * acc.vs);
    uint64_t sb = stream_bytes(&s);
    TIME_BEST(cpy, reps, (memcpy(cbuf, abuf, sb), sink += (uint64_t)cbuf[sb - 1]));
    TIME_BEST(lib, reps, (stream_accumulate(&acc, &s, 0), sink += 1));
    row("accumulate", "density1/8", vtype, s.iw, k, lib, cpy, 0);

    /* Densify: writes dim values; memcpy of those output bytes. */
    uint64_t db = dim * s.vs;
    TIME_BEST(cpy, reps, (memcpy(cbuf, obuf, db), sink += (uint64_t)cbuf[db - 1]));
    TIME_BEST(lib, reps, (stream_densify(&s, acc.val), sink += 1));
    row("densify", "density1/8", vtype, s.iw, k, lib, cpy, 0);

    /* Slice of the middle half of a (rebuilt: abuf now holds s): memcpy of
     * the bytes it writes. */
    make_pair(vtype, iw, k, ov, abuf, bbuf, &a, &b, 0x9E3779B97F4A7C15ull + k + ov);
    uint64_t lo = a.dim / 4, hi = a.dim / 4 * 3;
    uint64_t slb = stream_slice_bytes(&a, lo, hi);
    TIME_BEST(cpy, reps, (memcpy(cbuf, bbuf, slb), sink += (uint64_t)cbuf[slb - 1]));
    TIME_BEST(lib, reps, (out = stream_slice(&a, lo, hi, obuf), sink += out.nnz));
    row("slice", "middle-half", vtype, iw, out.nnz, lib, cpy, 0);
}

/* The public builders (include/sparcml.h) and QSGD's block coder on k
 * values of dimension 8k (32-bit indices).  References: for the builders
 * a memcpy of the stream they write (from_dense: of the dense input they
 * read, which is larger); for encode a memcpy of the values it reads, for
 * decode of the values it writes. */
static void bench_builders(int vtype, uint64_t k, char *abuf, char *bbuf, char *obuf, char *cbuf)
{
    uint64_t dim = 8 * k, rng = 0x5eed + k, *idx = (uint64_t *)abuf, *shuf = (uint64_t *)bbuf;
    size_t vs = sparcml_value_size(vtype);
    char *vals = abuf + k * 8, *dense = malloc(dim * vs);
    MPI_Count cap = sparcml_capacity(dim, vtype);
    double lib, cpy;
    int reps = (int)(2000000 / k) + 1;
    if (!dense) { fprintf(stderr, "kernel_bench: out of memory\n"); exit(2); }
    sv tmp = {.vtype = vtype, .vs = vs, .val = vals};
    for (uint64_t i = 0; i < k; i++) { idx[i] = 8 * i + rng_next(&rng) % 8; put_value(&tmp, i, &rng); }
    for (uint64_t i = 0; i < k; i++) shuf[i] = idx[i];
    for (uint64_t i = k; i > 1; i--) { /* the same pairs in random order */
        uint64_t j = rng_next(&rng) % i, t = shuf[i - 1];
        shuf[i - 1] = shuf[j];
        shuf[j] = t;
    }
    uint64_t sb = sparcml_sparse_bytes(dim, vtype, k);
    TIME_BEST(cpy, reps, (memcpy(cbuf, obuf, sb), sink += (uint64_t)cbuf[sb - 1]));
    TIME_BEST(lib, reps, sink += (uint64_t)sparcml_stream_from_sorted(obuf, cap, dim, vtype, k, idx, vals));
    row("from_sorted", "density1/8", vtype, 4, k, lib, cpy, 0);
    /* values no longer match the shuffled indices: the same work */
    TIME_BEST(lib, reps / 4 + 1, sink += (uint64_t)sparcml_stream_from_pairs(obuf, cap, dim, vtype, k, shuf, vals));
    row("from_pairs", "density1/8-shuffled", vtype, 4, k, lib, cpy, 0);
    sparcml_stream_to_dense(obuf, dense, dim);
    TIME_BEST(cpy, reps, (memcpy(cbuf, dense, dim * vs), sink += (uint64_t)cbuf[dim * vs - 1]));
    TIME_BEST(lib, reps, sink += (uint64_t)sparcml_stream_from_dense(obuf, cap, dim, vtype, dense));
    row("from_dense", "density1/8", vtype, 4, k, lib, cpy, 0);
    TIME_BEST(lib, reps, sink += (uint64_t)sparcml_stream_to_dense(obuf, dense, dim));
    row("to_dense", "density1/8", vtype, 4, k, lib, cpy, 0);
    /* k indices drawn at random from the dimension (a few repeat): no byte
     * of them is taken exactly equally often, as in the shuffled stream */
    for (uint64_t i = 0; i < k; i++) shuf[i] = rng_next(&rng) % dim;
    TIME_BEST(cpy, reps, (memcpy(cbuf, obuf, sb), sink += (uint64_t)cbuf[sb - 1]));
    TIME_BEST(lib, reps / 4 + 1, sink += (uint64_t)sparcml_stream_from_pairs(obuf, cap, dim, vtype, k, shuf, vals));
    row("from_pairs", "random", vtype, 4, k, lib, cpy, 0);

    for (int bits = 2; bits <= 8; bits *= 2) {
        qsgd_params qp = {.bits = bits, .bucket = 512, .seed = 1};
        qsgd_key key = {.seed = 1, .rank = 0, .call = 0, .message = 0};
        char cas[32];
        TIME_BEST(cpy, reps, (memcpy(cbuf, vals, k * vs), sink += (uint64_t)cbuf[k * vs - 1]));
        TIME_BEST(lib, reps, sink += qsgd_encode_block(vals, k, vtype, &qp, &key, obuf));
        snprintf(cas, sizeof cas, "bits%d-bucket512", bits);
        row("qsgd_encode", cas, vtype, 4, k, lib, cpy, 0);
        TIME_BEST(lib, reps, (qsgd_decode_block(obuf, k, vtype, &qp, cbuf + 2 * k * vs), sink += 1));
        row("qsgd_decode", cas, vtype, 4, k, lib, cpy, 0);
    }
    free(dense);
}

/* ----------------------------------------------------------------- top-k */

/* n gradient-like values: normal with mean 0 (Box-Muller), scaled. */
static void fill_normal(void *vals, int vtype, uint64_t n, uint64_t rng)
{
    for (uint64_t i = 0; i < n; i++) {
        double u = ((double)(rng_next(&rng) >> 11) + 0.5) / 9007199254740992.0;
        double v = (double)(rng_next(&rng) >> 11) / 9007199254740992.0;
        double g = 1e-3 * sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
        if (vtype == SPARCML_FLOAT) ((float *)vals)[i] = (float)g;
        else ((double *)vals)[i] = g;
    }
}

/* topk_select of n = 16M values at k = d n, per input value, against a
 * memcpy of the n values: the dispatched pass (AVX2 where the CPU has it)
 * and the portable one. */
static void bench_topk(int vtype)
{
    static const double ds[] = {1e-2, 1e-3, 1e-4};
    uint64_t n = (uint64_t)1 << 24, vs = sparcml_value_size(vtype);
    char *vals = aligned_alloc(64, n * vs), *copy = aligned_alloc(64, n * vs);
    double lib, cpy;
    if (!vals || !copy) { fprintf(stderr, "kernel_bench: out of memory\n"); exit(2); }
    fill_normal(vals, vtype, n, 0x70b4 + (uint64_t)vtype);
    for (size_t j = 0; j < sizeof ds / sizeof ds[0]; j++) {
        uint64_t k = (uint64_t)(ds[j] * (double)n), sb = topk_scratch_bytes(n, k, vtype);
        char *scratch = aligned_alloc(64, (sb + 63) / 64 * 64), *idx = malloc(k * 4);
        char *out = malloc(k * vs), cas[48];
        if (!scratch || !idx || !out) { fprintf(stderr, "kernel_bench: out of memory\n"); exit(2); }
        TIME_BEST(cpy, 2, (memcpy(copy, vals, n * vs), sink += (uint64_t)copy[n * vs - 1]));
        for (int portable = 0; portable < 2; portable++) {
            stream_force_portable(portable);
            TIME_BEST(lib, 2, sink += topk_select(vals, n, vtype, k, scratch, idx, 4, out));
            snprintf(cas, sizeof cas, "normal-d%g%s", ds[j], portable ? "-portable" : "");
            row("topk_select", cas, vtype, 4, n, lib, cpy, 0);
        }
        stream_force_portable(0);
        free(scratch); free(idx); free(out);
    }
    free(vals); free(copy);
}

/* ------------------------------------------------- transparent-mode passes */

/* The two-pass kernels the one-read builder and the one-sweep densify are
 * measured against (baseline_*, benchmark code only): a count, a second
 * read that gathers, a zero fill of the whole result and a scatter. */
#define BASELINE_COUNT(T)                                                       \
    do {                                                                        \
        const T *x = (const T *)v->val;                                         \
        uint64_t i = 0;                                                         \
        while (v->dim - i >= 8) {                                               \
            uint32_t lane[8] = {0};                                             \
            uint64_t end = i + ((v->dim - i) / 8 < (1u << 20) ? (v->dim - i) / 8 : (1u << 20)) * 8; \
            for (; i < end; i += 8)                                             \
                for (int j = 0; j < 8; j++) lane[j] += x[i + j] != 0;           \
            for (int j = 0; j < 8; j++) n += lane[j];                           \
        }                                                                       \
        for (; i < v->dim; i++) n += x[i] != 0;                                 \
    } while (0)

static uint64_t baseline_count_nonzero(const sv *v)
{
    uint64_t n = 0;
    switch (v->vtype) {
    case SPARCML_FLOAT: BASELINE_COUNT(float); break;
    case SPARCML_DOUBLE: BASELINE_COUNT(double); break;
    case SPARCML_INT32: BASELINE_COUNT(uint32_t); break;
    default: BASELINE_COUNT(uint64_t); break;
    }
    return n;
}

#define BASELINE_FROM_VALUES(T)                                                 \
    do {                                                                        \
        const T *x = v->val;                                                    \
        T *y = out.val;                                                         \
        uint64_t o = 0;                                                         \
        if (out.dense) {                                                        \
            for (uint64_t i = 0; i < v->dim; i++) y[i] = x[i] != 0 ? x[i] : 0;  \
            break;                                                              \
        }                                                                       \
        for (uint64_t i = 0; i < v->dim; i++)                                   \
            if (x[i] != 0) {                                                    \
                sparcml_put_index(out.idx, out.iw, o, i);                       \
                y[o++] = x[i];                                                  \
            }                                                                   \
    } while (0)

static sv baseline_from_values(const sv *v, uint64_t nnz, void *outbuf)
{
    int dense = sparcml_prefers_dense(v->dim, v->vtype, nnz);
    sv out = stream_init(outbuf, v->dim, v->vtype, dense ? v->dim : nnz, dense);
    switch (v->vtype) {
    case SPARCML_FLOAT: BASELINE_FROM_VALUES(float); break;
    case SPARCML_DOUBLE: BASELINE_FROM_VALUES(double); break;
    case SPARCML_INT32: BASELINE_FROM_VALUES(uint32_t); break;
    default: BASELINE_FROM_VALUES(uint64_t); break;
    }
    return out;
}

static void baseline_densify(const sv *s, void *dense)
{
    if (s->dense) {
        if (dense != s->val) memmove(dense, s->val, s->dim * s->vs);
        return;
    }
    memset(dense, 0, s->dim * s->vs);
    for (uint64_t i = 0; i < s->nnz; i++)
        memcpy((char *)dense + sparcml_get_index(s->idx, s->iw, i) * s->vs, (char *)s->val + i * s->vs, s->vs);
}

/* The densify design measured and not taken (stream.c, "densify"): zero
 * each gap between the sorted indices and store the values, every element
 * written once; 32-bit indices. */
#define GAP_SWEEP(T)                                                            \
    do {                                                                        \
        T *d = dense;                                                           \
        const uint32_t *ix = s->idx;                                            \
        const T *v = s->val;                                                    \
        uint64_t at = 0;                                                        \
        for (uint64_t k = 0; k < s->nnz; k++) {                                 \
            uint64_t x = ix[k];                                                 \
            if ((x - at) * sizeof(T) < 64)                                      \
                for (; at < x; at++) d[at] = 0;                                 \
            else                                                                \
                memset(d + at, 0, (x - at) * sizeof(T));                        \
            d[x] = v[k];                                                        \
            at = x + 1;                                                         \
        }                                                                       \
        memset(d + at, 0, (s->dim - at) * sizeof(T));                          \
    } while (0)

static void gap_sweep_densify(const sv *s, void *dense)
{
    if (s->vs == 4) GAP_SWEEP(uint32_t);
    else GAP_SWEEP(uint64_t);
}

/* Transparent mode's sparse route on one rank, before the exchange and
 * after it: build the input stream from the dense buffer, then write a
 * dense result from a stream (here the same one). */
static uint64_t baseline_passes(const sv *v, void *sbuf, void *dense)
{
    uint64_t n = baseline_count_nonzero(v);
    sv s = baseline_from_values(v, n, sbuf);
    baseline_densify(&s, dense);
    return n;
}

/* The library's: one read that counts and gathers (into a buffer that
 * holds any sparse stream of v; a dense one is built by a second read, as
 * transparent mode does), one sweep that writes. */
static uint64_t library_passes(const sv *v, void *sbuf, void *dense)
{
    uint64_t cap = stream_gather_capacity(v->dim, v->vtype, sparcml_dense_bytes(v->dim, v->vtype));
    sv s;
    uint64_t n = stream_gather_nonzero(v, cap, sbuf, &s);
    if (sv_is_absent(&s)) s = stream_from_values(v, n, sbuf);
    stream_densify(&s, dense);
    return n;
}

/* The plain read the passes are also measured against: a sum the compiler
 * vectorises, touching every byte once. */
static float read_all(const float *x, uint64_t n)
{
    float acc[8] = {0};
    for (uint64_t i = 0; i < n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += x[i + j];
    return acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
}

/* A dense vector of n values of vtype at density d (independent random
 * positions), values small nonzero numbers.  Returns the nonzeros. */
static uint64_t fill_dense(void *x, int vtype, uint64_t n, double d, uint64_t seed)
{
    uint64_t rng = seed, nnz = 0;
    for (uint64_t i = 0; i < n; i++) {
        int on = (double)(rng_next(&rng) >> 11) / 9007199254740992.0 < d;
        double y = on ? 1.0 + (double)(i % 7) : 0.0;
        switch (vtype) {
        case SPARCML_FLOAT: ((float *)x)[i] = (float)y; break;
        case SPARCML_DOUBLE: ((double *)x)[i] = y; break;
        case SPARCML_INT32: ((int32_t *)x)[i] = (int32_t)y; break;
        default: ((int64_t *)x)[i] = (int64_t)y; break;
        }
        nnz += (uint64_t)on;
    }
    return nnz;
}

static const char *vtype_name(int vtype)
{
    static const char *names[] = {"", "f32", "f64", "i32", "i64"};
    return names[vtype];
}

static void scan_row(const char *kernel, int vtype, double d, uint64_t n, double ns, double rd,
                     double cpy, double base)
{
    printf("%s,%s,%g,%llu,%.3f,%.2f,%.2f,", kernel, vtype_name(vtype), d, (unsigned long long)n,
           ns / (double)n, ns / rd, ns / cpy);
    if (base > 0) printf("%.2f\n", ns / base);
    else printf("\n");
    fflush(stdout);
}

/* The gather also takes SCAN_FRESH buffers in turn where they fit in the
 * SCAN_ROOM bytes of xbuf: a branch predictor learns one buffer's pattern
 * over repeated runs, never a program's successive ones. */
enum { SCAN_FRESH = 16 };
#define SCAN_ROOM ((uint64_t)32 << 20)

/* Transparent mode's passes over a dense buffer of n values at density d,
 * each against a plain read and a memcpy of the buffer and the library's
 * against the baseline: the count (every qualifying call pays it), the
 * build of the input stream, the densify of a stream, and all of them
 * together (the sparse route's own work on the application's buffers). */
static void bench_scan(int vtype, uint64_t n, double d, char *xbuf, char *sbuf, char *dbuf, char *cbuf)
{
    uint64_t nnz = fill_dense(xbuf, vtype, n, d, 0x243F6A8885A308D3ull + n), bytes = n * sparcml_value_size(vtype);
    uint64_t cap = stream_gather_capacity(n, vtype, sparcml_dense_bytes(n, vtype));
    double rd, cpy, t, base;
    int reps = n >= (1u << 22) ? 3 : 30;
    sv v = stream_dense_view(xbuf, n, vtype), s;
    TIME_BEST(rd, reps, (sink += (uint64_t)read_all((const float *)xbuf, bytes / 4)));
    TIME_BEST(cpy, reps, (memcpy(cbuf, xbuf, bytes), sink += (uint64_t)cbuf[bytes - 1]));
    TIME_BEST(base, reps, sink += baseline_count_nonzero(&v));
    scan_row("count_baseline", vtype, d, n, base, rd, cpy, 0);
    TIME_BEST(base, reps, sink += baseline_from_values(&v, nnz, sbuf).nnz);
    scan_row("from_values_baseline", vtype, d, n, base, rd, cpy, 0);
    TIME_BEST(t, reps, sink += stream_gather_nonzero(&v, cap, sbuf, &s));
    scan_row("gather", vtype, d, n, t, rd, cpy, 0);
    if (SCAN_FRESH * bytes <= SCAN_ROOM) { /* as a program's successive buffers */
        for (int b = 1; b < SCAN_FRESH; b++) fill_dense(xbuf + b * bytes, vtype, n, d, 0x243F6A8885A308D3ull + n + b);
        TIME_BEST(t, reps, for (int b = 0; b < SCAN_FRESH; b++) {
            sv f = stream_dense_view(xbuf + b * bytes, n, vtype);
            sink += stream_gather_nonzero(&f, cap, sbuf, &s);
        });
        scan_row("gather_fresh", vtype, d, n, t / SCAN_FRESH, rd, cpy, 0);
    }
    s = stream_from_values(&v, nnz, sbuf);
    TIME_BEST(base, reps, (baseline_densify(&s, dbuf), sink += (uint64_t)dbuf[bytes - 1]));
    TIME_BEST(t, reps, (stream_densify(&s, dbuf), sink += (uint64_t)dbuf[bytes - 1]));
    scan_row("densify", vtype, d, n, t, rd, cpy, base);
    if (!s.dense) {
        TIME_BEST(t, reps, (gap_sweep_densify(&s, dbuf), sink += (uint64_t)dbuf[bytes - 1]));
        scan_row("densify_gap_sweep", vtype, d, n, t, rd, cpy, base);
        stream_force_portable(1);
        TIME_BEST(t, reps, (stream_densify(&s, dbuf), sink += (uint64_t)dbuf[bytes - 1]));
        scan_row("densify_portable", vtype, d, n, t, rd, cpy, base);
        stream_force_portable(0);
    }
    TIME_BEST(base, reps, sink += baseline_passes(&v, sbuf, dbuf));
    TIME_BEST(t, reps, sink += library_passes(&v, sbuf, dbuf));
    scan_row("passes", vtype, d, n, t, rd, cpy, base);
    stream_force_portable(1);
    TIME_BEST(t, reps, sink += library_passes(&v, sbuf, dbuf));
    scan_row("passes_portable", vtype, d, n, t, rd, cpy, base);
    stream_force_portable(0);
}

static void scans(char *xbuf, char *sbuf, char *dbuf, char *cbuf)
{
    static const uint64_t ns[] = {1u << 18, 1u << 24};
    static const double ds[] = {1e-3, 1e-2, 3e-2, 0.1, 0.4, 1};
    printf("kernel,vtype,density,elements,ns_per_element,x_read,x_memcpy,x_baseline\n");
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t j = 0; j < sizeof ds / sizeof ds[0]; j++)
            bench_scan(SPARCML_FLOAT, ns[i], ds[j], xbuf, sbuf, dbuf, cbuf);
    for (int vt = SPARCML_DOUBLE; vt <= SPARCML_INT64; vt++)
        bench_scan(vt, 1u << 23, 1e-3, xbuf, sbuf, dbuf, cbuf);
}

/* --------------------------------------------------------------- smoke */

/* Both operand orders (a is the left operand, so a+b and b+a may differ in
 * NaN payloads) on both paths: each must match the baseline's bytes. */
static int smoke_pair(int vtype, unsigned iw, uint64_t k, enum overlap ov, char *abuf,
                      char *bbuf, char *o1, char *o2, uint64_t seed)
{
    sv a, b;
    make_pair(vtype, iw, k, ov, abuf, bbuf, &a, &b, seed);
    for (int order = 0; order < 4; order++) { /* both orders, both paths */
        const sv *l = order % 2 ? &b : &a, *r = order % 2 ? &a : &b;
        stream_force_portable(order / 2);
        sv x = stream_merge_add(l, r, o1), y = baseline_merge_add(l, r, o2);
        stream_force_portable(0);
        if (stream_bytes(&x) != stream_bytes(&y) || memcmp(o1, o2, stream_bytes(&x)) != 0) {
            fprintf(stderr, "kernel_bench: merge_add differs from baseline: %s %s i%u k=%llu%s\n",
                    vtype == SPARCML_FLOAT ? "f32" : "f64", overlap_name[ov], iw * 8,
                    (unsigned long long)k, order / 2 ? " (portable)" : "");
            return 1;
        }
    }
    return 0;
}

/* Transparent mode's passes: the library's and the baseline's input
 * streams and dense results must have the same bytes, on both code paths,
 * with -0.0 (a zero), NaN and Inf among the values.  x holds the dense
 * input, s1/s2 the streams, d1/d2 the results (each dim values or more). */
static int smoke_passes(int vtype, uint64_t dim, double d, char *x, char *s1, char *s2, char *d1, char *d2)
{
    static const uint32_t f32[] = {0x80000000u, 0x7fc00abcu, 0x7f800000u}; /* -0.0, NaN, Inf */
    static const uint64_t f64[] = {UINT64_C(1) << 63, UINT64_C(0x7ff8000000000abc), UINT64_C(0x7ff0000000000000)};
    uint64_t vs = sparcml_value_size(vtype), n;
    sv v = stream_dense_view(x, dim, vtype), a, b;
    fill_dense(x, vtype, dim, d, 0x51ed + dim);
    for (uint64_t k = 0; k < 3 && vtype <= SPARCML_DOUBLE; k++) {
        uint64_t at = (dim * (k + 1)) / 4;
        if (vtype == SPARCML_FLOAT) memcpy(x + at * 4, &f32[k], 4);
        else memcpy(x + at * 8, &f64[k], 8);
    }
    n = baseline_count_nonzero(&v);
    a = baseline_from_values(&v, n, s1);
    baseline_densify(&a, d1);
    for (int portable = 0; portable < 2; portable++) {
        stream_force_portable(portable);
        if (library_passes(&v, s2, d2) != n) return 1;
        b = stream_from_values(&v, n, s2);
        stream_force_portable(0);
        if (stream_bytes(&a) != stream_bytes(&b) || memcmp(s1, s2, stream_bytes(&a)) != 0
            || memcmp(d1, d2, dim * vs) != 0) {
            fprintf(stderr, "kernel_bench: transparent passes differ from baseline: %s dim %llu d %g%s\n",
                    vtype_name(vtype), (unsigned long long)dim, d, portable ? " (portable)" : "");
            return 1;
        }
    }
    return 0;
}

static int smoke(char *abuf, char *bbuf, char *o1, char *o2)
{
    static const uint64_t ks[] = {1, 2, 3, 7, 100, 1000, 16384};
    static const uint64_t dims[] = {1, 33, 1000, 100003, (UINT64_C(16) << 20) / 4 + 7};
    static const double ds[] = {0, 1e-3, 0.05, 0.4, 0.6, 1};
    int bad = 0, cases = 0;
    for (int vt = SPARCML_FLOAT; vt <= SPARCML_DOUBLE; vt++)
        for (unsigned iw = 4; iw <= 8; iw += 4)
            for (int ov = DISJOINT; ov <= IDENTICAL; ov++)
                for (size_t n = 0; n < sizeof ks / sizeof ks[0]; n++)
                    for (uint64_t seed = 1; seed <= 3; seed++, cases++)
                        bad |= smoke_pair(vt, iw, ks[n], (enum overlap)ov, abuf, bbuf, o1,
                                          o2, seed * 7919 + n);
    for (int vt = SPARCML_FLOAT; vt <= SPARCML_INT64; vt++)
        for (size_t n = 0; n < sizeof dims / sizeof dims[0]; n++)
            for (size_t j = 0; j < sizeof ds / sizeof ds[0]; j++, cases++)
                bad |= smoke_passes(vt, dims[n], ds[j], abuf, bbuf, o1, o2, o2 + (64u << 20));
    printf("kernel_bench --smoke: %d cases, %s\n", cases, bad ? "DIFFER" : "identical");
    return bad;
}

static const char csv_header[] = "kernel,case,vtype,index_bits,entries,ns_per_entry,"
                                 "memcpy_ns_per_entry,x_memcpy,x_baseline";

int main(int argc, char **argv)
{
    static const uint64_t ks[] = {16384, 131072, 1048576};
    size_t cap = (size_t)(64u << 20);
    char *abuf = aligned_alloc(64, cap), *bbuf = aligned_alloc(64, cap);
    char *obuf = aligned_alloc(64, 2 * cap), *cbuf = aligned_alloc(64, 2 * cap);
    int rc = 0;
    if (!abuf || !bbuf || !obuf || !cbuf) return 2;
    if (argc > 1 && strcmp(argv[1], "--smoke") == 0) {
        rc = smoke(abuf, bbuf, obuf, cbuf);
    } else if (argc > 1 && strcmp(argv[1], "--scan") == 0) {
        scans(abuf, obuf, cbuf, bbuf);
    } else if (argc > 1 && strcmp(argv[1], "--builders") == 0) {
        printf("%s\n", csv_header);
        for (size_t n = 0; n < sizeof ks / sizeof ks[0]; n++)
            for (int vt = SPARCML_FLOAT; vt <= SPARCML_DOUBLE; vt++)
                bench_builders(vt, ks[n], abuf, bbuf, obuf, cbuf);
    } else if (argc > 1 && strcmp(argv[1], "--topk") == 0) {
        printf("%s\n", csv_header);
        for (int vt = SPARCML_FLOAT; vt <= SPARCML_DOUBLE; vt++) bench_topk(vt);
    } else {
        int merge_only = argc > 1 && strcmp(argv[1], "--merge") == 0;
        printf("%s\n", csv_header);
        for (size_t n = 0; n < sizeof ks / sizeof ks[0]; n++)
            for (int vt = SPARCML_FLOAT; vt <= SPARCML_DOUBLE; vt++)
                for (unsigned iw = 4; iw <= 8; iw += 4)
                    for (int ov = DISJOINT; ov <= IDENTICAL; ov++)
                        bench_pair(vt, iw, ks[n], (enum overlap)ov, abuf, bbuf, obuf, cbuf, merge_only);
        for (size_t n = 0; n < sizeof ks / sizeof ks[0] && !merge_only; n++)
            for (int vt = SPARCML_FLOAT; vt <= SPARCML_DOUBLE; vt++)
                bench_builders(vt, ks[n], abuf, bbuf, obuf, cbuf);
        for (int vt = SPARCML_FLOAT; vt <= SPARCML_DOUBLE && !merge_only; vt++) bench_topk(vt);
    }
    free(abuf); free(bbuf); free(obuf); free(cbuf);
    return rc;
}
