/* Streams: encode/decode, validation, merge-add, slice/concat, helpers.
 * References are computed here from plain arrays, never via stream.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alg/plan.h"
#include "runtime/call.h"
#include "base/errors.h"
#include "kernel/stream.h"
#include "builders_cases.h"
#include "suites.h"

static uint64_t rng_state;
static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A random vector: dense array of dim doubles-or-int64s (as the value type)
 * with about d*dim non-zeros, plus the matching stream in buf. */
typedef struct vec {
    uint64_t dim;
    int vtype;
    void *dense; /* dim values of vtype */
    void *buf;   /* stream */
} vec;

static void set_value(int vtype, void *dense, uint64_t i, int64_t x)
{
    switch (vtype) {
    case SPARCML_FLOAT: ((float *)dense)[i] = (float)x / 8.0f; break;
    case SPARCML_DOUBLE: ((double *)dense)[i] = (double)x / 8.0; break;
    case SPARCML_INT32: ((int32_t *)dense)[i] = (int32_t)x; break;
    default: ((int64_t *)dense)[i] = x * 1000003; break;
    }
}

static vec make_vec(uint64_t dim, int vtype, double d)
{
    vec v = {dim, vtype, calloc(dim ? dim : 1, 8), malloc(sparcml_capacity(dim, vtype) * 8)};
    for (uint64_t i = 0; i < dim; i++)
        if ((double)(rnd() % 1000000) < d * 1e6) {
            int64_t x = (int64_t)(rnd() % 2000) - 1000; /* never 0: density is exact */
            set_value(vtype, v.dense, i, x >= 0 ? x + 1 : x);
        }
    ck_assert_int_eq(sparcml_stream_from_dense(v.buf, sparcml_capacity(dim, vtype), dim, vtype,
                                               v.dense), SPARCML_OK);
    return v;
}

static void free_vec(vec *v) { free(v->dense); free(v->buf); }

/* Reference a + b computed on the dense arrays. */
static void *dense_sum(const vec *a, const vec *b)
{
    void *r = calloc(a->dim ? a->dim : 1, 8);
    for (uint64_t i = 0; i < a->dim; i++) {
        switch (a->vtype) {
        case SPARCML_FLOAT: ((float *)r)[i] = ((float *)a->dense)[i] + ((float *)b->dense)[i]; break;
        case SPARCML_DOUBLE: ((double *)r)[i] = ((double *)a->dense)[i] + ((double *)b->dense)[i]; break;
        case SPARCML_INT32:
            ((uint32_t *)r)[i] = ((uint32_t *)a->dense)[i] + ((uint32_t *)b->dense)[i]; break;
        default: ((uint64_t *)r)[i] = ((uint64_t *)a->dense)[i] + ((uint64_t *)b->dense)[i]; break;
        }
    }
    return r;
}

/* Values equal, treating +0 and -0 alike (a stored -0 may become +0). */
static void assert_dense_equal(const void *got, const void *want, uint64_t dim, int vtype)
{
    for (uint64_t i = 0; i < dim; i++) {
        switch (vtype) {
        case SPARCML_FLOAT: ck_assert_float_eq(((float *)got)[i], ((float *)want)[i]); break;
        case SPARCML_DOUBLE: ck_assert_double_eq(((double *)got)[i], ((double *)want)[i]); break;
        case SPARCML_INT32: ck_assert_int_eq(((int32_t *)got)[i], ((int32_t *)want)[i]); break;
        default: ck_assert_int_eq(((int64_t *)got)[i], ((int64_t *)want)[i]); break;
        }
    }
}

static void assert_stream_is(const sv *s, const void *want)
{
    void *got = calloc(s->dim ? s->dim : 1, 8);
    uint64_t where;
    sv check;
    ck_assert_int_eq(stream_parse(s->base, stream_bytes(s), s->vtype, &check, &where), SPARCML_R_OK);
    ck_assert_int_eq(sparcml_stream_to_dense(s->base, got, s->dim), SPARCML_OK);
    assert_dense_equal(got, want, s->dim, s->vtype);
    /* Canonical format: sparse only while that is smaller. */
    if (!s->dense) ck_assert(!sparcml_prefers_dense(s->dim, s->vtype, s->nnz));
    free(got);
}

static const double densities[] = {0, 0.001, 0.05, 0.3, 0.7, 1};

START_TEST(merge_add_matches_reference)
{
    int vtype = _i % 4 + 1;
    stream_force_portable(_i / 4);
    rng_state = 42 + (uint64_t)(_i % 4);
    for (size_t da = 0; da < sizeof densities / sizeof densities[0]; da++) {
        for (size_t db = 0; db < sizeof densities / sizeof densities[0]; db++) {
            uint64_t dim = 1 + rnd() % 3000;
            vec a = make_vec(dim, vtype, densities[da]), b = make_vec(dim, vtype, densities[db]);
            sv va = stream_view(a.buf), vb = stream_view(b.buf);
            void *out = malloc(stream_merge_bound(&va, &vb)), *want = dense_sum(&a, &b);
            sv r = stream_merge_add(&va, &vb, out);
            ck_assert_uint_le(stream_bytes(&r), stream_merge_bound(&va, &vb));
            assert_stream_is(&r, want);
            free(out); free(want); free_vec(&a); free_vec(&b);
        }
    }
    stream_force_portable(0);
}
END_TEST

/* Large sparse merges (the interleaved chains of stream.c and the scalar
 * merge it keeps for predictable inputs): the result must be, bit for bit,
 * what a plain two-pointer merge written here gives (a's value + b's on
 * equal indices, a left), for index layouts that stress how the inputs are
 * cut into chains: b before or after all of a, duplicates across chains. */
/* The first four interleave at random (the chains run); the others take
 * one direction for long stretches (the probe keeps the scalar merge). */
enum layout { L_RANDOM, L_HALF, L_A_HIGH, L_A_LOW, L_IDENTICAL, L_B_BELOW, L_B_ABOVE, L_B_NARROW,
              L_A_TINY, L_SUBSET, L_COUNT };

/* n sorted distinct indices in [lo, hi), about `keep` of them. */
static uint64_t pick_indices(uint64_t *idx, uint64_t lo, uint64_t hi, double keep)
{
    uint64_t n = 0;
    for (uint64_t x = lo; x < hi; x++)
        if ((double)(rnd() % 1000000) < keep * 1e6) idx[n++] = x;
    return n;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* Drop repeats from a sorted list; its new length. */
static uint64_t unique_u64(uint64_t *x, uint64_t n)
{
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++)
        if (m == 0 || x[m - 1] != x[i]) x[m++] = x[i];
    return m;
}

static sv list_stream(void *buf, uint64_t dim, int vtype, const uint64_t *idx, uint64_t n, uint64_t scale)
{
    sv s = stream_init(buf, dim, vtype, n, 0);
    for (uint64_t i = 0; i < n; i++) {
        int64_t x = (int64_t)(rnd() % 2001) - 1000;
        sparcml_put_index(s.idx, s.iw, i, idx[i] * scale);
        set_value(vtype, s.val, i, x);
    }
    return s;
}

/* x + y of one pair of values into out, bit for bit, spelled out rather
 * than left to how the compiler orders the operands: a NaN operand's bits,
 * quieted, the first operand's when both are NaN (x86's rule for SSE and
 * AVX additions), else the sum (which does not depend on the order). */
static void ref_add(int vtype, const void *x, const void *y, void *out)
{
    if (vtype == SPARCML_FLOAT) {
        float a, b, r;
        uint32_t bits;
        memcpy(&a, x, 4);
        memcpy(&b, y, 4);
        if (isnan(a) || isnan(b)) {
            memcpy(&bits, isnan(a) ? x : y, 4);
            bits |= UINT32_C(1) << 22;
            memcpy(out, &bits, 4);
            return;
        }
        r = a + b;
        memcpy(out, &r, 4);
    } else if (vtype == SPARCML_DOUBLE) {
        double a, b, r;
        uint64_t bits;
        memcpy(&a, x, 8);
        memcpy(&b, y, 8);
        if (isnan(a) || isnan(b)) {
            memcpy(&bits, isnan(a) ? x : y, 8);
            bits |= UINT64_C(1) << 51;
            memcpy(out, &bits, 8);
            return;
        }
        r = a + b;
        memcpy(out, &r, 8);
    } else if (vtype == SPARCML_INT32) {
        uint32_t a, b;
        memcpy(&a, x, 4);
        memcpy(&b, y, 4);
        a += b;
        memcpy(out, &a, 4);
    } else {
        uint64_t a, b;
        memcpy(&a, x, 8);
        memcpy(&b, y, 8);
        a += b;
        memcpy(out, &a, 8);
    }
}

/* A plain two-pointer merge: indices to ri, values to rv; the count. */
static uint64_t reference_merge(const sv *a, const sv *b, uint64_t *ri, char *rv)
{
    uint64_t i = 0, j = 0, o = 0, vs = a->vs;
    while (i < a->nnz || j < b->nnz) {
        uint64_t x = i < a->nnz ? sparcml_get_index(a->idx, a->iw, i) : UINT64_MAX;
        uint64_t y = j < b->nnz ? sparcml_get_index(b->idx, b->iw, j) : UINT64_MAX;
        const char *va = (const char *)a->val + i * vs, *vb = (const char *)b->val + j * vs;
        ri[o] = x < y ? x : y;
        if (x < y) memcpy(rv + o * vs, va, vs);
        else if (y < x) memcpy(rv + o * vs, vb, vs);
        else ref_add(a->vtype, va, vb, rv + o * vs);
        i += x <= y;
        j += y <= x;
        o++;
    }
    return o;
}

/* r must be, bit for bit, the reference merge of a and b. */
static void assert_merge_is_reference(const sv *a, const sv *b, const sv *r, const char *what)
{
    uint64_t *ri = malloc((a->nnz + b->nnz + 1) * 8);
    char *rv = malloc((a->nnz + b->nnz + 1) * 8);
    uint64_t n = reference_merge(a, b, ri, rv);
    ck_assert_msg(!r->dense, "%s: dense result", what);
    ck_assert_msg(r->nnz == n, "%s: %llu entries, want %llu", what, (unsigned long long)r->nnz,
                  (unsigned long long)n);
    for (uint64_t k = 0; k < n; k++) {
        ck_assert_msg(sparcml_get_index(r->idx, r->iw, k) == ri[k], "%s: index %llu differs", what,
                      (unsigned long long)k);
        ck_assert_msg(memcmp((char *)r->val + k * r->vs, rv + k * r->vs, r->vs) == 0, "%s: value %llu differs",
                      what, (unsigned long long)k);
    }
    free(ri);
    free(rv);
}

START_TEST(merge_add_interleaved_matches_reference)
{
    int vtype = _i % 4 + 1, wide = _i / 4 % 2; /* 8-15: the portable path */
    uint64_t N = 100000, scale = wide ? 3000000 : 1; /* wide: dim > 2^32, 64-bit indices */
    uint64_t dim = N * scale, *ia = malloc(N * 8), *ib = malloc(N * 8);
    char *abuf = malloc(N * 16 + 64), *bbuf = malloc(N * 16 + 64);
    stream_force_portable(_i / 8);
    rng_state = 99 + (uint64_t)(_i % 8);
    for (int l = 0; l < L_COUNT; l++) {
        uint64_t na, nb;
        switch (l) {
        case L_HALF: /* b: every other index of a, and as many others */
            na = pick_indices(ia, 0, N, 0.04);
            nb = pick_indices(ib, 0, N, 0.02);
            for (uint64_t k = 0; k < na; k += 2) ib[nb++] = ia[k];
            qsort(ib, nb, 8, cmp_u64);
            nb = unique_u64(ib, nb);
            break;
        case L_A_HIGH: na = pick_indices(ia, N / 2, N, 0.06); nb = pick_indices(ib, 0, N, 0.03); break;
        case L_A_LOW: na = pick_indices(ia, 0, N / 2, 0.06); nb = pick_indices(ib, 0, N, 0.03); break;
        case L_IDENTICAL: na = pick_indices(ia, 0, N, 0.03); memcpy(ib, ia, na * 8); nb = na; break;
        case L_B_BELOW: na = pick_indices(ia, N / 2, N, 0.06); nb = pick_indices(ib, 0, N / 2, 0.06); break;
        case L_B_ABOVE: na = pick_indices(ia, 0, N / 2, 0.06); nb = pick_indices(ib, N / 2, N, 0.06); break;
        case L_B_NARROW: na = pick_indices(ia, 0, N, 0.02); nb = pick_indices(ib, N / 3, N / 3 + 4000, 0.9); break;
        case L_A_TINY: ia[0] = 5; ia[1] = 17000; ia[2] = 50000; ia[3] = N - 1; na = 4;
            nb = pick_indices(ib, 0, N, 0.05); break;
        case L_SUBSET:
            nb = pick_indices(ib, 0, N, 0.05);
            na = 0;
            for (uint64_t k = 0; k < nb; k += 3) ia[na++] = ib[k];
            break;
        default: na = pick_indices(ia, 0, N, 0.03); nb = pick_indices(ib, 0, N, 0.03); break;
        }
        sv a = list_stream(abuf, dim, vtype, ia, na, scale), b = list_stream(bbuf, dim, vtype, ib, nb, scale);
        void *out = malloc(stream_merge_bound(&a, &b));
        sv r = stream_merge_add(&a, &b, out);
        char what[32];
        snprintf(what, sizeof what, "layout %d", l);
        ck_assert_msg(a.nnz + b.nnz >= 4096 && !r.dense, "layout %d does not reach the interleaved merge", l);
        assert_merge_is_reference(&a, &b, &r, what);
        free(out);
    }
    stream_force_portable(0);
    free(ia); free(ib); free(abuf); free(bbuf);
}
END_TEST

/* Pairs for the merge-add at every length around the AVX2 merge's windows
 * (8 entries of each input) and its room (16 left in each): */
enum pair_layout {
    P_DISJOINT,   /* randomly interleaved */
    P_HALF,       /* a third of the indices in both */
    P_IDENTICAL,  /* the same indices */
    P_A_BELOW,    /* all of a below all of b */
    P_FEW_SHARED, /* interleaved, one index in 50 in both */
    P_RUNS,       /* runs of 1 to 20 from one input, then the other */
    P_A_EMPTY,
    P_B_EMPTY,
    P_GAPS,       /* disjoint, one gap in 16 up to top / 4n (beyond 2^32 with 64-bit indices) */
    P_GAPS_HALF,  /* those gaps, a third of the indices in both */
    P_COUNT
};

/* Indices of layout l, n in each input (none in an empty one), ascending
 * and ending at top - 1: into ia and ib, their counts into na and nb. */
static void pair_indices(int l, uint64_t n, uint64_t top, uint64_t *ia, uint64_t *na, uint64_t *ib,
                         uint64_t *nb)
{
    uint64_t x = 0, run = 0, wa = l == P_A_EMPTY ? 0 : n, wb = l == P_B_EMPTY ? 0 : n, shift;
    int side = 0;
    *na = *nb = 0;
    while (*na < wa || *nb < wb) {
        int to_a, to_b, r = (int)(rnd() % 3);
        int gaps = l == P_GAPS || l == P_GAPS_HALF;
        x += gaps && rnd() % 16 == 0 ? 1 + rnd() % (top / (4 * n + 4)) : 1 + rnd() % 2;
        if (run == 0) { run = 1 + rnd() % 20; side = !side; }
        run--;
        switch (l) {
        case P_HALF:
        case P_GAPS_HALF: to_a = r != 1; to_b = r != 0; break;
        case P_IDENTICAL: to_a = to_b = 1; break;
        case P_A_BELOW: to_a = *na < wa; to_b = !to_a; break;
        case P_FEW_SHARED: to_a = rnd() % 50 == 0 || r == 0; to_b = !to_a || rnd() % 50 == 0; break;
        case P_RUNS: to_a = side; to_b = !side; break;
        default: to_a = r == 0; to_b = !to_a; break;
        }
        if (*na >= wa) { to_b |= to_a; to_a = 0; }
        if (*nb >= wb) { to_a |= to_b; to_b = 0; }
        if (to_a) ia[(*na)++] = x;
        if (to_b) ib[(*nb)++] = x;
    }
    ck_assert_uint_lt(x, top);
    shift = top - 1 - x;
    for (uint64_t k = 0; k < *na; k++) ia[k] += shift;
    for (uint64_t k = 0; k < *nb; k++) ib[k] += shift;
}

/* Special values at indices in both: NaN + NaN (different payloads,
 * quiet and signalling), -0.0 + +0.0, +Inf + -Inf, NaN + a number. */
static void put_shared_specials(sv *a, sv *b, const uint64_t *ia, uint64_t na, const uint64_t *ib, uint64_t nb)
{
    static const uint32_t f32a[] = {0x7fc00123u, 0x7f800001u, 0x80000000u, 0x7f800000u, 0xffc00042u};
    static const uint32_t f32b[] = {0xffc00001u, 0x7fc00777u, 0x00000000u, 0xff800000u, 0x3f800000u};
    static const uint64_t f64a[] = {UINT64_C(0x7ff8000000000123), UINT64_C(0x7ff0000000000001), UINT64_C(1) << 63,
                                    UINT64_C(0x7ff0000000000000), UINT64_C(0xfff8000000000042)};
    static const uint64_t f64b[] = {UINT64_C(0xfff8000000000001), UINT64_C(0x7ff8000000000777), 0,
                                    UINT64_C(0xfff0000000000000), UINT64_C(0x3ff0000000000000)};
    uint64_t i = 0, j = 0, k = 0;
    if (a->vtype != SPARCML_FLOAT && a->vtype != SPARCML_DOUBLE) return;
    while (i < na && j < nb && k < 5) {
        if (ia[i] < ib[j]) { i++; continue; }
        if (ib[j] < ia[i]) { j++; continue; }
        if (a->vtype == SPARCML_FLOAT) {
            memcpy((char *)a->val + 4 * i, &f32a[k], 4);
            memcpy((char *)b->val + 4 * j, &f32b[k], 4);
        } else {
            memcpy((char *)a->val + 8 * i, &f64a[k], 8);
            memcpy((char *)b->val + 8 * j, &f64b[k], 8);
        }
        i++, j++, k++;
    }
}

static void put_specials(int vtype, void *dense, uint64_t dim);

/* Both operand orders of the merge-add of layout l, n entries each, in a
 * space of dimension dim: each result is the reference merge's. */
static void check_pair(int l, uint64_t n, uint64_t dim, int vtype, uint64_t *ia, uint64_t *ib)
{
    uint64_t na, nb;
    char what[64];
    pair_indices(l, n, dim, ia, &na, ib, &nb);
    char *abuf = malloc(sparcml_sparse_bytes(dim, vtype, na)), *bbuf = malloc(sparcml_sparse_bytes(dim, vtype, nb));
    sv a = list_stream(abuf, dim, vtype, ia, na, 1), b = list_stream(bbuf, dim, vtype, ib, nb, 1);
    if (na > 2) put_specials(vtype, a.val, na);
    if (nb > 2) put_specials(vtype, b.val, nb);
    put_shared_specials(&a, &b, ia, na, ib, nb);
    for (int order = 0; order < 2; order++) {
        const sv *x = order ? &b : &a, *y = order ? &a : &b;
        char *out = malloc(stream_merge_bound(x, y));
        sv r = stream_merge_add(x, y, out);
        snprintf(what, sizeof what, "layout %d n %llu order %d", l, (unsigned long long)n, order);
        ck_assert_uint_le(stream_bytes(&r), stream_merge_bound(x, y));
        assert_merge_is_reference(x, y, &r, what);
        free(out);
    }
    free(abuf);
    free(bbuf);
}

/* Every layout and length, each value type and index width (indices up
 * to the largest of each: the AVX2 merge flips their top bit; with 32-bit
 * ones also up to 2^28 - 1, the largest the AVX2 merge takes as they are,
 * and a little beyond), on both paths (stream_force_portable). */
START_TEST(merge_add_layouts_both_paths)
{
    static const uint64_t ns[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 63, 64, 65, 127, 200, 1000};
    static const uint64_t narrow[] = {UINT64_C(1) << 28, (UINT64_C(1) << 28) + 512, UINT64_C(1) << 32};
    int vtype = _i % 4 + 1, wide = _i / 4 % 2; /* 8-15: the portable path */
    uint64_t *ia = malloc(1001 * 8), *ib = malloc(1001 * 8);
    stream_force_portable(_i / 8);
    rng_state = 3131 + (uint64_t)_i % 8;
    for (size_t d = 0; d < (wide ? 1 : sizeof narrow / sizeof narrow[0]); d++)
        for (int l = 0; l < P_COUNT; l++)
            for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
                check_pair(l, ns[k], wide ? SPARCML_MAX_DIM : narrow[d], vtype, ia, ib);
    stream_force_portable(0);
    free(ia);
    free(ib);
}
END_TEST

/* Windows whose indices span just less than 2^28 (the tagged network's),
 * exactly 2^28 and more (the keyed network's), of every value type: a's
 * even indices from 0, b's odd ones, the first windows' last at s and
 * s + 1; enough entries that the merge takes its windows tagged. */
START_TEST(merge_add_window_spans)
{
    int vtype = _i % 4 + 1; /* 4-7: the portable path */
    uint64_t dim = UINT64_C(1) << 32, ia[200], ib[200];
    char abuf[4096], bbuf[4096], out[8192], what[64];
    stream_force_portable(_i / 4);
    for (uint64_t s = (UINT64_C(1) << 28) - 3; s <= (UINT64_C(1) << 28) + 1; s++) {
        for (uint64_t k = 0; k < 200; k++) {
            ia[k] = k < 7 ? 2 * k : s + 2 * (k - 7);
            ib[k] = ia[k] + 1;
        }
        sv a = list_stream(abuf, dim, vtype, ia, 200, 1), b = list_stream(bbuf, dim, vtype, ib, 200, 1);
        for (int order = 0; order < 2; order++) {
            sv r = stream_merge_add(order ? &b : &a, order ? &a : &b, out);
            snprintf(what, sizeof what, "span %llu order %d", (unsigned long long)(s + 1), order);
            assert_merge_is_reference(order ? &b : &a, order ? &a : &b, &r, what);
        }
    }
    stream_force_portable(0);
}
END_TEST

/* Unions near the dense line, where the merge counts the union first and
 * has room for it only (32-bit indices: with 64-bit ones that line lies
 * beyond 2^31 entries). */
START_TEST(merge_add_exact_room_both_paths)
{
    static const int layouts[] = {P_IDENTICAL, P_HALF, P_FEW_SHARED};
    static const uint64_t ns[] = {3000, 3000, 2500};
    int vtype = _i % 4 + 1;
    /* dense from 5000 entries (4-byte values) or 6667 (8-byte): bounds
     * beyond that, unions below */
    uint64_t dim = 10000, scale = sparcml_value_size(vtype) == 4 ? 15 : 17;
    uint64_t *ia = malloc(3401 * 8), *ib = malloc(3401 * 8);
    stream_force_portable(_i / 4);
    rng_state = 4747 + (uint64_t)_i % 4;
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) check_pair(layouts[k], ns[k] * scale / 15, dim, vtype, ia, ib);
    stream_force_portable(0);
    free(ia);
    free(ib);
}
END_TEST

/* Inputs with the same indices: the merge knows their union without a
 * count and writes nothing beyond the union's room (bytes behind it stay
 * as they were), each value type and index width, on both paths. */
START_TEST(merge_add_same_indices_stays_in_the_union)
{
    enum { GUARD = 256 };
    static const uint64_t ns[] = {0, 1, 7, 8, 9, 16, 17, 33, 200, 1000, 5000};
    int vtype = _i % 4 + 1, wide = _i / 4 % 2; /* 8-15: the portable path */
    uint64_t dim = wide ? SPARCML_MAX_DIM : UINT64_C(1) << 28, na, nb;
    uint64_t *ia = malloc(5001 * 8), *ib = malloc(5001 * 8);
    char what[64];
    stream_force_portable(_i / 8);
    rng_state = 5353 + (uint64_t)_i;
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        pair_indices(P_IDENTICAL, ns[k], dim, ia, &na, ib, &nb);
        uint64_t room = sparcml_sparse_bytes(dim, vtype, na);
        char *abuf = malloc(room), *bbuf = malloc(room), *out = malloc(room + GUARD);
        sv a = list_stream(abuf, dim, vtype, ia, na, 1), b = list_stream(bbuf, dim, vtype, ib, nb, 1);
        if (na > 2) put_specials(vtype, a.val, na);
        put_shared_specials(&a, &b, ia, na, ib, nb);
        for (int order = 0; order < 2; order++) {
            memset(out + room, 0xa5, GUARD);
            sv r = stream_merge_add(order ? &b : &a, order ? &a : &b, out);
            snprintf(what, sizeof what, "n %llu order %d", (unsigned long long)ns[k], order);
            assert_merge_is_reference(order ? &b : &a, order ? &a : &b, &r, what);
            for (int g = 0; g < GUARD; g++)
                ck_assert_msg((unsigned char)out[room + g] == 0xa5, "%s: byte %d behind the union written", what, g);
        }
        free(abuf); free(bbuf); free(out);
    }
    stream_force_portable(0);
    free(ia);
    free(ib);
}
END_TEST

START_TEST(accumulate_matches_reference)
{
    int vtype = _i + 1;
    rng_state = 7 + (uint64_t)_i;
    for (size_t db = 0; db < sizeof densities / sizeof densities[0]; db++) {
        uint64_t dim = 1 + rnd() % 2000;
        vec a = make_vec(dim, vtype, 1.0), b = make_vec(dim, vtype, densities[db]);
        sv vb = stream_view(b.buf);
        void *acc = malloc(sparcml_dense_bytes(dim, vtype)), *want = dense_sum(&a, &b);
        sv va = stream_init(acc, dim, vtype, dim, 1);
        memcpy(va.val, a.dense, dim * va.vs);
        stream_accumulate(&va, &vb, (int)(db % 2));
        assert_stream_is(&va, want);
        free(acc); free(want); free_vec(&a); free_vec(&b);
    }
}
END_TEST

START_TEST(slice_then_concat_round_trips)
{
    int vtype = _i + 1;
    rng_state = 99 + (uint64_t)_i;
    for (size_t d = 0; d < sizeof densities / sizeof densities[0]; d++) {
        for (int P = 1; P <= 9; P++) {
            uint64_t dim = rnd() % 500 + (uint64_t)(P > 5 ? 0 : 1), off[10], nnz = 0;
            vec a = make_vec(dim, vtype, densities[d]);
            sv va = stream_view(a.buf), parts[9];
            char *bufs[9], *out;
            int dense = va.dense;
            stream_split_bounds(dim, P, off);
            ck_assert_uint_eq(off[0], 0);
            ck_assert_uint_eq(off[P], dim);
            for (int r = 0; r < P; r++) {
                ck_assert_uint_le(off[r], off[r + 1]);
                ck_assert_uint_le(off[r + 1] - off[r], dim / P + 1);
                bufs[r] = malloc(stream_slice_bytes(&va, off[r], off[r + 1]) + 8);
                parts[r] = stream_slice(&va, off[r], off[r + 1], bufs[r]);
                ck_assert_uint_eq(stream_bytes(&parts[r]), stream_slice_bytes(&va, off[r], off[r + 1]));
                ck_assert_uint_eq(parts[r].dim, off[r + 1] - off[r]);
                /* a slice keeps the format, so a sparse one keeps its indices */
                ck_assert_int_eq(parts[r].dense, va.dense);
                nnz += parts[r].nnz;
            }
            if (!dense) ck_assert_uint_eq(nnz, va.nnz);
            out = malloc(dense ? sparcml_dense_bytes(dim, vtype) : sparcml_sparse_bytes(dim, vtype, nnz));
            va = stream_concat(parts, off, P, dim, dense, out);
            ck_assert_uint_eq(va.nnz, dense ? dim : nnz);
            assert_stream_is(&va, a.dense);
            for (int r = 0; r < P; r++) free(bufs[r]);
            free(out); free_vec(&a);
        }
    }
}
END_TEST

/* Pipelined recursive doubling: range streams keep the dimension and hold
 * exactly their range's entries, and merging two vectors range by range,
 * then joining (stream_concat at offset 0), gives the bytes of the whole
 * merge wherever that stays sparse. */
START_TEST(range_merges_join_to_the_whole_merge)
{
    int vtype = _i + 1;
    rng_state = 7 + (uint64_t)_i;
    for (size_t d = 0; d < 3; d++) { /* the sparse densities */
        for (int C = 2; C <= SPARCML_PIPELINE_CHUNKS_MAX; C++) {
            uint64_t dim = rnd() % 700 + 8, off[SPARCML_PIPELINE_CHUNKS_MAX + 1], zero[SPARCML_PIPELINE_CHUNKS_MAX] = {0};
            vec a = make_vec(dim, vtype, densities[d]), b = make_vec(dim, vtype, densities[d]);
            sv va = stream_view(a.buf), vb = stream_view(b.buf), whole, joined, sums[SPARCML_PIPELINE_CHUNKS_MAX];
            char *wbuf = malloc(stream_merge_bound(&va, &vb)), *jbuf = malloc(stream_merge_bound(&va, &vb));
            char *ra[SPARCML_PIPELINE_CHUNKS_MAX], *rb[SPARCML_PIPELINE_CHUNKS_MAX], *rs[SPARCML_PIPELINE_CHUNKS_MAX];
            uint64_t na = 0;
            whole = stream_merge_add(&va, &vb, wbuf);
            stream_split_bounds(dim, C, off);
            for (int i = 0; i < C; i++) {
                sv pa, pb;
                ra[i] = malloc(stream_range_bytes(&va, off[i], off[i + 1]));
                rb[i] = malloc(stream_range_bytes(&vb, off[i], off[i + 1]));
                pa = stream_range(&va, off[i], off[i + 1], ra[i]);
                pb = stream_range(&vb, off[i], off[i + 1], rb[i]);
                ck_assert_uint_eq(pa.dim, dim);
                ck_assert_uint_eq(stream_bytes(&pa), stream_range_bytes(&va, off[i], off[i + 1]));
                for (uint64_t e = 0; e < pa.nnz; e++) {
                    uint64_t x = sparcml_get_index(pa.idx, pa.iw, e);
                    ck_assert(x >= off[i] && x < off[i + 1]);
                }
                na += pa.nnz;
                rs[i] = malloc(stream_merge_bound(&pa, &pb));
                sums[i] = stream_merge_add(&pa, &pb, rs[i]);
                ck_assert(!sums[i].dense);
            }
            ck_assert_uint_eq(na, va.nnz);
            if (!whole.dense) {
                joined = stream_concat(sums, zero, C, dim, 0, jbuf);
                ck_assert_uint_eq(stream_bytes(&joined), stream_bytes(&whole));
                ck_assert_mem_eq(jbuf, wbuf, stream_bytes(&whole));
            }
            for (int i = 0; i < C; i++) { free(ra[i]); free(rb[i]); free(rs[i]); }
            free(wbuf); free(jbuf); free_vec(&a); free_vec(&b);
        }
    }
}
END_TEST

/* A dense sum and the bitmap of its union give back exactly the union's
 * entries, zeros (cancelled sums) included; NULL means every index. */
START_TEST(select_keeps_exactly_the_marked_entries)
{
    uint64_t dim = 200, ia[] = {0, 5, 63, 64, 199}, ib[] = {5, 64, 130};
    float va_[] = {1, 2, 3, 4, 5}, vb_[] = {-2, 1, 7};
    uint64_t want_i[] = {0, 5, 63, 64, 130, 199};
    float want_v[] = {1, 0, 3, 5, 7, 5};
    char a[256], b[256], sum[1024], sel[1024];
    static char all[2048];
    uint64_t present[4] = {0}, where;
    sv sa, sb, acc, r;
    ck_assert_int_eq(sparcml_stream_from_sorted(a, 32, dim, SPARCML_FLOAT, 5, ia, va_), SPARCML_OK);
    ck_assert_int_eq(sparcml_stream_from_sorted(b, 32, dim, SPARCML_FLOAT, 3, ib, vb_), SPARCML_OK);
    ck_assert_int_eq(stream_parse(a, 256, SPARCML_FLOAT, &sa, &where), SPARCML_R_OK);
    ck_assert_int_eq(stream_parse(b, 256, SPARCML_FLOAT, &sb, &where), SPARCML_R_OK);
    acc = stream_init(sum, dim, SPARCML_FLOAT, dim, 1);
    stream_densify(&sa, acc.val);
    stream_accumulate(&acc, &sb, 0);
    stream_mark_present(&sa, present);
    stream_mark_present(&sb, present);
    ck_assert_uint_eq(stream_count_present(present, dim), 6);
    ck_assert_uint_eq(stream_count_present(present, 64), 3); /* bits past dim are not counted */
    r = stream_select(&acc, present, 6, sel);
    ck_assert_int_eq(r.dense, 0);
    ck_assert_uint_eq(r.nnz, 6);
    for (uint64_t i = 0; i < 6; i++) {
        uint64_t idx;
        float v;
        sparcml_stream_entry(sel, i, &idx, &v);
        ck_assert_uint_eq(idx, want_i[i]);
        ck_assert_float_eq(v, want_v[i]);
    }
    r = stream_select(&acc, NULL, dim, all);
    ck_assert_uint_eq(r.nnz, dim);
    ck_assert_uint_eq(stream_bytes(&r), sparcml_sparse_bytes(dim, SPARCML_FLOAT, dim));
    for (uint64_t i = 0; i < dim; i++) {
        uint64_t idx;
        float v;
        sparcml_stream_entry(all, i, &idx, &v);
        ck_assert_uint_eq(idx, i);
        ck_assert_float_eq(v, ((float *)acc.val)[i]);
    }
}
END_TEST

/* 64-bit indices: dim > 2^32, sparse only (a dense vector would not fit). */
/* Slices of a stream of 8-byte indices: one wider than 2^32 (8 bytes
 * to 8, shifted), one narrower (8 to 4), and their concatenation (4 to 8
 * and 8 to 8, shifted back) equal to the whole, entry by entry; a slice
 * of 4-byte indices shifted. */
START_TEST(wide_slices_round_trip)
{
    uint64_t dim = (UINT64_C(1) << 33) + 5, cut = (UINT64_C(1) << 32) + 8, off[3] = {0, cut, dim};
    uint64_t idx[] = {0, 7, cut - 1, cut, cut + 9, UINT64_C(1) << 33, dim - 1};
    double v[] = {1, 2, 3, 4, 5, 6, 7};
    char a[512], p0[512], p1[512], o[512];
    uint64_t where;
    sv sa, parts[2], whole;
    ck_assert_int_eq(sparcml_stream_from_sorted(a, 64, dim, SPARCML_DOUBLE, 7, idx, v), SPARCML_OK);
    ck_assert_int_eq(stream_parse(a, sizeof a, SPARCML_DOUBLE, &sa, &where), SPARCML_R_OK);
    parts[0] = stream_slice(&sa, 0, cut, p0);
    parts[1] = stream_slice(&sa, cut, dim, p1);
    ck_assert_uint_eq(parts[0].iw, 8);
    ck_assert_uint_eq(parts[1].iw, 4);
    ck_assert_uint_eq(parts[0].nnz, 3);
    ck_assert_uint_eq(sparcml_get_index(parts[1].idx, 4, 0), 0);
    ck_assert_uint_eq(sparcml_get_index(parts[1].idx, 4, 3), dim - 1 - cut);
    whole = stream_concat(parts, off, 2, dim, 0, o);
    ck_assert_uint_eq(whole.nnz, 7);
    for (uint64_t i = 0; i < 7; i++) {
        uint64_t at;
        double x;
        sparcml_stream_entry(o, i, &at, &x);
        ck_assert_uint_eq(at, idx[i]);
        ck_assert_double_eq(x, v[i]);
    }
    parts[1] = stream_slice(&sa, 5, dim, p1); /* 8 to 8, shifted by 5 */
    ck_assert_uint_eq(parts[1].iw, 8);
    ck_assert_uint_eq(sparcml_get_index(parts[1].idx, 8, 0), 2);
    ck_assert_uint_eq(sparcml_get_index(parts[1].idx, 8, 5), dim - 1 - 5);
    /* 4 to 4, shifted by 400 */
    ck_assert_int_eq(sparcml_stream_from_sorted(a, 64, 1000, SPARCML_DOUBLE, 3, (uint64_t[]){3, 500, 999}, v),
                     SPARCML_OK);
    ck_assert_int_eq(stream_parse(a, sizeof a, SPARCML_DOUBLE, &sa, &where), SPARCML_R_OK);
    parts[1] = stream_slice(&sa, 400, 1000, p1);
    ck_assert_uint_eq(parts[1].iw, 4);
    ck_assert_uint_eq(parts[1].nnz, 2);
    ck_assert_uint_eq(sparcml_get_index(parts[1].idx, 4, 0), 100);
    ck_assert_uint_eq(sparcml_get_index(parts[1].idx, 4, 1), 599);
}
END_TEST

START_TEST(wide_indices)
{
    uint64_t dim = (UINT64_C(1) << 33) + 5, ia[] = {0, 7, UINT64_C(1) << 32, dim - 1};
    uint64_t ib[] = {7, (UINT64_C(1) << 32) + 1, dim - 1};
    double va_[] = {1, 2, 3, 4}, vb_[] = {10, 20, 40}, out_v[] = {1, 12, 3, 20, 44};
    uint64_t out_i[] = {0, 7, UINT64_C(1) << 32, (UINT64_C(1) << 32) + 1, dim - 1};
    char a[256], b[256], o[512];
    sv sa, sb, r;
    uint64_t where;
    ck_assert_int_eq(sparcml_stream_from_sorted(a, 32, dim, SPARCML_DOUBLE, 4, ia, va_), SPARCML_OK);
    ck_assert_int_eq(sparcml_stream_from_sorted(b, 32, dim, SPARCML_DOUBLE, 3, ib, vb_), SPARCML_OK);
    ck_assert_int_eq(stream_parse(a, 256, SPARCML_DOUBLE, &sa, &where), SPARCML_R_OK);
    ck_assert_int_eq(stream_parse(b, 256, SPARCML_DOUBLE, &sb, &where), SPARCML_R_OK);
    ck_assert_uint_eq(sa.iw, 8);
    ck_assert_uint_le(stream_merge_bound(&sa, &sb), sizeof o);
    r = stream_merge_add(&sa, &sb, o);
    ck_assert_uint_eq(r.nnz, 5);
    for (uint64_t i = 0; i < 5; i++) {
        uint64_t idx;
        double v;
        sparcml_stream_entry(o, i, &idx, &v);
        ck_assert_uint_eq(idx, out_i[i]);
        ck_assert_double_eq(v, out_v[i]);
    }
}
END_TEST

START_TEST(integer_sums_wrap)
{
    uint64_t idx[] = {3};
    int32_t x = INT32_MAX, y = 1;
    char a[64], b[64], o[128];
    int32_t got;
    uint64_t where, i;
    sv sa, sb, r;
    sparcml_stream_from_sorted(a, 8, 10, SPARCML_INT32, 1, idx, &x);
    sparcml_stream_from_sorted(b, 8, 10, SPARCML_INT32, 1, idx, &y);
    stream_parse(a, 64, SPARCML_INT32, &sa, &where);
    stream_parse(b, 64, SPARCML_INT32, &sb, &where);
    r = stream_merge_add(&sa, &sb, o);
    ck_assert_uint_eq(r.nnz, 1);
    sparcml_stream_entry(o, 0, &i, &got);
    ck_assert_int_eq(got, INT32_MIN);
}
END_TEST

/* ---------------------------------------------------------- validation */

static char good[256] __attribute__((aligned(8)));

static void make_good(void)
{
    uint64_t idx[] = {1, 4, 9};
    float v[] = {1, 2, 3};
    ck_assert_int_eq(sparcml_stream_from_sorted(good, 32, 10, SPARCML_FLOAT, 3, idx, v), SPARCML_OK);
}

static int parse_good(uint64_t avail)
{
    sv s;
    uint64_t where;
    return stream_parse(good, avail, SPARCML_FLOAT, &s, &where);
}

static void set_u32(size_t off, uint32_t v) { memcpy(good + off, &v, 4); }
static void set_u64(size_t off, uint64_t v) { memcpy(good + off, &v, 8); }

START_TEST(validation_table)
{
    sparcml_header h;
    sv s;
    uint64_t where;
    make_good();
    ck_assert_int_eq(parse_good(256), SPARCML_R_OK);
    ck_assert_int_eq(parse_good(sparcml_sparse_bytes(10, SPARCML_FLOAT, 3)), SPARCML_R_OK);
    ck_assert_int_eq(parse_good(sparcml_sparse_bytes(10, SPARCML_FLOAT, 3) - 1), SPARCML_R_STREAM_OVERFLOW);
    ck_assert_int_eq(parse_good(31), SPARCML_R_SHORT_BUFFER);
    ck_assert_int_eq(stream_parse(NULL, 256, SPARCML_FLOAT, &s, &where), SPARCML_R_NULL_BUFFER);
    ck_assert_int_eq(stream_parse(good + 4, 200, SPARCML_FLOAT, &s, &where), SPARCML_R_UNALIGNED);
    ck_assert_int_eq(stream_parse(good, 256, SPARCML_DOUBLE, &s, &where), SPARCML_R_VALUE_TYPE_TAG);
    make_good(); set_u32(0, 0xdeadbeef); ck_assert_int_eq(parse_good(256), SPARCML_R_BAD_MAGIC);
    make_good(); good[4] = 2; ck_assert_int_eq(parse_good(256), SPARCML_R_BAD_VERSION);
    make_good(); good[5] = 9; ck_assert_int_eq(parse_good(256), SPARCML_R_BAD_VALUE_TYPE);
    make_good(); good[6] = 8; ck_assert_int_eq(parse_good(256), SPARCML_R_BAD_INDEX_WIDTH);
    make_good(); good[7] = 2; ck_assert_int_eq(parse_good(256), SPARCML_R_BAD_FORMAT);
    make_good(); set_u64(24, 1); ck_assert_int_eq(parse_good(256), SPARCML_R_BAD_RESERVED);
    make_good(); set_u64(16, 11); ck_assert_int_eq(parse_good(256), SPARCML_R_NNZ_GT_DIM);
    make_good(); set_u64(8, SPARCML_MAX_DIM + 1); ck_assert_int_eq(parse_good(256), SPARCML_R_DIM_TOO_LARGE);
    make_good(); good[7] = 1; ck_assert_int_eq(parse_good(256), SPARCML_R_DENSE_NNZ);
    make_good(); set_u32(32 + 8, 10);
    ck_assert_int_eq(stream_parse(good, 256, SPARCML_FLOAT, &s, &where), SPARCML_R_INDEX_GE_DIM);
    ck_assert_uint_eq(where, 2);
    make_good(); set_u32(32 + 4, 0);
    ck_assert_int_eq(stream_parse(good, 256, SPARCML_FLOAT, &s, &where), SPARCML_R_UNSORTED);
    ck_assert_uint_eq(where, 1);
    make_good(); set_u32(32 + 4, 1);
    ck_assert_int_eq(stream_parse(good, 256, SPARCML_FLOAT, &s, &where), SPARCML_R_DUPLICATE);
    memcpy(&h, good, sizeof h);
    ck_assert_uint_eq(h.magic, SPARCML_MAGIC);
}
END_TEST

/* A fault at every position of streams of many lengths, both index
 * widths: the first fault is named at its entry, whatever the length (the
 * validation reads whole blocks of indices before a tail). */
static uint64_t fault_index(int kind, const uint64_t *idx, uint64_t p, uint64_t dim)
{
    if (kind == 0) return dim + p % 3;               /* not below dim */
    return kind == 1 ? idx[p - 1] : idx[p - 1] - 1; /* a duplicate, a step back */
}

static void put_index(char *at, unsigned iw, uint64_t x)
{
    uint32_t narrow = (uint32_t)x;
    if (iw == 8) memcpy(at, &x, 8);
    else memcpy(at, &narrow, 4);
}

START_TEST(validation_every_position)
{
    static const int expect[3] = {SPARCML_R_INDEX_GE_DIM, SPARCML_R_DUPLICATE, SPARCML_R_UNSORTED};
    enum { MOST = 70 };
    uint64_t idx[MOST], got_where;
    float v[MOST] = {0};
    char buf[SPARCML_HEADER_BYTES + MOST * 12 + 16] __attribute__((aligned(8)));
    for (int wide = 0; wide < 2; wide++) {
        uint64_t dim = wide ? (UINT64_C(1) << 40) : 1000, first = wide ? (UINT64_C(1) << 33) : 100;
        unsigned iw = wide ? 8 : 4;
        for (uint64_t n = 0; n <= MOST; n++) {
            sv s;
            for (uint64_t i = 0; i < n; i++) idx[i] = first + 3 * i;
            ck_assert_int_eq(sparcml_stream_from_sorted(buf, sizeof buf / 8, dim, SPARCML_FLOAT, n, idx, v), SPARCML_OK);
            ck_assert_int_eq(stream_parse(buf, sizeof buf, SPARCML_FLOAT, &s, &got_where), SPARCML_R_OK);
            for (uint64_t p = 0; p < n; p++)
                for (int kind = 0; kind < (p ? 3 : 1); kind++) { /* entry 0 has no predecessor */
                    char *at = buf + SPARCML_HEADER_BYTES + p * iw;
                    put_index(at, iw, fault_index(kind, idx, p, dim));
                    ck_assert_int_eq(stream_parse(buf, sizeof buf, SPARCML_FLOAT, &s, &got_where), expect[kind]);
                    ck_assert_uint_eq(got_where, p);
                    put_index(at, iw, idx[p]);
                }
        }
    }
}
END_TEST

START_TEST(every_reason_has_text_and_class)
{
    for (int r = 1; r < SPARCML_R_COUNT_; r++) {
        ck_assert_str_ne(sparcml_reason_text(r), "unknown error");
        ck_assert_int_ne(sparcml_reason_class(r), MPI_SUCCESS);
    }
}
END_TEST

/* ------------------------------------------------------------- helpers */

/* More pairs than a sparse stream holds in the dense size: the helpers
 * write the dense format (the library's size rule), within
 * sparcml_capacity, and the values land at their indices. */
START_TEST(from_pairs_writes_dense_when_smaller)
{
    enum { DIM = 100, K = 60 };
    uint64_t idx[K];
    float v[K], dense[DIM];
    MPI_Count cap = sparcml_capacity(DIM, SPARCML_FLOAT);
    char buf[(DIM * 4 + 48)] __attribute__((aligned(8)));
    sparcml_header h;
    ck_assert_uint_le((uint64_t)cap * 8, sizeof buf);
    for (int i = 0; i < K; i++) { idx[i] = (uint64_t)(DIM - 1 - i); v[i] = (float)(i + 1); }
    ck_assert_int_eq(sparcml_stream_from_pairs(buf, cap, DIM, SPARCML_FLOAT, K, idx, v), SPARCML_OK);
    ck_assert_int_eq(sparcml_stream_header(buf, &h), SPARCML_OK);
    ck_assert_int_eq(h.format, SPARCML_DENSE);
    ck_assert_int_eq(sparcml_stream_to_dense(buf, dense, DIM), SPARCML_OK);
    for (int i = 0; i < DIM; i++)
        ck_assert(dense[i] == (i >= DIM - K ? (float)(DIM - i) : 0.0f));
    /* Below the line it stays sparse. */
    ck_assert_int_eq(sparcml_stream_from_pairs(buf, cap, DIM, SPARCML_FLOAT, 40, idx, v), SPARCML_OK);
    ck_assert_int_eq(sparcml_stream_header(buf, &h), SPARCML_OK);
    ck_assert_int_eq(h.format, SPARCML_SPARSE);
}
END_TEST

START_TEST(from_pairs_sorts_and_sums_duplicates)
{
    uint64_t idx[] = {5, 1, 5, 9, 1};
    int64_t v[] = {10, 1, 20, 3, 2};
    char buf[256] __attribute__((aligned(8)));
    int64_t dense[12];
    ck_assert_int_eq(sparcml_stream_from_pairs(buf, 32, 12, SPARCML_INT64, 5, idx, v), SPARCML_OK);
    ck_assert_int_eq(sparcml_stream_to_dense(buf, dense, 12), SPARCML_OK);
    ck_assert_int_eq(dense[1], 3);
    ck_assert_int_eq(dense[5], 30);
    ck_assert_int_eq(dense[9], 3);
    ck_assert_int_eq(dense[0] + dense[2] + dense[11], 0);
    /* an index beyond dim, written behind the builder's back: malformed */
    {
        void *ip, *vp;
        uint32_t bad = 12;
        sparcml_stream_arrays(buf, &ip, &vp);
        memcpy((char *)ip + 4, &bad, 4);
        ck_assert_int_eq(sparcml_stream_to_dense(buf, dense, 12), SPARCML_E_FORMAT);
    }
    idx[0] = 12;
    ck_assert_int_eq(sparcml_stream_from_pairs(buf, 32, 12, SPARCML_INT64, 5, idx, v), SPARCML_E_ARG);
    ck_assert_int_eq(sparcml_stream_from_pairs(buf, 2, 12, SPARCML_INT64, 1, idx + 1, v), SPARCML_E_CAPACITY);
    /* more pairs than memory can hold: refused before any is read */
    ck_assert_int_eq(sparcml_stream_from_pairs(buf, 32, 12, SPARCML_INT64, UINT64_MAX / 16, idx, v), SPARCML_E_NOMEM);
    ck_assert_int_eq(sparcml_stream_from_pairs(buf, 32, 12, SPARCML_INT64, (UINT64_C(1) << 63) + 1, idx, v),
                     SPARCML_E_NOMEM); /* positions of 64 bits */
}
END_TEST

/* Many pairs with repeated indices, over dimensions of 1 to 7 bytes of
 * index (the sort's passes, and the bytes every index shares, skipped; an
 * index and its position in one word, in exactly 64 bits at 2^52, and in
 * two words at 2^56),
 * float, double and 64-bit values: the stream holds each distinct index
 * once, ascending, with its values summed in input order (values of very
 * different magnitudes, so any other order gives other float bits), as a
 * reference computes it without sorting the pairs. */
START_TEST(from_pairs_matches_a_reference)
{
    enum { N = 3000, POOL = 50 };
    static const uint64_t dims[] = {200, 70001, (UINT64_C(1) << 40) + 5, UINT64_C(1) << 52, UINT64_C(1) << 56};
    static const int vtypes[] = {SPARCML_FLOAT, SPARCML_DOUBLE, SPARCML_INT64};
    static uint64_t idx[N], want_idx[N], pool[POOL], buf[(N * 16 + 64) / 8 + 4096];
    static char vals[N * 8], want_vals[N * 8];
    uint64_t dim = dims[_i / 3], m = 0, top = dim - 1;
    int vtype = vtypes[_i % 3];
    size_t vs = sparcml_value_size(vtype);
    sparcml_header h;
    void *ip, *vp;
    rng_state = 77 + (uint64_t)_i;
    for (int j = 0; j < POOL; j++) pool[j] = rnd() % dim;
    for (int i = 0; i < N; i++) {
        double x = (double)(rnd() % 5) * (rnd() % 2 ? 1e8 : 1.25) * (rnd() % 2 ? -1 : 1);
        float f = (float)x;
        int64_t k = (int64_t)(rnd() % 1000) - 500;
        idx[i] = i % 2 ? pool[rnd() % POOL] : rnd() % dim;
        if (i == 7) idx[i] = top; /* the largest index */
        memcpy(vals + i * vs, vtype == SPARCML_FLOAT ? (void *)&f : vtype == SPARCML_DOUBLE ? (void *)&x : (void *)&k, vs);
    }
    /* the reference: the smallest index above the last one taken, again and again */
    for (uint64_t last = 0, first = 1;; first = 0) {
        uint64_t next = UINT64_MAX;
        int found = 0;
        for (int i = 0; i < N; i++)
            if ((first || idx[i] > last) && (!found || idx[i] < next)) next = idx[i], found = 1;
        if (!found) break;
        want_idx[m] = next;
        memset(want_vals + m * vs, 0, vs);
        for (int i = 0, seen = 0; i < N; i++) {
            if (idx[i] != next) continue;
            if (!seen++) memcpy(want_vals + m * vs, vals + i * vs, vs);
            else if (vtype == SPARCML_FLOAT) { float a, b; memcpy(&a, want_vals + m * vs, 4); memcpy(&b, vals + i * vs, 4); a += b; memcpy(want_vals + m * vs, &a, 4); }
            else if (vtype == SPARCML_DOUBLE) { double a, b; memcpy(&a, want_vals + m * vs, 8); memcpy(&b, vals + i * vs, 8); a += b; memcpy(want_vals + m * vs, &a, 8); }
            else { int64_t a, b; memcpy(&a, want_vals + m * vs, 8); memcpy(&b, vals + i * vs, 8); a += b; memcpy(want_vals + m * vs, &a, 8); }
        }
        last = next;
        m++;
    }
    ck_assert_int_eq(sparcml_stream_from_pairs(buf, (MPI_Count)(sizeof buf / 8), dim, vtype, N, idx, vals), SPARCML_OK);
    ck_assert_int_eq(sparcml_stream_header(buf, &h), SPARCML_OK);
    sparcml_stream_arrays(buf, &ip, &vp);
    if (h.format == SPARCML_DENSE) {
        ck_assert_uint_eq(dim, 200);
        for (uint64_t e = 0, j = 0; e < dim; e++) {
            int held = j < m && want_idx[j] == e;
            char zero[8] = {0};
            ck_assert_msg(memcmp((char *)vp + e * vs, held ? want_vals + j * vs : zero, vs) == 0, "element %llu",
                          (unsigned long long)e);
            j += (uint64_t)held;
        }
        return;
    }
    ck_assert_uint_eq(h.nnz, m);
    for (uint64_t j = 0; j < m; j++) {
        uint64_t got = 0;
        memcpy(&got, (char *)ip + j * sparcml_index_width(dim), sparcml_index_width(dim));
        ck_assert_msg(got == want_idx[j], "entry %llu: index %llu, want %llu", (unsigned long long)j,
                      (unsigned long long)got, (unsigned long long)want_idx[j]);
        ck_assert_msg(memcmp((char *)vp + j * vs, want_vals + j * vs, vs) == 0, "entry %llu: value",
                      (unsigned long long)j);
    }
}
END_TEST

/* Pairs whose low index byte takes 200 values exactly 256 times each and
 * the other 56 1 to 7 or 100 to 399 times, each index twice (a byte's last
 * once where it comes an odd number of times), in random order: enough of
 * them for the sort to gather its elements in lines (the places of its
 * first pass collide in cache sets), with lines that several bytes share,
 * their last ones too; one word per element (dimension 2^17) and two
 * (2^56).  The reference sums each index's doubles in input order in a
 * table of its own, without sorting. */
START_TEST(from_pairs_with_evenly_spread_bytes)
{
    enum { MAX_N = 200 * 256 + 56 * 400, HIGH = 200 };
    static const uint64_t dims[] = {UINT64_C(1) << 17, UINT64_C(1) << 56};
    static uint64_t idx[MAX_N], buf[(MAX_N * 16 + 64) / 8 + 16];
    static double vals[MAX_N], sum[256 * HIGH];
    static int seen[256 * HIGH];
    uint64_t dim = dims[_i], n = 0, distinct = 0, j;
    sparcml_header h;
    void *ip, *vp;
    rng_state = 5 + (uint64_t)_i;
    for (uint64_t b = 0; b < 256; b++) {
        uint64_t c = b < 200 ? 256 : b % 2 ? 1 + b % 7 : 100 + b * 37 % 300;
        for (uint64_t t = 0; t < c; t++) idx[n++] = (t / 2) << 8 | b;
    }
    for (uint64_t i = n; i > 1; i--) {
        uint64_t r = rnd() % i, t = idx[i - 1];
        idx[i - 1] = idx[r];
        idx[r] = t;
    }
    memset(seen, 0, sizeof seen);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t id = (idx[i] >> 8) + (idx[i] & 255) * HIGH; /* before the high bits go in */
        idx[i] |= (id * UINT64_C(0x9e3779b97f4a7c15)) << 17 & (dim - 1);
        vals[i] = (double)(rnd() % 7) * (rnd() % 2 ? 1e12 : 0.3);
        sum[id] = seen[id] ? sum[id] + vals[i] : vals[i];
        distinct += !seen[id]++;
    }
    ck_assert_int_eq(sparcml_stream_from_pairs(buf, (MPI_Count)(sizeof buf / 8), dim, SPARCML_DOUBLE, n, idx, vals),
                     SPARCML_OK);
    ck_assert_int_eq(sparcml_stream_header(buf, &h), SPARCML_OK);
    ck_assert_int_eq(h.format, SPARCML_SPARSE);
    ck_assert_uint_eq(h.nnz, distinct);
    sparcml_stream_arrays(buf, &ip, &vp);
    for (j = 0; j < distinct; j++) {
        uint64_t got = 0, before = 0, id;
        memcpy(&got, (char *)ip + j * sparcml_index_width(dim), sparcml_index_width(dim));
        id = ((got & 0x1ffff) >> 8) + (got & 255) * HIGH;
        ck_assert_msg((got & 0x1ffff) >> 8 < HIGH && seen[id] > 0
                          && got == ((got & 0x1ffff) | ((id * UINT64_C(0x9e3779b97f4a7c15)) << 17 & (dim - 1))),
                      "entry %llu: index %llu", (unsigned long long)j, (unsigned long long)got);
        if (j > 0) memcpy(&before, (char *)ip + (j - 1) * sparcml_index_width(dim), sparcml_index_width(dim));
        ck_assert(j == 0 || before < got);
        ck_assert_msg(memcmp((char *)vp + j * 8, &sum[id], 8) == 0, "entry %llu: value", (unsigned long long)j);
    }
}
END_TEST

START_TEST(from_dense_picks_the_smaller_format)
{
    float d[100] = {0};
    char buf[1024] __attribute__((aligned(8)));
    sparcml_header h;
    d[3] = 1;
    ck_assert_int_eq(sparcml_stream_from_dense(buf, 128, 100, SPARCML_FLOAT, d), SPARCML_OK);
    sparcml_stream_header(buf, &h);
    ck_assert_int_eq(h.format, SPARCML_SPARSE);
    ck_assert_uint_eq(h.nnz, 1);
    for (int i = 0; i < 50; i++) d[i] = (float)i + 1;
    ck_assert_int_eq(sparcml_stream_from_dense(buf, 128, 100, SPARCML_FLOAT, d), SPARCML_OK);
    sparcml_stream_header(buf, &h);
    ck_assert_int_eq(h.format, SPARCML_DENSE);
    ck_assert_int_eq(sparcml_stream_from_dense(buf, 10, 100, SPARCML_FLOAT, d), SPARCML_E_CAPACITY);
    /* dimension 0: dense (no entries are no smaller), as the library's streams */
    ck_assert_int_eq(sparcml_stream_from_dense(buf, 128, 0, SPARCML_FLOAT, d), SPARCML_OK);
    ck_assert_int_eq(sparcml_stream_header(buf, &h), SPARCML_OK);
    ck_assert_int_eq(h.format, SPARCML_DENSE);
    ck_assert_uint_eq(h.nnz, 0);
    /* capacity() always suffices, at the sparse/dense boundary too */
    for (uint64_t dim = 1; dim < 200; dim++)
        for (uint64_t nnz = 0; nnz <= dim; nnz++)
            if (!sparcml_prefers_dense(dim, SPARCML_FLOAT, nnz))
                ck_assert_uint_le(sparcml_sparse_bytes(dim, SPARCML_FLOAT, nnz),
                                  (uint64_t)sparcml_capacity(dim, SPARCML_FLOAT) * 8);
}
END_TEST

/* The builder's entries, read back one by one, against the elements of d
 * whose bits are not all zero (so -0.0 is an entry); the pad after the
 * indices is zero.  d has runs of zeros longer and shorter than 8, and
 * its last non-zero element anywhere from the start to the end. */
/* Every element checked, on the SIMD loops (builders_cases.h). */
START_TEST(from_dense_against_the_elements)
{
    from_dense_cases();
}
END_TEST

/* The SIMD loops where the compiler targets them (x86-64: SSE2); the
 * portable ones run the same cases in test_builders_portable.c. */
START_TEST(from_sorted_every_length)
{
    from_sorted_cases();
}
END_TEST

START_TEST(from_sorted_refuses_bad_indices)
{
    uint64_t idx[4] = {1, 3, 3, 9};
    float v[4] = {1, 2, 3, 4};
    char buf[256] __attribute__((aligned(8)));
    ck_assert_int_eq(sparcml_stream_from_sorted(buf, 32, 100, SPARCML_FLOAT, 4, idx, v), SPARCML_E_ARG);
    idx[2] = 2;
    ck_assert_int_eq(sparcml_stream_from_sorted(buf, 32, 100, SPARCML_FLOAT, 4, idx, v), SPARCML_E_ARG);
    idx[2] = 5;
    ck_assert_int_eq(sparcml_stream_from_sorted(buf, 32, 9, SPARCML_FLOAT, 4, idx, v), SPARCML_E_ARG);
    ck_assert_int_eq(sparcml_stream_from_sorted(buf, 32, 9, SPARCML_FLOAT, 1, idx + 3, v), SPARCML_E_ARG);
    ck_assert_int_eq(sparcml_stream_from_sorted(buf, 32, 10, SPARCML_FLOAT, 4, idx, v), SPARCML_OK);
    for (uint64_t i = 0; i < 4; i++) {
        uint64_t at;
        float x;
        sparcml_stream_entry(buf, i, &at, &x);
        ck_assert_uint_eq(at, idx[i]);
        ck_assert_float_eq(x, v[i]);
    }
}
END_TEST

/* ------------------------------------------------------- dense vectors */

/* Transparent mode's gather (one read: count and collect the nonzeros) and
 * densify sweep, on both code paths (_i / 4: the portable loops), against
 * references written here: the nonzeros by their bits (floats: any bit but
 * the sign; this process runs with denormals as they are), the streams by
 * sparcml_stream_from_sorted, the dense result by a zero fill and copies.
 * Sizes are not multiples of the 8-element groups or 128-byte steps.  The
 * 64-bit-index kernels need a dense vector of more than 2^32 values (16 GiB)
 * and are not run here. */
static const uint64_t vector_dims[] = {1, 7, 8, 31, 33, 100, 257, 1000, 4099, 20011};
static const double vector_densities[] = {0, 0.001, 0.05, 0.3, 0.6, 1};

static int value_is_nonzero(int vtype, const void *dense, uint64_t i)
{
    uint32_t u32;
    uint64_t u64;
    switch (vtype) {
    case SPARCML_FLOAT: memcpy(&u32, (const char *)dense + 4 * i, 4); return (u32 & 0x7fffffffu) != 0;
    case SPARCML_DOUBLE: memcpy(&u64, (const char *)dense + 8 * i, 8); return (u64 << 1) != 0;
    case SPARCML_INT32: memcpy(&u32, (const char *)dense + 4 * i, 4); return u32 != 0;
    default: memcpy(&u64, (const char *)dense + 8 * i, 8); return u64 != 0;
    }
}

/* Some of a vector's entries made special: -0.0 (a zero), NaN with a
 * payload, +-Inf and a denormal (nonzeros); integers get their extremes. */
static void put_specials(int vtype, void *dense, uint64_t dim)
{
    static const uint32_t f32[] = {0x80000000u, 0x7fc00123u, 0xffc00001u, 0x7f800000u, 0xff800000u, 0x00000001u};
    static const uint64_t f64[] = {UINT64_C(1) << 63, UINT64_C(0x7ff8000000000abc), UINT64_C(0x7ff0000000000000),
                                   UINT64_C(0xfff0000000000000), 1, UINT64_C(0xfff8000000000000)};
    for (uint64_t k = 0; k < 6 && dim > 2; k++) {
        uint64_t i = rnd() % dim;
        switch (vtype) {
        case SPARCML_FLOAT: memcpy((char *)dense + 4 * i, &f32[k], 4); break;
        case SPARCML_DOUBLE: memcpy((char *)dense + 8 * i, &f64[k], 8); break;
        case SPARCML_INT32: ((int32_t *)dense)[i] = k % 2 ? INT32_MIN : -1; break;
        default: ((int64_t *)dense)[i] = k % 2 ? INT64_MIN : -1; break;
        }
    }
}

/* The reference sparse stream of the nonzeros (NULL when the dense form is
 * smaller) and their count. */
static char *reference_stream(int vtype, const void *dense, uint64_t dim, uint64_t *nnz)
{
    uint64_t *idx = malloc(dim * 8), n = 0, vs = sparcml_value_size(vtype);
    char *vals = malloc(dim * vs), *buf = NULL;
    for (uint64_t i = 0; i < dim; i++)
        if (value_is_nonzero(vtype, dense, i)) {
            memcpy(vals + n * vs, (const char *)dense + i * vs, vs);
            idx[n++] = i;
        }
    *nnz = n;
    if (!sparcml_prefers_dense(dim, vtype, n)) {
        buf = malloc(sparcml_sparse_bytes(dim, vtype, n) + 8);
        ck_assert_int_eq(sparcml_stream_from_sorted(buf, sparcml_sparse_capacity(dim, vtype, n), dim, vtype, n,
                                                    idx, vals), SPARCML_OK);
    }
    free(idx);
    free(vals);
    return buf;
}

/* Gathers with room for cap entries: the count is always right; the
 * stream is present, and the reference's bytes, exactly when it fits. */
static void check_gather(const sv *v, uint64_t cap, const char *want, uint64_t want_nnz)
{
    uint64_t bytes = sparcml_sparse_bytes(v->dim, v->vtype, cap);
    char *buf = malloc(bytes);
    sv out;
    ck_assert_uint_le(cap, stream_gather_capacity(v->dim, v->vtype, bytes));
    ck_assert_uint_eq(stream_gather_nonzero(v, cap, buf, &out), want_nnz);
    if (want && want_nnz <= cap) {
        ck_assert(!sv_is_absent(&out));
        ck_assert_uint_eq(stream_bytes(&out), sparcml_sparse_bytes(v->dim, v->vtype, want_nnz));
        ck_assert_msg(memcmp(buf, want, stream_bytes(&out)) == 0, "dim %llu cap %llu: stream differs",
                      (unsigned long long)v->dim, (unsigned long long)cap);
    } else {
        ck_assert(sv_is_absent(&out));
    }
    free(buf);
}

/* stream_from_values for the count: the reference stream, or the dense
 * values with every zero +0.0. */
static void check_from_values(const sv *v, uint64_t nnz, const char *want)
{
    char *buf = malloc(sparcml_capacity(v->dim, v->vtype) * 8);
    sv out = stream_from_values(v, nnz, buf);
    if (want) {
        ck_assert_int_eq(out.dense, 0);
        ck_assert_mem_eq(buf, want, stream_bytes(&out));
    } else {
        ck_assert_int_eq(out.dense, 1);
        for (uint64_t i = 0; i < v->dim; i++) {
            const char *x = (const char *)v->val + i * v->vs, *y = (const char *)out.val + i * v->vs;
            static const char zero[8];
            ck_assert_mem_eq(y, value_is_nonzero(v->vtype, v->val, i) ? x : zero, v->vs);
        }
    }
    free(buf);
}

START_TEST(gather_matches_reference)
{
    int vtype = _i % 4 + 1;
    stream_force_portable(_i / 4);
    rng_state = 555 + (uint64_t)_i;
    for (size_t a = 0; a < sizeof vector_dims / sizeof vector_dims[0]; a++) {
        for (size_t b = 0; b < sizeof vector_densities / sizeof vector_densities[0]; b++) {
            uint64_t dim = vector_dims[a], nnz, most;
            vec x = make_vec(dim, vtype, vector_densities[b]);
            sv v = stream_dense_view(x.dense, dim, vtype);
            char *want;
            if (b % 2) put_specials(vtype, x.dense, dim);
            want = reference_stream(vtype, x.dense, dim, &nnz);
            most = stream_gather_capacity(dim, vtype, sparcml_dense_bytes(dim, vtype));
            ck_assert_uint_eq(stream_count_nonzero(&v, 0, dim), nnz);
            /* room for all, exactly enough, one short, none, a little */
            check_gather(&v, most, want, nnz);
            if (nnz <= most) check_gather(&v, nnz, want, nnz);
            if (nnz > 0 && nnz - 1 <= most) check_gather(&v, nnz - 1, want, nnz);
            check_gather(&v, 0, want, nnz);
            check_gather(&v, 5 < most ? 5 : most, want, nnz);
            check_from_values(&v, nnz, want);
            free(want);
            free_vec(&x);
        }
    }
    stream_force_portable(0);
}
END_TEST

/* All zeros (either sign), all nonzeros, and a run of nonzeros in the
 * first third, every size up to a few steps: the cursor at every offset
 * against the groups and steps. */
START_TEST(gather_all_zeros_and_all_nonzeros)
{
    int vtype = _i % 4 + 1;
    unsigned vs = (unsigned)sparcml_value_size(vtype);
    char *dense = malloc(200 * 8);
    stream_force_portable(_i / 4);
    for (uint64_t dim = 1; dim <= 200; dim++) {
        sv v = stream_dense_view(dense, dim, vtype);
        uint64_t nnz, most = stream_gather_capacity(dim, vtype, sparcml_dense_bytes(dim, vtype));
        char *want;
        for (uint64_t i = 0; i < dim; i++) { /* -0.0 for floats: still a zero */
            memset(dense + i * vs, 0, vs);
            if (vtype <= SPARCML_DOUBLE && i % 3 == 0) dense[i * vs + vs - 1] = (char)0x80;
        }
        want = reference_stream(vtype, dense, dim, &nnz);
        ck_assert_uint_eq(nnz, 0);
        check_gather(&v, most, want, 0);
        check_gather(&v, 0, want, 0);
        check_from_values(&v, 0, want);
        free(want);
        for (uint64_t i = 0; i < dim; i++) set_value(vtype, dense, i, (int64_t)i + 1);
        want = reference_stream(vtype, dense, dim, &nnz);
        ck_assert_uint_eq(nnz, dim);
        ck_assert_ptr_null(want); /* all nonzero: dense is smaller */
        check_gather(&v, most, NULL, dim);
        check_from_values(&v, dim, NULL);
        for (uint64_t i = dim / 3; i < dim; i++) memset(dense + i * vs, 0, vs); /* one run: sparse */
        want = reference_stream(vtype, dense, dim, &nnz);
        ck_assert_uint_eq(nnz, dim / 3);
        check_gather(&v, most, want, nnz);
        check_gather(&v, nnz, want, nnz);
        free(want);
    }
    free(dense);
    stream_force_portable(0);
}
END_TEST

/* The capacity is the most entries that fit in the bytes and stay sparse. */
START_TEST(gather_capacity_is_the_most_that_fits)
{
    for (int vtype = SPARCML_FLOAT; vtype <= SPARCML_INT64; vtype++)
        for (uint64_t dim = 1; dim < 300; dim += 7)
            for (uint64_t bytes = 0; bytes < sparcml_dense_bytes(dim, vtype) + 64; bytes += 3) {
                uint64_t cap = stream_gather_capacity(dim, vtype, bytes);
                int more_fits = sparcml_sparse_bytes(dim, vtype, cap + 1) <= bytes
                                && !sparcml_prefers_dense(dim, vtype, cap + 1);
                if (cap > 0) {
                    ck_assert_uint_le(sparcml_sparse_bytes(dim, vtype, cap), bytes);
                    ck_assert(!sparcml_prefers_dense(dim, vtype, cap));
                }
                ck_assert_msg(!more_fits, "dim %llu bytes %llu: cap %llu",
                              (unsigned long long)dim, (unsigned long long)bytes, (unsigned long long)cap);
            }
}
END_TEST

/* The densify sweep writes every element once: its bytes are a zero fill
 * with the stored values copied in (a stored -0.0 or NaN kept as it is),
 * whatever was in the buffer, for gaps of every length up to 40 and
 * across blocks, runs of neighbours, the first and last index, no
 * entries, and every index stored. */
START_TEST(densify_matches_reference)
{
    int vtype = _i % 4 + 1;
    unsigned vs = (unsigned)sparcml_value_size(vtype);
    uint64_t *idx = malloc(20011 * 8);
    stream_force_portable(_i / 4);
    rng_state = 77 + (uint64_t)_i;
    for (size_t a = 0; a < sizeof vector_dims / sizeof vector_dims[0]; a++) {
        for (int layout = 0; layout < 6; layout++) {
            uint64_t dim = vector_dims[a], n = 0;
            char *sbuf = malloc(sparcml_sparse_bytes(dim, vtype, dim)), *got = malloc(dim * vs);
            char *want = calloc(dim, vs);
            sv s;
            for (uint64_t x = 0; x < dim; x++) {
                int keep = layout == 0 ? 0 : layout == 1 ? 1 : layout == 2 ? x == 0 || x == dim - 1
                         : layout == 3 ? rnd() % (1 + x % 40) == 0 : (rnd() % 1000) < (layout == 4 ? 5u : 400u);
                if (keep) idx[n++] = x;
            }
            s = stream_init(sbuf, dim, vtype, n, 0);
            for (uint64_t k = 0; k < n; k++) {
                sparcml_put_index(s.idx, s.iw, k, idx[k]);
                set_value(vtype, s.val, k, (int64_t)(rnd() % 2001) - 1000);
            }
            if (n > 2) put_specials(vtype, s.val, n);
            for (uint64_t k = 0; k < n; k++) memcpy(want + idx[k] * vs, (char *)s.val + k * vs, vs);
            memset(got, 0xab, dim * vs);
            stream_densify(&s, got);
            ck_assert_msg(memcmp(got, want, dim * vs) == 0, "dim %llu layout %d: dense result differs",
                          (unsigned long long)dim, layout);
            free(sbuf); free(got); free(want);
        }
    }
    free(idx);
    stream_force_portable(0);
}
END_TEST

/* Results of 16 MiB and more take the streaming path where the CPU has
 * AVX2 (the others the portable blocks): the lines before the first whole
 * 64-byte line and after the last (a destination one element off a line),
 * runs of neighbours across blocks, single entries, none at either end. */
START_TEST(densify_large_results)
{
    int vtype = _i % 4 + 1;
    unsigned vs = (unsigned)sparcml_value_size(vtype);
    uint64_t dim = (UINT64_C(16) << 20) / vs + 37, n = 0, *idx = malloc(200000 * 8);
    /* aligned_alloc wants a size that is a multiple of the alignment */
    char *sbuf, *want = calloc(dim, vs), *mem = aligned_alloc(64, ((dim + 16) * vs + 63) / 64 * 64);
    sv s;
    stream_force_portable(_i / 4);
    rng_state = 4242 + (uint64_t)_i;
    for (uint64_t x = 3; x < dim - 5; x += 1 + rnd() % 400) {
        uint64_t run = rnd() % 8 == 0 ? 1 + rnd() % 3000 : 1;
        for (uint64_t r = 0; r < run && x < dim - 5 && n < 200000; r++, x++) idx[n++] = x;
    }
    sbuf = malloc(sparcml_sparse_bytes(dim, vtype, n));
    s = stream_init(sbuf, dim, vtype, n, 0);
    for (uint64_t k = 0; k < n; k++) {
        sparcml_put_index(s.idx, s.iw, k, idx[k]);
        set_value(vtype, s.val, k, (int64_t)(rnd() % 2001) - 1000);
        memcpy(want + idx[k] * vs, (char *)s.val + k * vs, vs);
    }
    for (int off = 0; off < 2; off++) {
        char *got = mem + (unsigned)off * vs;
        memset(got, 0xab, dim * vs);
        stream_densify(&s, got);
        ck_assert_msg(memcmp(got, want, dim * vs) == 0, "offset %d: dense result differs", off);
    }
    free(idx); free(sbuf); free(want); free(mem);
    stream_force_portable(0);
}
END_TEST

Suite *stream_suite(void)
{
    Suite *s = suite_create("stream");
    TCase *tc = tcase_create("algebra");
    tcase_add_loop_test(tc, merge_add_matches_reference, 0, 8);
    tcase_add_loop_test(tc, accumulate_matches_reference, 0, 4);
    tcase_add_loop_test(tc, slice_then_concat_round_trips, 0, 4);
    tcase_add_loop_test(tc, range_merges_join_to_the_whole_merge, 0, 4);
    tcase_add_test(tc, select_keeps_exactly_the_marked_entries);
    tcase_add_test(tc, wide_indices);
    tcase_add_test(tc, wide_slices_round_trip);
    tcase_add_test(tc, integer_sums_wrap);
    tcase_add_loop_test(tc, gather_matches_reference, 0, 8);
    tcase_add_loop_test(tc, gather_all_zeros_and_all_nonzeros, 0, 8);
    tcase_add_test(tc, gather_capacity_is_the_most_that_fits);
    tcase_add_loop_test(tc, densify_matches_reference, 0, 8);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    /* Every layout and length on both paths. */
    tc = tcase_create("merge layouts");
    tcase_add_loop_test(tc, merge_add_layouts_both_paths, 0, 16);
    tcase_add_loop_test(tc, merge_add_window_spans, 0, 8);
    tcase_add_loop_test(tc, merge_add_exact_room_both_paths, 0, 8);
    tcase_add_loop_test(tc, merge_add_same_indices_stays_in_the_union, 0, 16);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    /* 100,000-entry inputs: the merge's code paths at scale. */
    tc = tcase_create("large merges");
    tcase_add_loop_test(tc, merge_add_interleaved_matches_reference, 0, 16);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    /* Results of 16 MiB: the densify's streaming path, which only sizes
     * that large take. */
    tc = tcase_create("large results");
    tcase_add_loop_test(tc, densify_large_results, 0, 8);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    tc = tcase_create("validation");
    tcase_add_test(tc, validation_table);
    tcase_add_test(tc, validation_every_position);
    tcase_add_test(tc, every_reason_has_text_and_class);
    suite_add_tcase(s, tc);
    tc = tcase_create("helpers");
    tcase_add_test(tc, from_pairs_sorts_and_sums_duplicates);
    tcase_add_test(tc, from_pairs_writes_dense_when_smaller);
    tcase_add_loop_test(tc, from_pairs_matches_a_reference, 0, 15);
    tcase_add_loop_test(tc, from_pairs_with_evenly_spread_bytes, 0, 2);
    tcase_add_test(tc, from_dense_picks_the_smaller_format);
    tcase_add_test(tc, from_dense_against_the_elements);
    tcase_add_test(tc, from_sorted_refuses_bad_indices);
    tcase_add_test(tc, from_sorted_every_length);
    tcase_set_timeout(tc, 120); /* the builder cases: 1-4 s under the sanitizers */
    suite_add_tcase(s, tc);
    return s;
}
