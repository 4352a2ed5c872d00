/* topk.c -- O(n) top-k selection by magnitude (contract in kernel/topk.h).
 *
 * Keys: a value's bits without the sign, NaNs clamped to one key just
 * above +-Inf's, so that keys order as magnitudes do and every NaN ties.
 * The pass compares the raw unsigned bits (NaNs are all above the clamp),
 * which is the same test for every threshold up to the NaN key.
 *
 * The pass keeps candidates (index, value bits) in index order in a buffer
 * of `cap` entries and admits a value when its key is at least the
 * threshold t.  t starts at the key of a sample quantile chosen so that
 * somewhat more than k values pass.  When the buffer may not hold the next
 * block, a prune keeps the k best candidates (exact: radix select of the
 * k-th key T, then the entries above T and the first ones equal to T, as
 * ties go to the lower index) and raises t to T + 1: a later value with
 * key T has a higher index and loses to all k.  Whatever t was, every value
 * that is not kept is beaten by k kept ones, so the pass is exact as long
 * as it ends with at least k candidates; with fewer, the sample's estimate
 * was too high and one more pass starts from t = 1 (every nonzero).
 *
 * Cost: the pass compares a block of values at a time (AVX2 where it
 * runs: topk_avx2.c) and looks at single values only where one passed, so on
 * gradient-like values it runs at about the speed of a memcpy of them
 * (bench/RESULTS.md, Compression: unmodified training programs;
 * bench/kernel_bench --topk).  The buffer holds cap >= 2k + 2 TOPK_BLOCK
 * entries (or all n), so at least k + TOPK_BLOCK values are admitted
 * between two prunes of O(cap): the prunes stay O(n) whatever t is, and
 * cost next to nothing when the sample is right.  The second pass from
 * t = 1 is the expensive case: it happens only when the sample's count ran
 * some 4 standard deviations high, rarely for values in random order;
 * where every value beats the ones before it (ascending magnitudes) it
 * admits and prunes every value -- but on sorted values the strided
 * sample (one value per stride) does not overestimate, for k up to n/4 at
 * least. */
#include "config.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "kernel/topk.h"
#include "kernel/topk_impl.h"

#define TOPK_BLOCK 1024  /* values per filter call, the room made before it */
#define TOPK_SAMPLE 16384 /* most values sampled for the first threshold */
#define TOPK_SAMPLE_MIN 64 /* fewer: no sample, the pass starts at t = 1 */
#define TOPK_DIGIT 11    /* bits per radix select round */
#define TOPK_HIST ((uint64_t)1 << TOPK_DIGIT)

/* The tests' switch: an atomic, so that a test that flips it beside
 * running selections is not a data race (topk.h). */
static atomic_uint_fast64_t force_start;

void topk_force_start(uint64_t key) { atomic_store_explicit(&force_start, key, memory_order_relaxed); }

/* ---------------------------------------------------------------- scratch */

/* Where the parts of the scratch live, in bytes from its start. */
typedef struct layout {
    uint64_t cap, sample;  /* candidate room, values sampled (0: none) */
    uint64_t ci, cv, sv, hist, total;
} layout;

static uint64_t sample_size(uint64_t n)
{
    uint64_t s = n / 16;
    if (s > TOPK_SAMPLE) s = TOPK_SAMPLE;
    return s < TOPK_SAMPLE_MIN ? 0 : s;
}

static layout layout_for(uint64_t n, uint64_t k, uint64_t vs)
{
    layout l = {0};
    if (k == 0 || k >= n) return l;
    l.cap = 2 * k + 2 * TOPK_BLOCK;
    if (l.cap > n) l.cap = n;
    l.sample = sample_size(n);
    l.cv = l.ci + l.cap * 8;
    l.sv = l.cv + sparcml_round8(l.cap * vs);
    l.hist = l.sv + sparcml_round8(l.sample * vs);
    l.total = l.hist + TOPK_HIST * 8;
    return l;
}

uint64_t topk_scratch_bytes(uint64_t n, uint64_t k, int vtype)
{
    return layout_for(n, k, sparcml_value_size(vtype)).total;
}

/* Sample position j of s over n values: one per stride, at a fixed
 * pseudo-random offset in it (no aliasing with periodic data). */
static uint64_t sample_pos(uint64_t j, uint64_t n, uint64_t s)
{
    uint64_t stride = n / s, z = (j + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
    return j * stride + (z ^ (z >> 29)) % stride;
}

/* The sample rank whose key admits somewhat more than k of n values: the
 * expected count of sampled values among the top k, lam = s k / n, plus 4
 * standard deviations (a count that is rarely lower) and 2.  0: more than
 * the sample, start from every nonzero. */
static uint64_t sample_rank(uint64_t n, uint64_t k, uint64_t s)
{
    double lam = (double)s * (double)k / (double)n, r = ceil(lam + 4 * sqrt(lam) + 2);
    return r < (double)s ? (uint64_t)r : 0;
}

/* ---------------------------------------------------------- value types */

/* Each kernel below is written once, as an always_inline body over the
 * value type vt (SPARCML_FLOAT, its bits as uint32_t; SPARCML_DOUBLE,
 * uint64_t), and instantiated per type by one-line wrappers that pass vt
 * as a constant, so that each instance compiles to the loops of its type.
 * Bits and keys travel as uint64_t between the per-value operations (they
 * fit); the operations, and the one loop the compiler vectorises, are
 * done in the type's own width (each a branch on the constant vt). */
/* The sign's place: keys are below 2^top_bit. */
KERNEL_INLINE unsigned top_bit(int vt) { return is_f64(vt) ? 63 : 31; }
/* The bits of a magnitude: all but the sign. */
KERNEL_INLINE uint64_t magnitude_mask(int vt) { return ((uint64_t)1 << top_bit(vt)) - 1; }
/* The NaN key: +Inf's bits plus one. */
KERNEL_INLINE uint64_t nan_key(int vt) { return is_f64(vt) ? UINT64_C(0x7ff0000000000001) : UINT32_C(0x7f800001); }
/* Element i of a vector of vt's values. */
KERNEL_INLINE void *elem(int vt, const void *v, uint64_t i) { return (char *)v + (is_f64(vt) ? 8 : 4) * i; }

/* Value i's bits; storing them; its key (NaNs clamped). */
KERNEL_INLINE uint64_t bits(int vt, const void *v, uint64_t i)
{
    return is_f64(vt) ? ((const uint64_t *)v)[i] : ((const uint32_t *)v)[i];
}
KERNEL_INLINE void set(int vt, void *v, uint64_t i, uint64_t b)
{
    if (is_f64(vt)) ((uint64_t *)v)[i] = b;
    else ((uint32_t *)v)[i] = (uint32_t)b;
}
KERNEL_INLINE uint64_t key(int vt, const void *v, uint64_t i)
{
    uint64_t a = bits(vt, v, i) & magnitude_mask(vt);
    return a < nan_key(vt) ? a : nan_key(vt);
}

/* None of the 16 values from x[i] passes t: key - t has its top bit set
 * exactly when key < t (both are below 2^top_bit), so the AND of the 16
 * differences has it set when none passed -- a loop of subtractions and
 * ANDs in the type's width that the compiler vectorises with plain SSE2. */
KERNEL_INLINE int none_of_16(int vt, const void *x, uint64_t i, uint64_t t)
{
    if (is_f64(vt)) {
        uint64_t miss = UINT64_MAX;
        for (int j = 0; j < 16; j++) miss &= (((const uint64_t *)x)[i + j] & (UINT64_MAX >> 1)) - t;
        return (int)(miss >> 63);
    }
    uint32_t miss = UINT32_MAX;
    for (int j = 0; j < 16; j++) miss &= (((const uint32_t *)x)[i + j] & (UINT32_MAX >> 1)) - (uint32_t)t;
    return (int)(miss >> 31);
}

/* The bits of x[i] + g[i] in the value type (x[i]'s without g). */
KERNEL_INLINE uint64_t sum_bits(int vt, const void *x, const void *g, uint64_t i)
{
    uint64_t b = bits(vt, x, i);
    uint32_t b32 = (uint32_t)b;
    float f;
    double d;
    if (!g) return b;
    if (is_f64(vt)) return memcpy(&d, &b, 8), d += ((const double *)g)[i], memcpy(&b, &d, 8), b;
    return memcpy(&f, &b32, 4), f += ((const float *)g)[i], memcpy(&b32, &f, 4), b32;
}

/* -------------------------------------------------------- acc = eps + g */

/* eps[i] += g[i] in the value type vt (float or double); the sum, in
 * double. */
KERNEL_INLINE double add_at(int vt, void *eps, const void *g, uint64_t i)
{
    if (vt == SPARCML_FLOAT) {
        float *e = eps;
        e[i] += ((const float *)g)[i];
        return e[i];
    }
    double *d = eps;
    d[i] += ((const double *)g)[i];
    return d[i];
}

/* eps += g over n values, the squares of the sums added to s[0..3] by
 * index mod 4 (the last n mod 4 to s[0]): four named partial sums, since
 * one would make the pass wait on each addition's latency and an array of
 * them stays in memory (this unrolled pass measures faster than a plain
 * add at -O2).  Run over blocks of a multiple of 4 values it adds what one
 * run over all of them adds, in the same order. */
KERNEL_INLINE void accumulate_body(int vt, void *restrict eps, const void *restrict g, uint64_t n, double s[4])
{
    double s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];
    uint64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        double a = add_at(vt, eps, g, i), b = add_at(vt, eps, g, i + 1);
        double c = add_at(vt, eps, g, i + 2), d = add_at(vt, eps, g, i + 3);
        s0 += a * a, s1 += b * b, s2 += c * c, s3 += d * d;
    }
    for (; i < n; i++) {
        double a = add_at(vt, eps, g, i);
        s0 += a * a;
    }
    s[0] = s0, s[1] = s1, s[2] = s2, s[3] = s3;
}

static void accumulate_f32(void *eps, const void *g, uint64_t n, double s[4])
{ accumulate_body(SPARCML_FLOAT, eps, g, n, s); }
static void accumulate_f64(void *eps, const void *g, uint64_t n, double s[4])
{ accumulate_body(SPARCML_DOUBLE, eps, g, n, s); }

KERNEL_INLINE void accumulate(int vt, void *eps, const void *g, uint64_t n, double s[4])
{
    is_f64(vt) ? accumulate_f64(eps, g, n, s) : accumulate_f32(eps, g, n, s);
}

static double norm2_of(const double s[4]) { return (s[0] + s[1]) + (s[2] + s[3]); }

double topk_accumulate(void *eps, const void *g, uint64_t n, int vtype)
{
    double s[4] = {0};
    accumulate(vtype, eps, g, n, s);
    return norm2_of(s);
}

/* ---------------------------------------------------------------- filters */

/* The candidates of one block (filter_fn, topk_impl.h).  The portable
 * filter tests 16 values at once (none_of_16); where one passed, push
 * stores each value and moves the cursor by the test (no branch).  The
 * AVX2 filters (topk_avx2.c) test 128 bytes per step and walk the bits of
 * the values that passed. */
KERNEL_INLINE uint64_t push_body(int vt, const void *x, uint64_t len, uint64_t base, uint64_t t, uint64_t *ci,
                                 void *cv)
{
    uint64_t m = 0;
    for (uint64_t i = 0; i < len; i++) {
        uint64_t b = bits(vt, x, i);
        ci[m] = base + i;
        set(vt, cv, m, b);
        m += (b & magnitude_mask(vt)) >= t;
    }
    return m;
}

KERNEL_INLINE uint64_t filter_body(int vt, const void *x, uint64_t base, uint64_t len, uint64_t t, uint64_t *ci,
                                   void *cv)
{
    uint64_t m = 0, i = 0;
    for (; i + 16 <= len; i += 16)
        if (!none_of_16(vt, x, i, t)) m += push_body(vt, elem(vt, x, i), 16, base + i, t, ci + m, elem(vt, cv, m));
    return m + push_body(vt, elem(vt, x, i), len - i, base + i, t, ci + m, elem(vt, cv, m));
}

uint64_t filter_f32(const void *x, uint64_t base, uint64_t len, uint64_t t, uint64_t *ci, void *cv)
{ return filter_body(SPARCML_FLOAT, x, base, len, t, ci, cv); }
uint64_t filter_f64(const void *x, uint64_t base, uint64_t len, uint64_t t, uint64_t *ci, void *cv)
{ return filter_body(SPARCML_DOUBLE, x, base, len, t, ci, cv); }

/* The filters this CPU runs (checked per call: a few loads). */
static filter_fn *filter_for(int vt)
{
#ifdef TOPK_X86
    if (stream_avx2_runs()) return is_f64(vt) ? filter_f64_avx2 : filter_f32_avx2;
#endif
    return is_f64(vt) ? filter_f64 : filter_f32;
}

/* ------------------------------------------------------------- selection */

/* The candidates: m of them in index order, all with key >= t, in room
 * for cap; k are wanted. */
typedef struct cands {
    uint64_t k, cap, m, t;
    uint64_t *ci;    /* indices */
    void *cv;        /* value bits */
    uint64_t *hist;  /* TOPK_HIST counts for the radix select */
} cands;

/* Radix select, most significant digit first, of the r-th largest key
 * among v[0..m) (1 <= r <= m); *eq receives how many of the top r have
 * exactly that key. */
KERNEL_INLINE uint64_t kth_body(int vt, const void *v, uint64_t m, uint64_t r, uint64_t *hist, uint64_t *eq)
{
    uint64_t prefix = 0;
    for (unsigned hi = top_bit(vt); hi > 0;) {
        unsigned d = hi < TOPK_DIGIT ? hi : TOPK_DIGIT, lo = hi - d;
        uint64_t b = ((uint64_t)1 << d) - 1;
        memset(hist, 0, (b + 1) * sizeof *hist);
        for (uint64_t i = 0; i < m; i++) {
            uint64_t k = key(vt, v, i);
            hist[(k >> lo) & b] += (k >> hi) == prefix;
        }
        for (; r > hist[b]; b--) r -= hist[b];
        prefix = prefix << d | b;
        hi = lo;
    }
    *eq = r;
    return prefix;
}

static uint64_t kth_f32(const void *v, uint64_t m, uint64_t r, uint64_t *hist, uint64_t *eq)
{ return kth_body(SPARCML_FLOAT, v, m, r, hist, eq); }
static uint64_t kth_f64(const void *v, uint64_t m, uint64_t r, uint64_t *hist, uint64_t *eq)
{ return kth_body(SPARCML_DOUBLE, v, m, r, hist, eq); }
KERNEL_INLINE uint64_t kth(int vt, const void *v, uint64_t m, uint64_t r, uint64_t *hist, uint64_t *eq)
{
    return is_f64(vt) ? kth_f64(v, m, r, hist, eq) : kth_f32(v, m, r, hist, eq);
}

/* Compact ci/cv in place to the entries above T and the first eq equal to
 * T, in order. */
KERNEL_INLINE uint64_t keep(int vt, uint64_t *ci, void *cv, uint64_t m, uint64_t T, uint64_t eq)
{
    uint64_t o = 0;
    for (uint64_t i = 0; i < m; i++) {
        uint64_t k = key(vt, cv, i);
        int tie = k == T && eq > 0;
        eq -= (uint64_t)tie;
        ci[o] = ci[i];
        set(vt, cv, o, bits(vt, cv, i));
        o += (uint64_t)(k > T || tie);
    }
    return o;
}

/* Keep the r best candidates, admit only what beats them. */
KERNEL_INLINE void prune_body(int vt, cands *c, uint64_t r)
{
    uint64_t eq, T = kth(vt, c->cv, c->m, r, c->hist, &eq);
    c->m = keep(vt, c->ci, c->cv, c->m, T, eq);
    c->t = T + 1;
}

static void prune_f32(cands *c, uint64_t r) { prune_body(SPARCML_FLOAT, c, r); }
static void prune_f64(cands *c, uint64_t r) { prune_body(SPARCML_DOUBLE, c, r); }
KERNEL_INLINE void prune(int vt, cands *c, uint64_t r) { is_f64(vt) ? prune_f64(c, r) : prune_f32(c, r); }

/* One pass of filter f over x, pruning to make room; with g, x += g first,
 * a block at a time (accumulate: the squares of the sums into s), so that
 * the filter reads each block of sums from L1 and x is read and written
 * once. */
KERNEL_INLINE void pass_body(int vt, void *x, const void *g, uint64_t n, cands *c, filter_fn *f, double s[4])
{
    int full = 0; /* k NaNs held: nothing can beat them */
    for (uint64_t o = 0; o < n; o += TOPK_BLOCK) {
        uint64_t len = n - o < TOPK_BLOCK ? n - o : TOPK_BLOCK;
        if (g) accumulate(vt, elem(vt, x, o), elem(vt, g, o), len, s);
        if (!full && c->cap - c->m < len) {
            prune(vt, c, c->k);
            full = c->t > nan_key(vt);
        }
        if (!full) c->m += f(elem(vt, x, o), o, len, c->t, c->ci + c->m, elem(vt, c->cv, c->m));
    }
}

static void pass_f32(void *x, const void *g, uint64_t n, cands *c, filter_fn *f, double s[4])
{ pass_body(SPARCML_FLOAT, x, g, n, c, f, s); }
static void pass_f64(void *x, const void *g, uint64_t n, cands *c, filter_fn *f, double s[4])
{ pass_body(SPARCML_DOUBLE, x, g, n, c, f, s); }
KERNEL_INLINE void pass(int vt, void *x, const void *g, uint64_t n, cands *c, filter_fn *f, double s[4])
{
    is_f64(vt) ? pass_f64(x, g, n, c, f, s) : pass_f32(x, g, n, c, f, s);
}

/* The first threshold, from the sample (of x + g with g). */
KERNEL_INLINE uint64_t first_t(int vt, const void *x, const void *g, uint64_t n, uint64_t k, const layout *l,
                               char *scratch)
{
    uint64_t forced = atomic_load_explicit(&force_start, memory_order_relaxed), r, eq, T;
    void *sampled = scratch + l->sv;
    if (forced) return forced < nan_key(vt) ? forced : nan_key(vt);
    r = l->sample ? sample_rank(n, k, l->sample) : 0;
    if (r == 0) return 1;
    for (uint64_t j = 0; j < l->sample; j++) set(vt, sampled, j, sum_bits(vt, x, g, sample_pos(j, n, l->sample)));
    T = kth(vt, sampled, l->sample, r, (uint64_t *)(scratch + l->hist), &eq);
    return T > 0 ? T : 1;
}

/* The passes and the final prune; returns the number held. */
KERNEL_INLINE uint64_t run(int vt, void *x, const void *g, uint64_t n, uint64_t k, const layout *l, char *scratch,
                           filter_fn *f, cands *c, double s[4])
{
    uint64_t t0 = first_t(vt, x, g, n, k, l, scratch);
    *c = (cands){.k = k, .cap = l->cap, .t = t0, .ci = (uint64_t *)(scratch + l->ci), .cv = scratch + l->cv,
                 .hist = (uint64_t *)(scratch + l->hist)};
    pass(vt, x, g, n, c, f, s);
    if (c->m < k && t0 > 1) { /* the estimate was too high */
        c->m = 0;
        c->t = 1;
        pass(vt, x, NULL, n, c, f, s); /* x holds the sums now */
    }
    if (c->m > k) prune(vt, c, k);
    return c->m;
}

/* k >= n: every nonzero, written straight to the output. */
KERNEL_INLINE uint64_t all(int vt, const void *x, uint64_t n, void *idx, unsigned iw, void *out)
{
    uint64_t o = 0;
    for (uint64_t i = 0; i < n; i++)
        if (key(vt, x, i)) {
            sparcml_put_index(idx, iw, o, i);
            set(vt, out, o++, bits(vt, x, i));
        }
    return o;
}

static void write_indices(const uint64_t *ci, uint64_t m, void *idx, unsigned iw)
{
    if (iw == 8) {
        memcpy(idx, ci, m * 8);
        return;
    }
    for (uint64_t i = 0; i < m; i++) sparcml_put_index(idx, 4, i, ci[i]);
}

/* The selection of x, or with g of x + g, formed into x in its threshold
 * pass (s: the squares of the sums).  Without g, x is only read. */
static uint64_t select_sum(void *x, const void *g, uint64_t n, int vtype, uint64_t k, void *scratch, void *idx,
                           unsigned iw, void *out_vals, double s[4])
{
    uint64_t vs = sparcml_value_size(vtype), m;
    layout l = layout_for(n, k, vs);
    cands c;
    if (vtype != SPARCML_FLOAT && vtype != SPARCML_DOUBLE) return 0;
    if (g && (k == 0 || k >= n)) { /* no threshold pass: the sums first */
        accumulate(vtype, x, g, n, s);
        g = NULL;
    }
    if (k == 0 || n == 0) return 0;
    if (k >= n)
        m = is_f64(vtype) ? all(SPARCML_DOUBLE, x, n, idx, iw, out_vals) : all(SPARCML_FLOAT, x, n, idx, iw, out_vals);
    else if (is_f64(vtype))
        m = run(SPARCML_DOUBLE, x, g, n, k, &l, scratch, filter_for(vtype), &c, s);
    else
        m = run(SPARCML_FLOAT, x, g, n, k, &l, scratch, filter_for(vtype), &c, s);
    if (k < n && m > 0) {
        write_indices(c.ci, m, idx, iw);
        memcpy(out_vals, c.cv, m * vs);
    }
    return m;
}

uint64_t topk_select(const void *vals, uint64_t n, int vtype, uint64_t k, void *scratch,
                     void *idx, unsigned iw, void *out_vals)
{
    return select_sum((void *)vals, NULL, n, vtype, k, scratch, idx, iw, out_vals, NULL);
}

uint64_t topk_select_sum(void *eps, const void *g, uint64_t n, int vtype, uint64_t k, void *scratch, void *idx,
                         unsigned iw, void *out_vals, double *norm2)
{
    double s[4] = {0};
    uint64_t m = select_sum(eps, g, n, vtype, k, scratch, idx, iw, out_vals, s);
    *norm2 = norm2_of(s);
    return m;
}
