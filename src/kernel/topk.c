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
 * Cost: the pass compares a block of values at a time (AVX2 where the
 * CPU has it) and looks at single values only where one passed; on
 * gradient-like values it runs at 0.3 to 1.1 times a memcpy of them
 * (bench/kernel_bench --topk).  The buffer holds cap >= 2k + 2 TOPK_BLOCK
 * entries (or all n), so at least k + TOPK_BLOCK values are admitted
 * between two prunes of O(cap): the prunes stay O(n) whatever t is, and
 * cost next to nothing when the sample is right.  The second pass from
 * t = 1 is the expensive case: it happens when the sample's count ran some
 * 4 standard deviations high (on the order of once in 10^4 or 10^5 calls
 * for values in random order) and costs about 3 memcpys more there; where
 * every value beats the ones before it (ascending magnitudes) it admits
 * and prunes every value, some 30 memcpys -- but on sorted values the
 * strided sample (one value per stride) does not overestimate, for k up to
 * n/4 at least. */
#include "config.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define TOPK_X86 1
#include <immintrin.h>
#endif

#include "kernel/topk.h"

#define TOPK_BLOCK 1024  /* values per filter call, the room made before it */
#define TOPK_SAMPLE 16384 /* most values sampled for the first threshold */
#define TOPK_SAMPLE_MIN 64 /* fewer: no sample, the pass starts at t = 1 */
#define TOPK_DIGIT 11    /* bits per radix select round */
#define TOPK_HIST ((uint64_t)1 << TOPK_DIGIT)

/* The tests' switches: atomics, so that a test that flips them beside
 * running selections is not a data race (topk.h). */
static atomic_int force_portable;
static atomic_uint_fast64_t force_start;

void topk_force_portable(int on) { atomic_store_explicit(&force_portable, on, memory_order_relaxed); }
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

/* ---------------------------------------------------------------- filters */

/* Candidates of one block: indices base + i of x[0..len) whose bits
 * without the sign (mask ABS) are at least t, appended at ci/cv; returns
 * how many.  The portable filter tests 16 values at once: key - t has its
 * top bit (TOP) set exactly when key < t (both are below 2^TOP), so the
 * AND of the 16 differences has it set when none passed -- a loop of
 * subtractions and ANDs that the compiler vectorises with plain SSE2.
 * Where one passed, push stores each value and moves the cursor by the
 * test (no branch).  The AVX2 filters test 128 bytes per step and walk
 * the bits of the values that passed. */
#define TOPK_FILTER(NAME, BT, ABS, TOP)                                         \
    static uint64_t push_##NAME(const BT *x, uint64_t len, uint64_t base,      \
                                BT t, uint64_t *ci, BT *cv)                    \
    {                                                                          \
        uint64_t m = 0;                                                        \
        for (uint64_t i = 0; i < len; i++) {                                   \
            ci[m] = base + i;                                                  \
            cv[m] = x[i];                                                      \
            m += (x[i] & ABS) >= t;                                            \
        }                                                                      \
        return m;                                                              \
    }                                                                          \
    static uint64_t filter_##NAME(const BT *x, uint64_t base, uint64_t len,    \
                                  BT t, uint64_t *ci, BT *cv)                  \
    {                                                                          \
        uint64_t m = 0, i = 0;                                                 \
        for (; i + 16 <= len; i += 16) {                                       \
            BT miss = (BT)-1;                                                  \
            for (int j = 0; j < 16; j++) miss &= (x[i + j] & ABS) - t;         \
            if (!(miss >> TOP))                                                \
                m += push_##NAME(x + i, 16, base + i, t, ci + m, cv + m);      \
        }                                                                      \
        return m + push_##NAME(x + i, len - i, base + i, t, ci + m, cv + m);   \
    }

TOPK_FILTER(f32, uint32_t, UINT32_C(0x7fffffff), 31)
TOPK_FILTER(f64, uint64_t, UINT64_C(0x7fffffffffffffff), 63)

#ifdef TOPK_X86
/* The entries of x[0..32) or x[0..16) whose bit is set in `bits`. */
#define PUSH_BITS()                                                            \
    do {                                                                       \
        for (; bits; bits &= bits - 1) {                                       \
            unsigned j_ = (unsigned)__builtin_ctzll(bits);                     \
            ci[m] = base + i + j_;                                             \
            cv[m++] = x[i + j_];                                               \
        }                                                                      \
    } while (0)

/* Lanes of 4 vectors compared with the key limit t - 1 (signed: keys
 * fit); skips the step when none passed, else their mask of 32 (f32) or
 * 16 (f64) bits. */
#define CMP4(W, CAST, MOVEMASK, LANES)                                         \
    __m256i c0 = _mm256_cmpgt_epi##W(_mm256_and_si256(LOAD(0), abs), lim);     \
    __m256i c1 = _mm256_cmpgt_epi##W(_mm256_and_si256(LOAD(1), abs), lim);     \
    __m256i c2 = _mm256_cmpgt_epi##W(_mm256_and_si256(LOAD(2), abs), lim);     \
    __m256i c3 = _mm256_cmpgt_epi##W(_mm256_and_si256(LOAD(3), abs), lim);     \
    __m256i any = _mm256_or_si256(_mm256_or_si256(c0, c1), _mm256_or_si256(c2, c3)); \
    if (_mm256_testz_si256(any, any)) continue;                                \
    uint64_t bits = (uint64_t)(unsigned)MOVEMASK(CAST(c0))                     \
                    | (uint64_t)(unsigned)MOVEMASK(CAST(c1)) << LANES          \
                    | (uint64_t)(unsigned)MOVEMASK(CAST(c2)) << 2 * LANES      \
                    | (uint64_t)(unsigned)MOVEMASK(CAST(c3)) << 3 * LANES
#define LOAD(q) _mm256_loadu_si256((const __m256i *)(x + i) + (q))

__attribute__((target("avx2")))
static uint64_t filter_f32_avx2(const uint32_t *x, uint64_t base, uint64_t len, uint32_t t,
                                uint64_t *ci, uint32_t *cv)
{
    const __m256i abs = _mm256_set1_epi32(0x7fffffff), lim = _mm256_set1_epi32((int)(t - 1));
    uint64_t m = 0, i = 0;
    for (; i + 32 <= len; i += 32) {
        CMP4(32, _mm256_castsi256_ps, _mm256_movemask_ps, 8);
        PUSH_BITS();
    }
    _mm256_zeroupper(); /* GCC omits it here; dirty upper halves slow the SSE code after */
    return m + filter_f32(x + i, base + i, len - i, t, ci + m, cv + m);
}

__attribute__((target("avx2")))
static uint64_t filter_f64_avx2(const uint64_t *x, uint64_t base, uint64_t len, uint64_t t,
                                uint64_t *ci, uint64_t *cv)
{
    const __m256i abs = _mm256_set1_epi64x(0x7fffffffffffffffll);
    const __m256i lim = _mm256_set1_epi64x((long long)(t - 1));
    uint64_t m = 0, i = 0;
    for (; i + 16 <= len; i += 16) {
        CMP4(64, _mm256_castsi256_pd, _mm256_movemask_pd, 4);
        PUSH_BITS();
    }
    _mm256_zeroupper(); /* GCC omits it here; dirty upper halves slow the SSE code after */
    return m + filter_f64(x + i, base + i, len - i, t, ci + m, cv + m);
}
#endif

typedef uint64_t (*filter_f32_fn)(const uint32_t *, uint64_t, uint64_t, uint32_t, uint64_t *,
                                  uint32_t *);
typedef uint64_t (*filter_f64_fn)(const uint64_t *, uint64_t, uint64_t, uint64_t, uint64_t *,
                                  uint64_t *);

/* The filters this CPU runs (checked per call: a few loads). */
static filter_f32_fn filter_for_f32(void)
{
#ifdef TOPK_X86
    if (!atomic_load_explicit(&force_portable, memory_order_relaxed) && __builtin_cpu_supports("avx2"))
        return filter_f32_avx2;
#endif
    return filter_f32;
}

static filter_f64_fn filter_for_f64(void)
{
#ifdef TOPK_X86
    if (!atomic_load_explicit(&force_portable, memory_order_relaxed) && __builtin_cpu_supports("avx2"))
        return filter_f64_avx2;
#endif
    return filter_f64;
}

/* -------------------------------------------------------- acc = eps + g */

#define TOPK_INLINE __attribute__((always_inline)) static inline

/* eps[i] += g[i] in the value type vt (float or double); the sum, in
 * double. */
TOPK_INLINE double add_at(int vt, void *eps, const void *g, uint64_t i)
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
TOPK_INLINE void accumulate_body(int vt, void *restrict eps, const void *restrict g, uint64_t n, double s[4])
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

static double norm2_of(const double s[4]) { return (s[0] + s[1]) + (s[2] + s[3]); }

double topk_accumulate(void *eps, const void *g, uint64_t n, int vtype)
{
    double s[4] = {0};
    if (vtype == SPARCML_FLOAT) accumulate_f32(eps, g, n, s);
    else accumulate_f64(eps, g, n, s);
    return norm2_of(s);
}

/* The bits of eps[i] + g[i] in the value type (the sum eps[i] becomes),
 * or of eps[i] without g. */
static uint32_t sum_bits_f32(const uint32_t *eps, const uint32_t *g, uint64_t i)
{
    float a, b;
    uint32_t r;
    if (!g) return eps[i];
    memcpy(&a, eps + i, 4), memcpy(&b, g + i, 4);
    a += b;
    return memcpy(&r, &a, 4), r;
}

static uint64_t sum_bits_f64(const uint64_t *eps, const uint64_t *g, uint64_t i)
{
    double a, b;
    uint64_t r;
    if (!g) return eps[i];
    memcpy(&a, eps + i, 8), memcpy(&b, g + i, 8);
    a += b;
    return memcpy(&r, &a, 8), r;
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

/* Per value type (bits BT, mask ABS, the NaN key KNAN, key bits KB):
 *   key:     the clamped key of a value
 *   kth:     radix select, most significant digit first, of the r-th
 *            largest key among v[0..m) (1 <= r <= m); *eq receives how many
 *            of the top r have exactly that key
 *   keep:    compact ci/cv in place to the entries above T and the first
 *            eq equal to T, in order
 *   prune:   keep the r best candidates, admit only what beats them
 *   pass:    one pass of filter f over x, pruning to make room; with g,
 *            x += g first, a block at a time (accumulate: the squares of
 *            the sums into s), so that the filter reads each block of
 *            sums from L1 and x is read and written once
 *   first_t: the first threshold, from the sample (of x + g with g)
 *   run:     the passes and the final prune; returns the number held */
#define TOPK_SELECT(NAME, BT, ABS, KNAN, KB)                                   \
    static inline BT key_##NAME(BT v)                                          \
    {                                                                          \
        BT a = v & ABS;                                                        \
        return a < KNAN ? a : KNAN;                                            \
    }                                                                          \
    static BT kth_##NAME(const BT *v, uint64_t m, uint64_t r, uint64_t *hist,  \
                         uint64_t *eq)                                         \
    {                                                                          \
        BT prefix = 0;                                                         \
        for (unsigned hi = KB; hi > 0;) {                                      \
            unsigned d = hi < TOPK_DIGIT ? hi : TOPK_DIGIT, lo = hi - d;       \
            memset(hist, 0, ((uint64_t)1 << d) * sizeof *hist);                \
            for (uint64_t i = 0; i < m; i++) {                                 \
                BT key = key_##NAME(v[i]);                                     \
                hist[(key >> lo) & (((BT)1 << d) - 1)] += (key >> hi) == prefix; \
            }                                                                  \
            uint64_t b = ((uint64_t)1 << d) - 1;                               \
            for (; r > hist[b]; b--) r -= hist[b];                             \
            prefix = (BT)(prefix << d | b);                                    \
            hi = lo;                                                           \
        }                                                                      \
        *eq = r;                                                               \
        return prefix;                                                         \
    }                                                                          \
    static uint64_t keep_##NAME(uint64_t *ci, BT *cv, uint64_t m, BT T,        \
                                uint64_t eq)                                   \
    {                                                                          \
        uint64_t o = 0;                                                        \
        for (uint64_t i = 0; i < m; i++) {                                     \
            BT key = key_##NAME(cv[i]);                                        \
            int tie = key == T && eq > 0;                                      \
            eq -= (uint64_t)tie;                                               \
            ci[o] = ci[i];                                                     \
            cv[o] = cv[i];                                                     \
            o += (uint64_t)(key > T || tie);                                   \
        }                                                                      \
        return o;                                                              \
    }                                                                          \
    static void prune_##NAME(cands *c, uint64_t r)                             \
    {                                                                          \
        uint64_t eq;                                                           \
        BT T = kth_##NAME(c->cv, c->m, r, c->hist, &eq);                       \
        c->m = keep_##NAME(c->ci, c->cv, c->m, T, eq);                         \
        c->t = (uint64_t)T + 1;                                                \
    }                                                                          \
    static void pass_##NAME(BT *x, const BT *g, uint64_t n, cands *c,          \
                            filter_##NAME##_fn f, double s[4])                 \
    {                                                                          \
        int full = 0; /* k NaNs held: nothing can beat them */                \
        for (uint64_t at = 0; at < n; at += TOPK_BLOCK) {                      \
            uint64_t len = n - at < TOPK_BLOCK ? n - at : TOPK_BLOCK;          \
            if (g) accumulate_##NAME(x + at, g + at, len, s);                  \
            if (!full && c->cap - c->m < len) {                                \
                prune_##NAME(c, c->k);                                         \
                full = c->t > KNAN;                                            \
            }                                                                  \
            if (!full) c->m += f(x + at, at, len, (BT)c->t, c->ci + c->m, (BT *)c->cv + c->m); \
        }                                                                      \
    }                                                                          \
    static uint64_t first_t_##NAME(const BT *x, const BT *g, uint64_t n,       \
                                   uint64_t k, const layout *l, char *scratch) \
    {                                                                          \
        uint64_t forced = atomic_load_explicit(&force_start, memory_order_relaxed), r, eq; \
        BT *sv = (BT *)(scratch + l->sv), T;                                   \
        if (forced) return forced < KNAN ? forced : KNAN;                      \
        r = l->sample ? sample_rank(n, k, l->sample) : 0;                      \
        if (r == 0) return 1;                                                  \
        for (uint64_t j = 0; j < l->sample; j++) sv[j] = sum_bits_##NAME(x, g, sample_pos(j, n, l->sample)); \
        T = kth_##NAME(sv, l->sample, r, (uint64_t *)(scratch + l->hist), &eq); \
        return T > 0 ? T : 1;                                                  \
    }                                                                          \
    static uint64_t run_##NAME(BT *x, const BT *g, uint64_t n, uint64_t k,     \
                               const layout *l, char *scratch,                 \
                               filter_##NAME##_fn f, cands *c, double s[4])    \
    {                                                                          \
        uint64_t t0 = first_t_##NAME(x, g, n, k, l, scratch);                  \
        *c = (cands){.k = k, .cap = l->cap, .t = t0, .ci = (uint64_t *)(scratch + l->ci), \
                     .cv = scratch + l->cv, .hist = (uint64_t *)(scratch + l->hist)}; \
        pass_##NAME(x, g, n, c, f, s);                                         \
        if (c->m < k && t0 > 1) { /* the estimate was too high */             \
            c->m = 0;                                                          \
            c->t = 1;                                                          \
            pass_##NAME(x, NULL, n, c, f, s); /* x holds the sums now */       \
        }                                                                      \
        if (c->m > k) prune_##NAME(c, k);                                      \
        return c->m;                                                           \
    }                                                                          \
    /* k >= n: every nonzero, written straight to the output. */              \
    static uint64_t all_##NAME(const BT *x, uint64_t n, void *idx, unsigned iw, \
                               BT *out)                                        \
    {                                                                          \
        uint64_t o = 0;                                                        \
        for (uint64_t i = 0; i < n; i++)                                       \
            if (x[i] & ABS) {                                                  \
                sparcml_put_index(idx, iw, o, i);                              \
                out[o++] = x[i];                                               \
            }                                                                  \
        return o;                                                              \
    }

TOPK_SELECT(f32, uint32_t, UINT32_C(0x7fffffff), UINT32_C(0x7f800001), 31)
TOPK_SELECT(f64, uint64_t, UINT64_C(0x7fffffffffffffff), UINT64_C(0x7ff0000000000001), 63)

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
        if (vtype == SPARCML_FLOAT) accumulate_f32(x, g, n, s);
        else accumulate_f64(x, g, n, s);
        g = NULL;
    }
    if (k == 0 || n == 0) return 0;
    if (vtype == SPARCML_FLOAT)
        m = k >= n ? all_f32(x, n, idx, iw, out_vals)
                   : run_f32(x, g, n, k, &l, scratch, filter_for_f32(), &c, s);
    else
        m = k >= n ? all_f64(x, n, idx, iw, out_vals)
                   : run_f64(x, g, n, k, &l, scratch, filter_for_f64(), &c, s);
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
