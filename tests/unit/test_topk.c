/* Top-k selection (kernel/topk.c) against a reference written here: every
 * nonzero entry sorted with qsort on its floating-point magnitude (NaN
 * above all, then lower index first), the first k kept, sorted by index.
 * Each case runs on the dispatched pass (AVX2 where the CPU has it) and on
 * the portable one, and the adversarial cases also from forced first
 * thresholds: every nonzero, the exact k-th magnitude, one above it and
 * one above everything (both make the estimate too high).  Where a case
 * gives its values as sums eps + g (computed here in the value type),
 * topk_select_sum of eps and g must select the same, leave the sums in
 * eps bit for bit and return the sum of their squares as topk_accumulate's
 * contract adds them (a reference of its own). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/stream.h"
#include "kernel/topk.h"
#include "suites.h"

static uint64_t rng_state;
static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double normal(void) /* Box-Muller */
{
    double u = ((double)(rnd() >> 11) + 0.5) * 0x1.0p-53, v = (double)(rnd() >> 11) * 0x1.0p-53;
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static const int vtypes[] = {SPARCML_FLOAT, SPARCML_DOUBLE};

static void set(void *vals, int vtype, uint64_t i, double v)
{
    if (vtype == SPARCML_FLOAT) ((float *)vals)[i] = (float)v;
    else ((double *)vals)[i] = v;
}

static double get(const void *vals, int vtype, uint64_t i)
{
    return vtype == SPARCML_FLOAT ? (double)((const float *)vals)[i] : ((const double *)vals)[i];
}

/* Raw bits, for NaN payloads that a double round trip would not keep. */
static void set_bits(void *vals, int vtype, uint64_t i, uint64_t bits)
{
    if (vtype == SPARCML_FLOAT) {
        uint32_t b = (uint32_t)bits;
        memcpy((float *)vals + i, &b, 4);
    } else {
        memcpy((double *)vals + i, &bits, 8);
    }
}

/* |v| as the bits the order of kernel/topk.h speaks of. */
static uint64_t key_of(const void *vals, int vtype, uint64_t i)
{
    uint64_t b = 0;
    memcpy(&b, (const char *)vals + i * sparcml_value_size(vtype), sparcml_value_size(vtype));
    return vtype == SPARCML_FLOAT ? b & 0x7fffffffu : b & 0x7fffffffffffffffull;
}

typedef struct entry {
    double mag;
    int nan;
    uint64_t i;
} entry;

static int by_rank(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->nan != y->nan) return x->nan ? -1 : 1;
    if (!x->nan && x->mag != y->mag) return x->mag > y->mag ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static int by_index(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The reference selection: its indices, ascending, to want; how many. */
static uint64_t reference(const void *vals, uint64_t n, int vtype, uint64_t k, uint64_t *want)
{
    entry *e = malloc((n ? n : 1) * sizeof *e);
    uint64_t m = 0;
    ck_assert_ptr_nonnull(e);
    for (uint64_t i = 0; i < n; i++) {
        double v = get(vals, vtype, i);
        if (v != 0) e[m++] = (entry){fabs(v), isnan(v), i};
    }
    qsort(e, m, sizeof *e, by_rank);
    if (m > k) m = k;
    for (uint64_t j = 0; j < m; j++) want[j] = e[j].i;
    qsort(want, m, sizeof *want, by_index);
    free(e);
    return m;
}

/* The sums' parts (NULL: the case gives plain values). */
static const void *sum_eps, *sum_g;

/* vals = eps + g in the value type. */
static void add_parts(void *vals, const void *eps, const void *g, int vtype, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        if (vtype == SPARCML_FLOAT) ((float *)vals)[i] = ((const float *)eps)[i] + ((const float *)g)[i];
        else ((double *)vals)[i] = ((const double *)eps)[i] + ((const double *)g)[i];
    }
}

/* The sum of the squares of vals as topk_accumulate adds them: four
 * partial sums by index mod 4, the last n mod 4 in the first. */
static double lanes_norm2(const void *vals, int vtype, uint64_t n)
{
    double s[4] = {0};
    for (uint64_t i = 0; i < n; i++) s[i < n / 4 * 4 ? i % 4 : 0] += get(vals, vtype, i) * get(vals, vtype, i);
    return (s[0] + s[1]) + (s[2] + s[3]);
}

/* One selection: topk_select of vals, or with the sums' parts
 * topk_select_sum of a copy of eps (which must hold vals afterwards, with
 * the norm as lanes_norm2 adds it: *sum_ok). */
static uint64_t select_once(const void *vals, uint64_t n, int vtype, uint64_t k, void *scratch, void *idx,
                            unsigned iw, void *out, int summed, int *sum_ok)
{
    size_t bytes = n * sparcml_value_size(vtype);
    void *eps;
    double norm2;
    uint64_t m;
    *sum_ok = 1;
    if (!summed) return topk_select(vals, n, vtype, k, scratch, idx, iw, out);
    eps = malloc(bytes ? bytes : 1);
    ck_assert_ptr_nonnull(eps);
    memcpy(eps, sum_eps, bytes);
    m = topk_select_sum(eps, sum_g, n, vtype, k, scratch, idx, iw, out, &norm2);
    *sum_ok = memcmp(eps, vals, bytes) == 0 && memcmp(&norm2, &(double){lanes_norm2(vals, vtype, n)}, 8) == 0;
    free(eps);
    return m;
}

/* topk_select (and topk_select_sum where the case has parts) on both
 * passes from first threshold `start` (0: the sample's), against the
 * reference; outputs get exactly the room the contract asks for, so that
 * the sanitizers see any write beyond it. */
static void check_from(const void *vals, uint64_t n, int vtype, uint64_t k, unsigned iw,
                       uint64_t start, const uint64_t *want, uint64_t nwant)
{
    size_t vs = sparcml_value_size(vtype);
    uint64_t room = k < n ? k : n, sb = topk_scratch_bytes(n, k, vtype);
    void *scratch = malloc(sb ? sb : 1), *idx = malloc(room ? room * iw : 1);
    char *out = malloc(room ? room * vs : 1);
    ck_assert(scratch && idx && out);
    topk_force_start(start);
    for (int run = 0; run < (sum_eps ? 4 : 2); run++) {
        int portable = run % 2, summed = run / 2, sum_ok;
        uint64_t m, j = 0;
        stream_force_portable(portable);
        m = select_once(vals, n, vtype, k, scratch, idx, iw, out, summed, &sum_ok);
        /* one assertion per call: Check records each one (a write) */
        while (j < m && j < nwant && sparcml_get_index(idx, iw, j) == want[j]
               && memcmp(out + j * vs, (const char *)vals + want[j] * vs, vs) == 0)
            j++;
        ck_assert_msg(m == nwant && j == m && sum_ok,
                      "n %llu k %llu vtype %d iw %u start %llx portable %d summed %d: %llu entries (want "
                      "%llu), first difference at entry %llu, sums and norm %s",
                      (unsigned long long)n, (unsigned long long)k, vtype, iw,
                      (unsigned long long)start, portable, summed, (unsigned long long)m,
                      (unsigned long long)nwant, (unsigned long long)j, sum_ok ? "right" : "wrong");
    }
    stream_force_portable(0);
    topk_force_start(0);
    free(scratch); free(idx); free(out);
}

/* From the sample's threshold only (all = 0) or also from the forced ones. */
static void check(const void *vals, uint64_t n, int vtype, uint64_t k, unsigned iw, int all)
{
    uint64_t *want = malloc((n ? n : 1) * sizeof *want), nwant = reference(vals, n, vtype, k, want);
    ck_assert_ptr_nonnull(want);
    check_from(vals, n, vtype, k, iw, 0, want, nwant);
    if (all) {
        uint64_t kth = UINT64_MAX; /* the smallest selected magnitude */
        for (uint64_t j = 0; j < nwant; j++) {
            uint64_t key = key_of(vals, vtype, want[j]);
            if (key < kth) kth = key;
        }
        check_from(vals, n, vtype, k, iw, 1, want, nwant);
        if (nwant) check_from(vals, n, vtype, k, iw, kth, want, nwant);
        if (nwant && kth < UINT64_MAX / 2) check_from(vals, n, vtype, k, iw, kth + 1, want, nwant);
        check_from(vals, n, vtype, k, iw, UINT64_MAX, want, nwant);
    }
    free(want);
}

/* k at the edges and in between, for n values. */
static uint64_t ks_for(uint64_t n, uint64_t *ks)
{
    uint64_t c = 0, cand[] = {0, 1, 2, 3, n / 1000, n / 100, n / 10, n / 2, n - 1, n, n + 3};
    for (size_t j = 0; j < sizeof cand / sizeof cand[0]; j++) ks[c++] = cand[j];
    return c;
}

START_TEST(random_values_match_reference)
{
    static const uint64_t ns[] = {1, 2, 15, 16, 17, 33, 1000, 1023, 1024, 1025, 5000, 65537};
    int vtype = vtypes[_i];
    rng_state = 7 + (uint64_t)_i;
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
        uint64_t n = ns[a], ks[16], nk = ks_for(n, ks);
        void *vals = malloc(n * 8), *eps = malloc(n * 8), *g = malloc(n * 8);
        /* As error feedback forms them: a residual plus a gradient. */
        for (uint64_t i = 0; i < n; i++) set(eps, vtype, i, normal() * 1e-3), set(g, vtype, i, normal() * 1e-3);
        add_parts(vals, eps, g, vtype, n);
        sum_eps = eps, sum_g = g;
        for (uint64_t j = 0; j < nk; j++) check(vals, n, vtype, ks[j], 4, n <= 5000);
        sum_eps = sum_g = NULL;
        free(vals), free(eps), free(g);
    }
}
END_TEST

/* Values from {-2, -1, -0.5, 0, 0.5, 1, 2}: most of the entries tie. */
START_TEST(heavy_ties_go_to_the_lower_index)
{
    static const double set7[] = {-2, -1, -0.5, 0, 0.5, 1, 2};
    static const uint64_t ns[] = {100, 5000, 40000};
    int vtype = vtypes[_i];
    rng_state = 11 + (uint64_t)_i;
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
        uint64_t n = ns[a], ks[16], nk = ks_for(n, ks);
        void *vals = malloc(n * 8);
        for (uint64_t i = 0; i < n; i++) set(vals, vtype, i, set7[rnd() % 7]);
        for (uint64_t j = 0; j < nk; j++) check(vals, n, vtype, ks[j], 4, 1);
        free(vals);
    }
}
END_TEST

START_TEST(zeros_of_either_sign_are_never_selected)
{
    enum { N = 3000 };
    int vtype = vtypes[_i];
    void *vals = malloc(N * 8);
    for (uint64_t i = 0; i < N; i++) set(vals, vtype, i, i % 3 ? -0.0 : 0.0);
    for (uint64_t k = 0; k <= N + 1; k += k < 4 ? 1 : 997) check(vals, N, vtype, k, 4, 1);
    set(vals, vtype, 1234, -0.25); /* one nonzero among them */
    for (uint64_t k = 0; k <= N + 1; k += k < 4 ? 1 : 997) check(vals, N, vtype, k, 4, 1);
    free(vals);
}
END_TEST

/* 1% nonzeros; k below, at and above their count. */
START_TEST(fewer_nonzeros_than_k)
{
    enum { N = 20000 };
    int vtype = vtypes[_i];
    uint64_t nnz = 0;
    void *vals = calloc(N, 8);
    rng_state = 13 + (uint64_t)_i;
    for (uint64_t i = 0; i < N; i++)
        if (rnd() % 100 == 0) { set(vals, vtype, i, normal()); nnz++; }
    uint64_t ks[] = {nnz / 2, nnz - 1, nnz, nnz + 1, 5 * nnz, N / 2};
    for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) check(vals, N, vtype, ks[j], 4, 1);
    free(vals);
}
END_TEST

/* NaNs of several signs and payloads (all tie, above everything), +-Inf,
 * subnormals, among normal values; k below, between and above them. */
START_TEST(nan_and_inf_rank_first)
{
    static const uint64_t nan32[] = {0x7fc00000, 0xffc00000, 0x7f800001, 0xffffffff, 0x7fc01234};
    static const uint64_t nan64[] = {0x7ff8000000000000ull, 0xfff8000000000000ull,
                                     0x7ff0000000000001ull, 0xffffffffffffffffull,
                                     0x7ff8000000001234ull};
    enum { N = 30000 };
    int vtype = vtypes[_i];
    const uint64_t *nans = vtype == SPARCML_FLOAT ? nan32 : nan64;
    void *vals = malloc(N * 8);
    rng_state = 17 + (uint64_t)_i;
    for (uint64_t i = 0; i < N; i++) set(vals, vtype, i, normal());
    for (uint64_t j = 0; j < 40; j++) set_bits(vals, vtype, rnd() % N, nans[j % 5]);
    for (uint64_t j = 0; j < 20; j++) set(vals, vtype, rnd() % N, j % 2 ? INFINITY : -INFINITY);
    for (uint64_t j = 0; j < 20; j++) set(vals, vtype, rnd() % N, vtype == SPARCML_FLOAT ? 1e-40 : 1e-310);
    static const uint64_t ks[] = {1, 5, 39, 40, 41, 55, 60, 61, 300, N - 1};
    for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) check(vals, N, vtype, ks[j], 4, 1);
    for (uint64_t i = 0; i < N; i++) set_bits(vals, vtype, i, nans[i % 5]); /* only NaNs */
    for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) check(vals, N, vtype, ks[j], 4, 1);
    free(vals);
}
END_TEST

START_TEST(wide_indices)
{
    static const uint64_t ns[] = {1, 17, 3000};
    int vtype = vtypes[_i];
    rng_state = 19 + (uint64_t)_i;
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
        uint64_t n = ns[a], ks[16], nk = ks_for(n, ks);
        void *vals = malloc(n * 8);
        for (uint64_t i = 0; i < n; i++) set(vals, vtype, i, normal());
        for (uint64_t j = 0; j < nk; j++) check(vals, n, vtype, ks[j], 8, 0);
        free(vals);
    }
}
END_TEST

/* Inputs that mislead a sample or defeat a threshold: a few huge values
 * and then one value repeated; magnitudes ascending (every value beats
 * those before it: a prune per block) and descending; the largest values
 * in one run that a strided sample crosses once; a single huge value. */
enum shape { HUGE_THEN_EQUAL, ASCENDING, DESCENDING, TOP_IN_ONE_RUN, ONE_HUGE, SHAPES };

static void fill_shape(void *vals, int vtype, uint64_t n, enum shape s)
{
    for (uint64_t i = 0; i < n; i++) {
        double v = 0;
        switch (s) {
        case HUGE_THEN_EQUAL: v = i < 5 ? 1e6 + (double)i : 3.0; break;
        case ASCENDING: v = (i % 2 ? -1.0 : 1.0) * (1.0 + (double)i); break;
        case DESCENDING: v = (double)(n - i); break;
        case TOP_IN_ONE_RUN: v = i >= n / 3 && i < n / 3 + 300 ? 100 + (double)(i % 7) : normal(); break;
        default: v = i == n / 2 ? 1e30 : normal(); break;
        }
        set(vals, vtype, i, v);
    }
}

START_TEST(adversarial_inputs)
{
    static const uint64_t ns[] = {3000, 20000};
    int vtype = vtypes[_i % 2];
    enum shape s = (enum shape)(_i / 2);
    rng_state = 23 + (uint64_t)_i;
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
        uint64_t n = ns[a], ks[] = {1, 4, 5, 6, 100, 299, 300, 301, 1000, n / 2, n - 1};
        void *vals = malloc(n * 8), *zero = calloc(n, 8);
        fill_shape(vals, vtype, n, s);
        sum_eps = zero, sum_g = vals; /* a zero residual: the sums are the shape itself */
        for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) check(vals, n, vtype, ks[j], 4, 1);
        sum_eps = sum_g = NULL;
        free(vals), free(zero);
    }
}
END_TEST

/* The scratch is O(k), and its size computation does not overflow. */
START_TEST(scratch_is_of_order_k)
{
    uint64_t n = (uint64_t)1 << 40;
    ck_assert_uint_eq(topk_scratch_bytes(n, 0, SPARCML_FLOAT), 0);
    ck_assert_uint_eq(topk_scratch_bytes(1000, 1000, SPARCML_FLOAT), 0);
    ck_assert_uint_eq(topk_scratch_bytes(1000, 5000, SPARCML_DOUBLE), 0);
    for (uint64_t k = 1; k <= ((uint64_t)1 << 30); k *= 32) {
        uint64_t f = topk_scratch_bytes(n, k, SPARCML_FLOAT), d = topk_scratch_bytes(n, k, SPARCML_DOUBLE);
        ck_assert_uint_le(f, 32 * k + (1u << 20));
        ck_assert_uint_le(d, 40 * k + (1u << 20));
    }
}
END_TEST

Suite *topk_suite(void)
{
    Suite *s = suite_create("topk");
    TCase *tc = tcase_create("selection");
    tcase_add_loop_test(tc, random_values_match_reference, 0, 2);
    tcase_add_loop_test(tc, heavy_ties_go_to_the_lower_index, 0, 2);
    tcase_add_loop_test(tc, zeros_of_either_sign_are_never_selected, 0, 2);
    tcase_add_loop_test(tc, fewer_nonzeros_than_k, 0, 2);
    tcase_add_loop_test(tc, nan_and_inf_rank_first, 0, 2);
    tcase_add_loop_test(tc, wide_indices, 0, 2);
    tcase_add_loop_test(tc, adversarial_inputs, 0, 2 * SHAPES);
    tcase_add_test(tc, scratch_is_of_order_k);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}
