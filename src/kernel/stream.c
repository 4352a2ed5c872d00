/* stream.c -- validation, merge-add, slicing and assembly of streams.
 *
 * The inner loops are instantiated per (value type, index width) by the
 * KERNELS macro so that each is one tight pass without per-element
 * dispatch.  Integer values add as unsigned (two's complement wrap-around,
 * never undefined behaviour). */
#include "config.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define STREAM_X86 1
#include <immintrin.h>
#endif

#include "kernel/stream.h"

/* ------------------------------------------------------------------ views */

static void stream_set_pointers(sv *s)
{
    char *p = (char *)s->base + SPARCML_HEADER_BYTES;
    if (s->dense) {
        s->idx = NULL;
        s->val = p;
    } else {
        s->idx = p;
        s->val = p + sparcml_round8(s->nnz * s->iw);
    }
}

sv stream_view(const void *buf)
{
    sparcml_header h;
    memcpy(&h, buf, sizeof h);
    sv s = {.base = (void *)buf,
            .dim = h.dim,
            .nnz = h.nnz,
            .vtype = h.value_type,
            .iw = h.index_width,
            .vs = (unsigned)sparcml_value_size(h.value_type),
            .dense = h.format == SPARCML_DENSE};
    stream_set_pointers(&s);
    return s;
}

sv stream_init(void *buf, uint64_t dim, int vtype, uint64_t nnz, int dense)
{
    sv s;
    sparcml_write_header(buf, dim, vtype, nnz, dense ? SPARCML_DENSE : SPARCML_SPARSE);
    s = stream_view(buf);
    if (!dense) memset((char *)s.idx + nnz * s.iw, 0, sparcml_round8(nnz * s.iw) - nnz * s.iw);
    return s;
}

uint64_t stream_bytes(const sv *s)
{
    return s->dense ? sparcml_dense_bytes(s->dim, s->vtype)
                    : sparcml_sparse_bytes(s->dim, s->vtype, s->nnz);
}

sv stream_copy(const sv *s, void *dst)
{
    memcpy(dst, s->base, stream_bytes(s));
    return stream_view(dst);
}

/* ------------------------------------------------------------- validation */

static int header_reason(const sparcml_header *h, int want_vtype)
{
    if (h->magic != SPARCML_MAGIC) return SPARCML_R_BAD_MAGIC;
    if (h->version != SPARCML_VERSION) return SPARCML_R_BAD_VERSION;
    if (sparcml_value_size(h->value_type) == 0) return SPARCML_R_BAD_VALUE_TYPE;
    if (h->value_type != want_vtype) return SPARCML_R_VALUE_TYPE_TAG;
    if (h->format > SPARCML_DENSE) return SPARCML_R_BAD_FORMAT;
    if (h->reserved != 0) return SPARCML_R_BAD_RESERVED;
    if (h->dim > SPARCML_MAX_DIM) return SPARCML_R_DIM_TOO_LARGE;
    if (h->index_width != sparcml_index_width(h->dim)) return SPARCML_R_BAD_INDEX_WIDTH;
    if (h->nnz > h->dim) return SPARCML_R_NNZ_GT_DIM;
    if (h->format == SPARCML_DENSE && h->nnz != h->dim) return SPARCML_R_DENSE_NNZ;
    return SPARCML_R_OK;
}

#define CHECK_INDICES(IT)                                                      \
    static int check_indices_##IT(const IT *ix, uint64_t n, uint64_t dim,     \
                                  uint64_t *where)                            \
    {                                                                          \
        for (uint64_t i = 0; i < n; i++) {                                     \
            if (ix[i] >= dim) { *where = i; return SPARCML_R_INDEX_GE_DIM; }   \
            if (i > 0 && ix[i] <= ix[i - 1]) {                                 \
                *where = i;                                                    \
                return ix[i] == ix[i - 1] ? SPARCML_R_DUPLICATE                \
                                          : SPARCML_R_UNSORTED;               \
            }                                                                  \
        }                                                                      \
        return SPARCML_R_OK;                                                   \
    }
CHECK_INDICES(uint32_t)
CHECK_INDICES(uint64_t)

int stream_parse(const void *buf, uint64_t avail, int want_vtype, sv *out, uint64_t *where)
{
    sparcml_header h;
    int reason;
    *where = 0;
    if (!buf) return SPARCML_R_NULL_BUFFER;
    if ((uintptr_t)buf % SPARCML_WORD_BYTES) return SPARCML_R_UNALIGNED;
    if (avail < SPARCML_HEADER_BYTES) return SPARCML_R_SHORT_BUFFER;
    memcpy(&h, buf, sizeof h);
    reason = header_reason(&h, want_vtype);
    if (reason != SPARCML_R_OK) return reason;
    *out = stream_view(buf);
    if (stream_bytes(out) > avail) return SPARCML_R_STREAM_OVERFLOW;
    if (out->dense) return SPARCML_R_OK;
    return out->iw == 4 ? check_indices_uint32_t(out->idx, out->nnz, out->dim, where)
                        : check_indices_uint64_t(out->idx, out->nnz, out->dim, where);
}

/* --------------------------------------------------------- AVX2 dispatch */

static atomic_int force_portable;

void stream_force_portable(int on) { atomic_store_explicit(&force_portable, on, memory_order_relaxed); }

int stream_avx2_runs(void)
{
#ifdef STREAM_X86
    return !atomic_load_explicit(&force_portable, memory_order_relaxed) && __builtin_cpu_supports("avx2");
#else
    return 0;
#endif
}

/* ---------------------------------------------------------------- kernels */

/* Sparse a + sparse b -> (oi, ov); returns the number of entries. */
typedef uint64_t (*merge_fn)(const void *ai, const void *av, uint64_t an, const void *bi, const void *bv,
                             uint64_t bn, void *oi, void *ov);

typedef struct kernels {
    /* merge needs room for an + bn entries in oi and in ov (it may write
     * beyond the union before compacting); merge_exact only for the union. */
    merge_fn merge, merge_exact;
    /* Number of distinct indices in the union of a and b. */
    uint64_t (*union_size)(const void *ai, uint64_t an, const void *bi, uint64_t bn);
    /* dense d[idx[i] - base] = left ? v[i] + d[..] : d[..] + v[i] */
    void (*scatter_add)(void *d, const void *idx, const void *v, uint64_t n, int left);
    /* dense d[i] = left ? s[i] + d[i] : d[i] + s[i] */
    void (*dense_add)(void *d, const void *s, uint64_t n, int left);
    /* dense d[idx[i]] = v[i] (d already zeroed) */
    void (*scatter)(void *d, const void *idx, const void *v, uint64_t n);
} kernels;

/* merge_*: inputs of at least MERGE_INTERLEAVE_MIN entries are cut into
 * MERGE_CHAINS independent merges advanced in turn in one loop.  With
 * random interleaving a two-pointer merge is bound by its loop-carried
 * chain (load index, compare, advance) or, branchy, by a mispredict every
 * other entry; independent chains let the core overlap them.  The step is
 * branch-free and computes the same sums (a + b, a left) as the scalar
 * merge, so both give the same bits, and the choice between them may be
 * local: where a probe of the chains' first steps finds the direction
 * rarely changing (less than 1 in 8), the scalar merge is kept. */
#define MERGE_CHAINS 4
#define MERGE_INTERLEAVE_MIN 4096
#define MERGE_PROBE 64 /* steps sampled at each chain's start */

typedef struct merge_chain {
    uint64_t i, j, iend, jend; /* cursors and ends in a and b */
    uint64_t o, start;         /* output cursor, and where the chain began */
} merge_chain;

/* Steps every chain can take before one of its inputs may run out. */
static inline uint64_t merge_safe_steps(const merge_chain *c)
{
    uint64_t m = UINT64_MAX;
    for (int s = 0; s < MERGE_CHAINS; s++) {
        uint64_t ra = c[s].iend - c[s].i, rb = c[s].jend - c[s].j;
        uint64_t r = ra < rb ? ra : rb;
        if (r < m) m = r;
    }
    return m;
}

/* a + b of one pair of values, a the first operand of the x86 addition:
 * where both are NaN it returns a's (quieted), so that the merge's sums
 * do not depend on which of its loops adds a pair.  Written in assembly
 * because the compiler may swap the operands of a C addition (it folds a
 * load into the second). */
static inline float merge_add_f32(float a, float b)
{
#ifdef STREAM_X86
    __asm__("addss %1, %0" : "+x"(a) : "xm"(b));
    return a;
#else
    return a + b;
#endif
}

static inline double merge_add_f64(double a, double b)
{
#ifdef STREAM_X86
    __asm__("addsd %1, %0" : "+x"(a) : "xm"(b));
    return a;
#else
    return a + b;
#endif
}

static inline uint32_t merge_add_u32(uint32_t a, uint32_t b) { return a + b; }
static inline uint64_t merge_add_u64(uint64_t a, uint64_t b) { return a + b; }

/* One branch-free step of a chain with cursors (i, j, o) over ai/av,
 * bi/bv into oi/ov: the smaller index, both values summed (a left) when
 * equal, both cursors advanced by the comparison.  Values are chosen on
 * their bits (BT: an unsigned integer of their size) with masks: a
 * compiler turns a floating-point select into a branch, which would
 * mispredict as often as the merge it replaces. */
#define MERGE_STEP(VT, IT, BT, ADD, i, j, o)                                   \
    do {                                                                       \
        IT x_ = ai[i], y_ = bi[j];                                             \
        VT va_ = av[i], vb_ = bv[j], sum_ = ADD(va_, vb_);                     \
        BT ba_, bb_, bs_, pick_;                                               \
        memcpy(&ba_, &va_, sizeof ba_);                                        \
        memcpy(&bb_, &vb_, sizeof bb_);                                        \
        memcpy(&bs_, &sum_, sizeof bs_);                                       \
        BT ta_ = x_ <= y_, tb_ = y_ <= x_;                                     \
        pick_ = bb_ ^ ((ba_ ^ bb_) & (BT)-ta_);                                \
        pick_ ^= (bs_ ^ pick_) & (BT)-(ta_ & tb_);                             \
        oi[o] = y_ ^ ((x_ ^ y_) & (IT)-(IT)ta_);                               \
        memcpy(&ov[o], &pick_, sizeof pick_);                                  \
        o++;                                                                   \
        i += (uint64_t)ta_;                                                    \
        j += (uint64_t)tb_;                                                    \
    } while (0)

#define KERNELS(NAME, VT, IT, BT, ADD)                                         \
    static uint64_t merge_scalar_##NAME(const void *ai_, const void *av_,      \
                                        uint64_t an, const void *bi_,          \
                                        const void *bv_, uint64_t bn,          \
                                        void *oi_, void *ov_)                  \
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
            else { oi[o] = x; ov[o++] = ADD(av[i++], bv[j++]); }               \
        }                                                                      \
        for (; i < an; i++, o++) { oi[o] = ai[i]; ov[o] = av[i]; }             \
        for (; j < bn; j++, o++) { oi[o] = bi[j]; ov[o] = bv[j]; }             \
        return o;                                                              \
    }                                                                          \
    /* Does the merge take the same direction step after step at the     \
     * chains' starts (identical or clustered indices)?  Then the branchy  \
     * scalar merge predicts well and beats the branch-free chains.  */    \
    static int merge_predictable_##NAME(const IT *ai, const IT *bi,           \
                                        const merge_chain *c)                  \
    {                                                                          \
        unsigned steps = 0, changes = 0;                                       \
        for (int s = 0; s < MERGE_CHAINS; s++) {                               \
            uint64_t i = c[s].i, j = c[s].j;                                   \
            int prev = 0;                                                      \
            for (int t = 0; t < MERGE_PROBE && i < c[s].iend && j < c[s].jend; t++) { \
                int dir = (ai[i] <= bi[j]) | (bi[j] <= ai[i]) << 1;            \
                changes += prev != 0 && dir != prev;                           \
                steps++;                                                       \
                prev = dir;                                                    \
                i += dir & 1;                                                  \
                j += dir >> 1;                                                 \
            }                                                                  \
        }                                                                      \
        return changes * 8 < steps;                                            \
    }                                                                          \
    static uint64_t merge_##NAME(const void *ai_, const void *av_, uint64_t an, \
                                 const void *bi_, const void *bv_, uint64_t bn, \
                                 void *oi_, void *ov_)                         \
    {                                                                          \
        const IT *ai = ai_, *bi = bi_;                                         \
        const VT *av = av_, *bv = bv_;                                         \
        IT *oi = oi_;                                                          \
        VT *ov = ov_;                                                          \
        merge_chain c[MERGE_CHAINS];                                           \
        uint64_t o = 0, m;                                                     \
        if (an + bn < MERGE_INTERLEAVE_MIN || an < MERGE_CHAINS)               \
            return merge_scalar_##NAME(ai, av, an, bi, bv, bn, oi, ov);        \
        /* Chain s takes the indices in [ai[s an / S], ai[(s+1) an / S]):   \
         * equal indices meet in one chain; it writes from i + j on, where  \
         * the union of the chains before it ends at the latest.  */         \
        for (int s = 0; s <= MERGE_CHAINS; s++) {                              \
            uint64_t i = an * (uint64_t)s / MERGE_CHAINS, lo = 0, hi = bn;    \
            if (s == MERGE_CHAINS)                                             \
                lo = bn;                                                       \
            else if (s > 0) /* chain 0 also takes b's smaller indices */      \
                while (lo < hi) {                                              \
                    uint64_t mid = lo + (hi - lo) / 2;                         \
                    if (bi[mid] < ai[i]) lo = mid + 1; else hi = mid;          \
                }                                                              \
            if (s > 0) { c[s - 1].iend = i; c[s - 1].jend = lo; }              \
            if (s < MERGE_CHAINS)                                              \
                c[s] = (merge_chain){.i = i, .j = lo, .o = i + lo, .start = i + lo}; \
        }                                                                      \
        if (merge_predictable_##NAME(ai, bi, c))                               \
            return merge_scalar_##NAME(ai, av, an, bi, bv, bn, oi, ov);        \
        /* Interleaved while no chain can run out: m steps are safe.  The  \
         * cursors live in locals so that they stay in registers.  */        \
        while ((m = merge_safe_steps(c)) > 0) {                                \
            uint64_t i0 = c[0].i, j0 = c[0].j, o0 = c[0].o;                    \
            uint64_t i1 = c[1].i, j1 = c[1].j, o1 = c[1].o;                    \
            uint64_t i2 = c[2].i, j2 = c[2].j, o2 = c[2].o;                    \
            uint64_t i3 = c[3].i, j3 = c[3].j, o3 = c[3].o;                    \
            for (uint64_t t = 0; t < m; t++) {                                 \
                MERGE_STEP(VT, IT, BT, ADD, i0, j0, o0);                           \
                MERGE_STEP(VT, IT, BT, ADD, i1, j1, o1);                           \
                MERGE_STEP(VT, IT, BT, ADD, i2, j2, o2);                           \
                MERGE_STEP(VT, IT, BT, ADD, i3, j3, o3);                           \
            }                                                                  \
            c[0].i = i0; c[0].j = j0; c[0].o = o0;                             \
            c[1].i = i1; c[1].j = j1; c[1].o = o1;                             \
            c[2].i = i2; c[2].j = j2; c[2].o = o2;                             \
            c[3].i = i3; c[3].j = j3; c[3].o = o3;                             \
        }                                                                      \
        for (int s = 0; s < MERGE_CHAINS; s++) {                               \
            merge_chain *k = &c[s];                                            \
            k->o += merge_scalar_##NAME(ai + k->i, av + k->i, k->iend - k->i,  \
                                        bi + k->j, bv + k->j, k->jend - k->j,  \
                                        oi + k->o, ov + k->o);                 \
            /* Close the gap the duplicates of earlier chains left.  */      \
            if (o != k->start) {                                               \
                memmove(oi + o, oi + k->start, (k->o - k->start) * sizeof *oi); \
                memmove(ov + o, ov + k->start, (k->o - k->start) * sizeof *ov); \
            }                                                                  \
            o += k->o - k->start;                                              \
        }                                                                      \
        return o;                                                              \
    }                                                                          \
    static uint64_t union_##NAME(const void *ai_, uint64_t an, const void *bi_, \
                                 uint64_t bn)                                  \
    {                                                                          \
        const IT *ai = ai_, *bi = bi_;                                         \
        uint64_t i = 0, j = 0, o = 0;                                          \
        while (i < an && j < bn) {                                             \
            IT x = ai[i], y = bi[j];                                           \
            i += x <= y;                                                       \
            j += y <= x;                                                       \
            o++;                                                               \
        }                                                                      \
        return o + (an - i) + (bn - j);                                        \
    }                                                                          \
    static void scatter_add_##NAME(void *d_, const void *ix_, const void *v_,  \
                                   uint64_t n, int left)                       \
    {                                                                          \
        VT *d = d_;                                                            \
        const IT *ix = ix_;                                                    \
        const VT *v = v_;                                                      \
        if (left)                                                              \
            for (uint64_t i = 0; i < n; i++) d[ix[i]] = (VT)(v[i] + d[ix[i]]); \
        else                                                                   \
            for (uint64_t i = 0; i < n; i++) d[ix[i]] = (VT)(d[ix[i]] + v[i]); \
    }                                                                          \
    static void dense_add_##NAME(void *d_, const void *s_, uint64_t n, int left) \
    {                                                                          \
        VT *d = d_;                                                            \
        const VT *s = s_;                                                      \
        if (left)                                                              \
            for (uint64_t i = 0; i < n; i++) d[i] = (VT)(s[i] + d[i]);         \
        else                                                                   \
            for (uint64_t i = 0; i < n; i++) d[i] = (VT)(d[i] + s[i]);         \
    }                                                                          \
    static void scatter_##NAME(void *d_, const void *ix_, const void *v_,      \
                               uint64_t n)                                     \
    {                                                                          \
        VT *d = d_;                                                            \
        const IT *ix = ix_;                                                    \
        const VT *v = v_;                                                      \
        for (uint64_t i = 0; i < n; i++) d[ix[i]] = v[i];                      \
    }

KERNELS(f32_i32, float, uint32_t, uint32_t, merge_add_f32)
KERNELS(f32_i64, float, uint64_t, uint32_t, merge_add_f32)
KERNELS(f64_i32, double, uint32_t, uint64_t, merge_add_f64)
KERNELS(f64_i64, double, uint64_t, uint64_t, merge_add_f64)
KERNELS(u32_i32, uint32_t, uint32_t, uint32_t, merge_add_u32)
KERNELS(u32_i64, uint32_t, uint64_t, uint32_t, merge_add_u32)
KERNELS(u64_i32, uint64_t, uint32_t, uint64_t, merge_add_u64)
KERNELS(u64_i64, uint64_t, uint64_t, uint64_t, merge_add_u64)

#define KTAB(NAME) {merge_##NAME, merge_scalar_##NAME, union_##NAME, scatter_add_##NAME, dense_add_##NAME, scatter_##NAME}
/* Indexed by [value type][index width == 8]. */
static const kernels kernel_table[5][2] = {
    [SPARCML_FLOAT] = {KTAB(f32_i32), KTAB(f32_i64)},
    [SPARCML_DOUBLE] = {KTAB(f64_i32), KTAB(f64_i64)},
    [SPARCML_INT32] = {KTAB(u32_i32), KTAB(u32_i64)},
    [SPARCML_INT64] = {KTAB(u64_i32), KTAB(u64_i64)},
};

static const kernels *kernels_for(int vtype, unsigned iw)
{
    return &kernel_table[vtype][iw == 8];
}

#ifdef STREAM_X86
/* merge_*_avx2: the merge advances by windows of 8 entries of each input.
 * With a7 and b7 the windows' last indices, the entries of the window of
 * a up to b7 and those of b up to a7 (na and nb, one of them 8) are the
 * next na + nb of the merge; counting them is all that one window waits
 * for from the one before, so windows overlap in the core where a
 * two-pointer merge waits on every entry.  A bitonic network sorts the 16
 * entries of both windows and the first na + nb go out.  Indices enter it
 * as 32-bit offsets from the windows' smallest index (as they are where
 * no index of either input reaches 2^28 and they have 4 bytes).  The
 * tagged network sorts 32-bit keys, offset << 4 | lane, and the values
 * follow the tags (vmerge_tagged, vmerge_follow8; offsets below 2^28);
 * windows spanning 2^28 or more take the keyed network, 64-bit keys with
 * 4-byte values in them and 8-byte ones beside them (vmerge_keyed);
 * windows spanning 2^32 or more take the scalar loop.
 * The choice is made once per merge where it can be (vmerge_mode).  An
 * index in both windows leaves the network in two adjacent lanes; with
 * 4-byte values the first gets the sum and the second is squeezed out
 * (vmerge_fold4), without a branch on whether a sum is due once sums are
 * frequent.  The tagged network puts a's entry first, so the sum is a + b
 * to the bit; the keyed one orders a pair by value, which decides the sum
 * only when both are NaN: such a window takes the scalar loop, as does one
 * of 8-byte values with a sum (folded in the tags, each value fetched for
 * both lanes of its pair, they measured slower than the portable merge:
 * 8-byte values move twice the dwords of 4-byte ones), and the rest of
 * the input the portable merge once such windows (or wide ones) are
 * frequent.  Two fast paths: windows with the same 8 indices are summed
 * lane by lane (identical indices), and a window that lies wholly below
 * the other is copied (long runs).  A window reads 8 entries of each input
 * and writes up to 16: VMERGE_ROOM entries left in each keep the stores
 * inside the union. */
#define VMERGE_ROOM 16
#define VMERGE_PROBE 64       /* windows between checks of the scalar share */
#define VMERGE_SCALAR_MAX 16  /* windows taking the scalar merge per probe before giving up */
/* Windows with a sum per probe that make the next fold always: with fewer,
 * a branch per window mispredicts less often than folding every window
 * costs (float merges with 1-5 % of the entries shared measured fastest
 * at 24-32). */
#define VMERGE_FOLD_MIN 24
/* What a window did, as counts that add up in one word over a probe's
 * windows (fewer than 256). */
enum { VMERGE_SCALAR = 1, VMERGE_SUMMED = 1 << 8 };

/* 8 values of a window: 4-byte ones in x[0], 8-byte ones in x[0..2). */
typedef struct vmerge_vals {
    __m256i x[2];
} vmerge_vals;

/* Compare-exchange of keys: *x gets the smaller of each lane, *y the
 * larger; with carry, the 8-byte values *vx and *vy beside them move as
 * their keys do.  The compare is signed; the indices' top bit is flipped
 * in the keys, so that it orders them as unsigned. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_cex(__m256i *x, __m256i *y, __m256i *vx,
                                                                            __m256i *vy, int carry)
{
    __m256d m = _mm256_castsi256_pd(_mm256_cmpgt_epi64(*x, *y));
    __m256d a = _mm256_castsi256_pd(*x), b = _mm256_castsi256_pd(*y);
    *x = _mm256_castpd_si256(_mm256_blendv_pd(a, b, m));
    *y = _mm256_castpd_si256(_mm256_blendv_pd(b, a, m));
    if (carry) {
        __m256d c = _mm256_castsi256_pd(*vx), d = _mm256_castsi256_pd(*vy);
        *vx = _mm256_castpd_si256(_mm256_blendv_pd(c, d, m));
        *vy = _mm256_castpd_si256(_mm256_blendv_pd(d, c, m));
    }
}

/* The last two levels of the network, on *x and *y (each a bitonic 4)
 * and their carried values: out each sorted, as *x = [x0 x1 y0 y1] and
 * *y = [x2 x3 y2 y3], the order from which vmerge_keyed's shuffles take
 * indices and values. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_sort_halves(__m256i *x, __m256i *y,
                                                                                    __m256i *vx, __m256i *vy,
                                                                                    int carry)
{
    __m256i t0 = _mm256_permute2x128_si256(*x, *y, 0x20), t1 = _mm256_permute2x128_si256(*x, *y, 0x31);
    __m256i w0 = _mm256_permute2x128_si256(*vx, *vy, 0x20), w1 = _mm256_permute2x128_si256(*vx, *vy, 0x31);
    vmerge_cex(&t0, &t1, &w0, &w1, carry);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t1), u1 = _mm256_unpackhi_epi64(t0, t1);
    __m256i z0 = _mm256_unpacklo_epi64(w0, w1), z1 = _mm256_unpackhi_epi64(w0, w1);
    vmerge_cex(&u0, &u1, &z0, &z1, carry);
    *x = _mm256_unpacklo_epi64(u0, u1);
    *y = _mm256_unpackhi_epi64(u0, u1);
    *vx = _mm256_unpacklo_epi64(z0, z1);
    *vy = _mm256_unpackhi_epi64(z0, z1);
}

/* The 8 keys of (index ^ 2^31, rider) pairs k, r, in the order of the
 * dword permutation `order` then unpacked: lo and hi get 4 keys each. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_keys(__m256i k, __m256i r, __m256i order,
                                                                             __m256i *lo, __m256i *hi)
{
    k = _mm256_permutevar8x32_epi32(_mm256_xor_si256(k, _mm256_set1_epi32(INT32_MIN)), order);
    r = _mm256_permutevar8x32_epi32(r, order);
    *lo = _mm256_unpacklo_epi32(r, k);
    *hi = _mm256_unpackhi_epi32(r, k);
}

/* The keyed network: windows of 32-bit offsets ka and kb and their values
 * va and vb into 16 sorted offsets ko[0..2) and values vo.  Each offset
 * is a 64-bit key; 4-byte values ride in the keys, below the offset
 * (vo[0..2)); 8-byte ones (carry) travel beside them in registers of their
 * own, through the same compare-exchanges and shuffles (vo[0..4)).  Of two
 * equal offsets it orders the entries by value, not by input. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_keyed(__m256i ka, __m256i kb, vmerge_vals va,
                                                                                vmerge_vals vb, int carry, __m256i *ko,
                                                                                __m256i *vo)
{
    const __m256i sign = _mm256_set1_epi32(INT32_MIN);
    __m256i ra = carry ? _mm256_setzero_si256() : va.x[0], rb = carry ? _mm256_setzero_si256() : vb.x[0];
    /* a ascending (r0: 0-3, r1: 4-7), b descending (r2: 7-4, r3: 3-0): bitonic */
    __m256i r0, r1, r2, r3, s0 = va.x[0], s1 = va.x[1];
    __m256i s2 = _mm256_permute4x64_epi64(vb.x[1], 0x1B), s3 = _mm256_permute4x64_epi64(vb.x[0], 0x1B);
    vmerge_keys(ka, ra, _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7), &r0, &r1);
    vmerge_keys(kb, rb, _mm256_setr_epi32(7, 6, 3, 2, 5, 4, 1, 0), &r2, &r3);
    vmerge_cex(&r0, &r2, &s0, &s2, carry);
    vmerge_cex(&r1, &r3, &s1, &s3, carry);
    vmerge_cex(&r0, &r1, &s0, &s1, carry);
    vmerge_cex(&r2, &r3, &s2, &s3, carry);
    vmerge_sort_halves(&r0, &r1, &s0, &s1, carry);
    vmerge_sort_halves(&r2, &r3, &s2, &s3, carry);
    ko[0] = _mm256_xor_si256(_mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(r0), _mm256_castsi256_ps(r1), 0xDD)), sign);
    ko[1] = _mm256_xor_si256(_mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(r2), _mm256_castsi256_ps(r3), 0xDD)), sign);
    if (carry) {
        vo[0] = _mm256_permute2x128_si256(s0, s1, 0x20);
        vo[1] = _mm256_permute2x128_si256(s0, s1, 0x31);
        vo[2] = _mm256_permute2x128_si256(s2, s3, 0x20);
        vo[3] = _mm256_permute2x128_si256(s2, s3, 0x31);
    } else {
        vo[0] = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(r0), _mm256_castsi256_ps(r1), 0x88));
        vo[1] = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(r2), _mm256_castsi256_ps(r3), 0x88));
    }
}

/* Windows with 4-byte values sort 32-bit tagged keys, offset << 4 | lane
 * (a's lanes 0-7, b's 8-15): unsigned minima and maxima of 8 lanes a step,
 * and an index in both windows leaves with a's entry first.  The values
 * follow the sorted tags afterwards.  Offsets span less than 2^28; wider
 * windows take the keyed network, the values riding in its keys. */
#define VMERGE_TAG_BITS 4
#define VMERGE_SPAN_TAGGED ((UINT64_C(1) << (32 - VMERGE_TAG_BITS)) - 1)
#define VMERGE_SPAN_KEYED ((uint64_t)UINT32_MAX)

/* How the windows of a merge of n entries with indices from lo to hi
 * take them, chosen once per merge: 4-byte indices of which none exceeds
 * the tagged span as they are (no base, no check per window); all windows
 * by the keyed network where 16 entries span more than a quarter of the
 * tagged span on average (many windows would exceed it: a branch per
 * window that mispredicts); else tagged, from the windows' base. */
enum { VMERGE_RAW, VMERGE_BASED, VMERGE_KEYED };
static inline int vmerge_mode(uint64_t lo, uint64_t hi, uint64_t n, unsigned iw)
{
    if (iw == 4 && hi <= VMERGE_SPAN_TAGGED) return VMERGE_RAW;
    return (hi - lo) / n > VMERGE_SPAN_TAGGED / 64 ? VMERGE_KEYED : VMERGE_BASED;
}

/* Bitonic merge of the ascending 8-lane keys a and b into lo (the 8
 * smallest) and hi, each ascending. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_sort_tagged(__m256i a, __m256i b, __m256i *lo,
                                                                                    __m256i *hi)
{
    b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0));
    __m256i l = _mm256_min_epu32(a, b), h = _mm256_max_epu32(a, b); /* each bitonic, l below h */
    /* distance 4: [l0-3 h0-3] against [l4-7 h4-7] */
    __m256i x = _mm256_permute2x128_si256(l, h, 0x20), y = _mm256_permute2x128_si256(l, h, 0x31);
    __m256i m = _mm256_min_epu32(x, y), n = _mm256_max_epu32(x, y);
    /* distance 2: each 128-bit lane's groups of 4 (m's, n's) */
    x = _mm256_unpacklo_epi64(m, n);
    y = _mm256_unpackhi_epi64(m, n);
    m = _mm256_min_epu32(x, y);
    n = _mm256_max_epu32(x, y);
    /* distance 1 */
    x = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(m), _mm256_castsi256_ps(n), 0x88));
    y = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(m), _mm256_castsi256_ps(n), 0xDD));
    m = _mm256_min_epu32(x, y);
    n = _mm256_max_epu32(x, y);
    /* back in order: lanes of l's 4 smallest, l's 4 largest, h's, h's */
    x = _mm256_unpacklo_epi32(m, n);
    y = _mm256_unpackhi_epi32(m, n);
    m = _mm256_unpacklo_epi64(x, y);
    n = _mm256_unpackhi_epi64(x, y);
    *lo = _mm256_permute2x128_si256(m, n, 0x20);
    *hi = _mm256_permute2x128_si256(m, n, 0x31);
}

/* The 16 tags of windows of offsets ka and kb (below 2^28), offset << 4
 * | a_tags (a's lanes; b's: the same plus 8), sorted into k[0..2) and
 * their offsets into ko[0..2); of an index in both windows, a's entry
 * comes first. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_sort_tags(__m256i ka, __m256i kb,
                                                                                  __m256i a_tags, __m256i *k,
                                                                                  __m256i *ko)
{
    ka = _mm256_or_si256(_mm256_slli_epi32(ka, VMERGE_TAG_BITS), a_tags);
    kb = _mm256_or_si256(_mm256_slli_epi32(kb, VMERGE_TAG_BITS), _mm256_add_epi32(a_tags, _mm256_set1_epi32(8)));
    vmerge_sort_tagged(ka, kb, &k[0], &k[1]);
    ko[0] = _mm256_srli_epi32(k[0], VMERGE_TAG_BITS);
    ko[1] = _mm256_srli_epi32(k[1], VMERGE_TAG_BITS);
}

/* The tagged network for 4-byte values: windows of 32-bit offsets ka and
 * kb (below 2^28) and their values va and vb into 16 sorted offsets
 * ko[0..2) and values vo[0..2). */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_tagged(__m256i ka, __m256i kb, vmerge_vals va,
                                                                                 vmerge_vals vb, __m256i *ko,
                                                                                 __m256i *vo)
{
    __m256i k[2];
    vmerge_sort_tags(ka, kb, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), k, ko);
    for (int h = 0; h < 2; h++) {
        /* the tag's low 3 bits pick the lane, its bit 3 (moved to the top) the window */
        __m256 from_a = _mm256_permutevar8x32_ps(_mm256_castsi256_ps(va.x[0]), k[h]);
        __m256 from_b = _mm256_permutevar8x32_ps(_mm256_castsi256_ps(vb.x[0]), k[h]);
        __m256 of_b = _mm256_castsi256_ps(_mm256_slli_epi32(k[h], 32 - VMERGE_TAG_BITS));
        vo[h] = _mm256_castps_si256(_mm256_blendv_ps(from_a, from_b, of_b));
    }
}

/* Row m: the lanes whose bit is set in m, in order, as nibbles from the
 * lowest (nibble k: the k-th lane kept), for _mm256_permutevar8x32_epi32,
 * which reads the low 3 bits of each lane's nibble shifted down. */
#define VMERGE_BITS_BELOW(m, i) (__builtin_popcount((unsigned)(m) & ((1u << (i)) - 1)))
#define VMERGE_LANE(m, i) (((m) >> (i) & 1) ? (uint32_t)(i) << (4 * VMERGE_BITS_BELOW(m, i)) : 0u)
#define VMERGE_PACK(m)                                                                                  \
    (VMERGE_LANE(m, 0) | VMERGE_LANE(m, 1) | VMERGE_LANE(m, 2) | VMERGE_LANE(m, 3) | VMERGE_LANE(m, 4) \
     | VMERGE_LANE(m, 5) | VMERGE_LANE(m, 6) | VMERGE_LANE(m, 7))
#define VMERGE_PACK4(m) VMERGE_PACK(m), VMERGE_PACK(m + 1), VMERGE_PACK(m + 2), VMERGE_PACK(m + 3)
#define VMERGE_PACK16(m) VMERGE_PACK4(m), VMERGE_PACK4(m + 4), VMERGE_PACK4(m + 8), VMERGE_PACK4(m + 12)
#define VMERGE_PACK64(m) VMERGE_PACK16(m), VMERGE_PACK16(m + 16), VMERGE_PACK16(m + 32), VMERGE_PACK16(m + 48)
static const uint32_t vmerge_kept_lanes[256] = {VMERGE_PACK64(0), VMERGE_PACK64(64), VMERGE_PACK64(128),
                                                VMERGE_PACK64(192)};

/* The lanes of x whose bit is set in the 8-bit `keep`, moved to the front. */
__attribute__((target("avx2"), always_inline)) static inline __m256i vmerge_compact(__m256i x, unsigned keep)
{
    __m256i order = _mm256_srlv_epi32(_mm256_set1_epi32((int)vmerge_kept_lanes[keep]),
                                      _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
    return _mm256_permutevar8x32_epi32(x, order);
}

/* Lane t of the result: lane t + 1 of the 16 in x[0..2) (lane 15: any). */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_next(const __m256i *x, __m256i *n)
{
    const __m256i next = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 7);
    n[0] = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(x[0], next),
                              _mm256_permutevar8x32_epi32(x[1], _mm256_setzero_si256()), 0x80);
    n[1] = _mm256_permutevar8x32_epi32(x[1], next);
}

/* All lanes whose bit is set in the 8-bit m. */
__attribute__((target("avx2"), always_inline)) static inline __m256i vmerge_lanes_of(unsigned m)
{
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)m), bit), bit);
}

static inline uint64_t vmerge_min(uint64_t x, uint64_t y) { return x < y ? x : y; }
static inline uint64_t vmerge_max(uint64_t x, uint64_t y) { return x > y ? x : y; }

/* Which of the 16 sorted entries a window keeps: all but lane t + 1 of
 * each pair of lanes t, t + 1 that hold one index (bit t of `pairs`). */
static inline unsigned vmerge_keep(unsigned pairs) { return ~(pairs << 1) & 0xffff; }

/* Bits of the lanes where x and y are both NaN. */
__attribute__((target("avx2"), always_inline)) static inline unsigned vmerge_nans(__m256i x, __m256i y)
{
    __m256 a = _mm256_castsi256_ps(x), b = _mm256_castsi256_ps(y);
    __m256 both = _mm256_and_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q), _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
    return (unsigned)_mm256_movemask_ps(both);
}

/* Whether a pair of the 16 values vo (bit t of `pairs`: lanes t and
 * t + 1) holds two NaNs (fp: floats): its sum would depend on which is
 * a's, which the keyed network does not keep. */
__attribute__((target("avx2"), always_inline)) static inline int vmerge_nan_pairs(const __m256i *vo, unsigned pairs,
                                                                                 int fp)
{
    __m256i nv[2];
    if (!fp) return 0;
    vmerge_next(vo, nv);
    return ((vmerge_nans(vo[0], nv[0]) | vmerge_nans(vo[1], nv[1]) << 8) & pairs) != 0;
}

/* One half of the 4-byte values v and the next lanes' n: the sums v + n
 * (v the first operand: see merge_add_f32) where `pairs` (8 bits) says,
 * then the lanes `keep` says to the front. */
__attribute__((target("avx2"), always_inline)) static inline __m256i vmerge_fold_lanes(__m256i v, __m256i n,
                                                                                      unsigned pairs, unsigned keep,
                                                                                      int fp)
{
    __m256i sum = v;
    if (fp) __asm__("vaddps %1, %0, %0" : "+x"(sum) : "x"(n));
    else sum = _mm256_add_epi32(v, n);
    return vmerge_compact(_mm256_blendv_epi8(v, sum, vmerge_lanes_of(pairs)), keep);
}

/* Sums of an index in both windows, for 4-byte values (fp: floats): the
 * 16 sorted entries (ko, vo) hold each such index in two adjacent lanes t
 * and t + 1 (bit t of `pairs`).  Lane t gets the sum and lane t + 1 goes:
 * the kept lanes (vmerge_keep) of each half move to its front, where
 * vmerge_put4 expects them; with no pairs, nothing moves.  From the tagged
 * network lane t is a's, so the sum is a + b as the scalar merge adds it,
 * to the bit (x86 keeps the first operand's payload of two NaNs); from the
 * keyed one it is too unless both are NaN (vmerge_nan_pairs). */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_fold4(__m256i *ko, __m256i *vo, unsigned pairs,
                                                                              int fp)
{
    __m256i nv[2];
    unsigned keep = vmerge_keep(pairs);
    vmerge_next(vo, nv);
    vo[0] = vmerge_fold_lanes(vo[0], nv[0], pairs & 0xff, keep & 0xff, fp);
    vo[1] = vmerge_fold_lanes(vo[1], nv[1], pairs >> 8, keep >> 8, fp);
    ko[0] = vmerge_compact(ko[0], keep & 0xff);
    ko[1] = vmerge_compact(ko[1], keep >> 8);
}

/* 8-byte values in the tagged network.  A window's 8 values split into
 * a plane of their low dwords and one of their high dwords (one shuffle
 * each, which puts value d at dword d with its bits 1 and 2 swapped: those
 * are a's tags, VMERGE_TAGS8, so a tag's low 3 bits pick its dword); a
 * tag's value is then two dword permutations and a blend per plane, as a
 * 4-byte value's, interleaved back. */
#define VMERGE_TAGS8 _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7)

/* planes[0..4): a's low and high dwords, b's low and high dwords. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_planes8(vmerge_vals va, vmerge_vals vb,
                                                                                __m256 *planes)
{
    __m256 a0 = _mm256_castsi256_ps(va.x[0]), a1 = _mm256_castsi256_ps(va.x[1]);
    __m256 b0 = _mm256_castsi256_ps(vb.x[0]), b1 = _mm256_castsi256_ps(vb.x[1]);
    planes[0] = _mm256_shuffle_ps(a0, a1, 0x88);
    planes[1] = _mm256_shuffle_ps(a0, a1, 0xDD);
    planes[2] = _mm256_shuffle_ps(b0, b1, 0x88);
    planes[3] = _mm256_shuffle_ps(b0, b1, 0xDD);
}

/* The values of the 8 tags t, in order, to out[0..2).  The tags are taken
 * in the order in which unpacking the planes' picks puts values back. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_follow8(__m256i t, const __m256 *planes,
                                                                                __m256i *out)
{
    __m256i u = _mm256_permutevar8x32_epi32(t, VMERGE_TAGS8);
    __m256 of_b = _mm256_castsi256_ps(_mm256_slli_epi32(u, 32 - VMERGE_TAG_BITS));
    __m256 lo = _mm256_blendv_ps(_mm256_permutevar8x32_ps(planes[0], u), _mm256_permutevar8x32_ps(planes[2], u), of_b);
    __m256 hi = _mm256_blendv_ps(_mm256_permutevar8x32_ps(planes[1], u), _mm256_permutevar8x32_ps(planes[3], u), of_b);
    out[0] = _mm256_castps_si256(_mm256_unpacklo_ps(lo, hi));
    out[1] = _mm256_castps_si256(_mm256_unpackhi_ps(lo, hi));
}

/* Bit t: lane t of the 16 sorted indices equals lane t + 1, both among
 * the first `count` (the entries the window takes). */
__attribute__((target("avx2"))) static inline unsigned vmerge_repeats(const __m256i *ko, uint64_t count)
{
    __m256i n[2];
    vmerge_next(ko, n);
    unsigned e0 = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(ko[0], n[0])));
    unsigned e1 = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(ko[1], n[1])));
    return (e0 | (e1 & 0x7f) << 8) & ((1u << (count - 1)) - 1);
}

__attribute__((target("avx2"), always_inline)) static inline vmerge_vals vmerge_load4(const void *p)
{
    vmerge_vals v = {{_mm256_loadu_si256((const __m256i *)p), _mm256_setzero_si256()}};
    return v;
}

__attribute__((target("avx2"), always_inline)) static inline vmerge_vals vmerge_load8(const void *p)
{
    vmerge_vals v = {{_mm256_loadu_si256((const __m256i *)p), _mm256_loadu_si256((const __m256i *)p + 1)}};
    return v;
}

__attribute__((target("avx2"), always_inline)) static inline void vmerge_store4(void *out, vmerge_vals v)
{
    _mm256_storeu_si256((__m256i *)out, v.x[0]);
}

__attribute__((target("avx2"), always_inline)) static inline void vmerge_store8(void *out, vmerge_vals v)
{
    _mm256_storeu_si256((__m256i *)out, v.x[0]);
    _mm256_storeu_si256((__m256i *)out + 1, v.x[1]);
}

/* a + b lane by lane, a the first operand (written in assembly: the
 * compiler may swap the operands of an addition, and x86 returns the first
 * operand's NaN when both are NaN). */
__attribute__((target("avx2"), always_inline)) static inline vmerge_vals vmerge_add_f32(vmerge_vals a, vmerge_vals b)
{
    __asm__("vaddps %1, %0, %0" : "+x"(a.x[0]) : "x"(b.x[0]));
    return a;
}

__attribute__((target("avx2"), always_inline)) static inline vmerge_vals vmerge_add_f64(vmerge_vals a, vmerge_vals b)
{
    __asm__("vaddpd %1, %0, %0" : "+x"(a.x[0]) : "x"(b.x[0]));
    __asm__("vaddpd %1, %0, %0" : "+x"(a.x[1]) : "x"(b.x[1]));
    return a;
}

__attribute__((target("avx2"), always_inline)) static inline vmerge_vals vmerge_add_u32(vmerge_vals a, vmerge_vals b)
{
    a.x[0] = _mm256_add_epi32(a.x[0], b.x[0]);
    return a;
}

__attribute__((target("avx2"), always_inline)) static inline vmerge_vals vmerge_add_u64(vmerge_vals a, vmerge_vals b)
{
    a.x[0] = _mm256_add_epi64(a.x[0], b.x[0]);
    a.x[1] = _mm256_add_epi64(a.x[1], b.x[1]);
    return a;
}

/* The indices of a window: 4-byte ones in x[0], 8-byte ones in
 * x[0..2) (vmerge_vals, loaded and stored by the same functions). */

/* Number of the 8 indices in k that are <= *bound. */
__attribute__((target("avx2"), always_inline)) static inline uint64_t vmerge_count_le4(vmerge_vals k, const void *bound)
{
    __m256i b = _mm256_castps_si256(_mm256_broadcast_ss((const float *)bound));
    __m256i le = _mm256_cmpeq_epi32(_mm256_max_epu32(k.x[0], b), b);
    return (uint64_t)__builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(le)));
}

/* 8-byte indices stay below SPARCML_MAX_DIM (2^56): signed compares order them. */
__attribute__((target("avx2"), always_inline)) static inline uint64_t vmerge_count_le8(vmerge_vals k, const void *bound)
{
    _Static_assert(SPARCML_MAX_DIM <= (UINT64_C(1) << 63), "8-byte indices compare as signed");
    uint64_t u;
    memcpy(&u, bound, 8);
    __m256i b = _mm256_set1_epi64x((long long)u);
    __m256i g0 = _mm256_cmpgt_epi64(k.x[0], b);
    __m256i g1 = _mm256_cmpgt_epi64(k.x[1], b);
    unsigned gt = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(g0))
                  | (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(g1)) << 4;
    return 8 - (uint64_t)__builtin_popcount(gt);
}

/* Whether the windows hold the same 8 indices. */
__attribute__((target("avx2"), always_inline)) static inline int vmerge_same4(vmerge_vals a, vmerge_vals b)
{
    return _mm256_movemask_epi8(_mm256_cmpeq_epi32(a.x[0], b.x[0])) == -1;
}

__attribute__((target("avx2"), always_inline)) static inline int vmerge_same8(vmerge_vals a, vmerge_vals b)
{
    __m256i e = _mm256_and_si256(_mm256_cmpeq_epi64(a.x[0], b.x[0]), _mm256_cmpeq_epi64(a.x[1], b.x[1]));
    return _mm256_movemask_epi8(e) == -1;
}

/* The windows' indices as 32-bit offsets from *base, the smaller of their
 * first indices, for the network; false when the largest offset exceeds
 * `span` (VMERGE_SPAN_TAGGED or VMERGE_SPAN_KEYED, the network's). */
__attribute__((target("avx2"), always_inline)) static inline int vmerge_offsets4(const void *ai_, const void *bi_,
                                                                                vmerge_vals ka, vmerge_vals kb,
                                                                                uint64_t span, __m256i *ra,
                                                                                __m256i *rb, uint64_t *base)
{
    const uint32_t *ai = ai_, *bi = bi_;
    if (span >= UINT32_MAX) { /* any two 32-bit indices fit: no base */
        *ra = ka.x[0];
        *rb = kb.x[0];
        *base = 0;
        return 1;
    }
    uint32_t lo = ai[0] < bi[0] ? ai[0] : bi[0], hi = ai[7] > bi[7] ? ai[7] : bi[7];
    if (hi - lo > span) return 0;
    __m256i b = _mm256_set1_epi32((int)lo);
    *ra = _mm256_sub_epi32(ka.x[0], b);
    *rb = _mm256_sub_epi32(kb.x[0], b);
    *base = lo;
    return 1;
}

__attribute__((target("avx2"), always_inline)) static inline __m256i vmerge_low_halves(vmerge_vals k, __m256i base)
{
    const __m256i low = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    __m256i x = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(k.x[0], low),
                                   _mm256_permutevar8x32_epi32(k.x[1], low), 0xF0);
    return _mm256_sub_epi32(x, base);
}

__attribute__((target("avx2"), always_inline)) static inline int vmerge_offsets8(const void *ai_, const void *bi_,
                                                                                vmerge_vals ka, vmerge_vals kb,
                                                                                uint64_t span, __m256i *ra,
                                                                                __m256i *rb, uint64_t *base)
{
    const uint64_t *ai = ai_, *bi = bi_;
    uint64_t lo = ai[0] < bi[0] ? ai[0] : bi[0], hi = ai[7] > bi[7] ? ai[7] : bi[7];
    if (hi - lo > span) return 0;
    __m256i b = _mm256_set1_epi32((int)(uint32_t)lo);
    *ra = vmerge_low_halves(ka, b);
    *rb = vmerge_low_halves(kb, b);
    *base = lo;
    return 1;
}


/* The 16 sorted values vo to out, the lanes of each half that `keep`
 * (vmerge_keep) has at its front, in order: a store of a whole register
 * each, the second overwriting what lies beyond the first's kept lanes. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_put4(void *out, const __m256i *vo,
                                                                             unsigned keep)
{
    _mm256_storeu_si256((__m256i *)out, vo[0]);
    _mm256_storeu_si256((__m256i *)((uint32_t *)out + __builtin_popcount(keep & 0xff)), vo[1]);
}

/* 8-byte values are never folded: keep is 0xffff.  Four stores written
 * out: GCC keeps vo on the stack for a loop over it. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_put8(void *out, const __m256i *vo,
                                                                             unsigned keep)
{
    (void)keep;
    _mm256_storeu_si256((__m256i *)out, vo[0]);
    _mm256_storeu_si256((__m256i *)out + 1, vo[1]);
    _mm256_storeu_si256((__m256i *)out + 2, vo[2]);
    _mm256_storeu_si256((__m256i *)out + 3, vo[3]);
}

/* The 16 sorted offsets ko[0..2) plus base as indices to out, as
 * vmerge_put4. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_put_indices4(void *out, const __m256i *ko,
                                                                                     uint64_t base, unsigned keep)
{
    __m256i b = _mm256_set1_epi32((int)(uint32_t)base), x[2] = {_mm256_add_epi32(ko[0], b), _mm256_add_epi32(ko[1], b)};
    vmerge_put4(out, x, keep);
}

__attribute__((target("avx2"), always_inline)) static inline void vmerge_put_indices8(void *out, const __m256i *ko,
                                                                                     uint64_t base, unsigned keep)
{
    __m256i b = _mm256_set1_epi64x((long long)base);
    __m256i *first = out, *second = (__m256i *)((uint64_t *)out + __builtin_popcount(keep & 0xff));
    _mm256_storeu_si256(first, _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm256_castsi256_si128(ko[0])), b));
    _mm256_storeu_si256(first + 1, _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm256_extracti128_si256(ko[0], 1)), b));
    _mm256_storeu_si256(second, _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm256_castsi256_si128(ko[1])), b));
    _mm256_storeu_si256(second + 1, _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm256_extracti128_si256(ko[1], 1)), b));
}

#define VMERGE_KERNELS(NAME, VT, IT, VW, IW, ADD, FP)                          \
    /* Where a window merge stands: the next entries of a, b and out.  */  \
    typedef struct vmerge_cursor_##NAME {                                      \
        const IT *ai, *bi;                                                     \
        const VT *av, *bv;                                                     \
        IT *oi;                                                                \
        VT *ov;                                                                \
    } vmerge_cursor_##NAME;                                                    \
    /* The next na and nb entries at c by the scalar merge.  */             \
    __attribute__((target("avx2"))) static inline void                        \
    vmerge_scalar_##NAME(vmerge_cursor_##NAME *c, uint64_t na, uint64_t nb)    \
    {                                                                          \
        _mm256_zeroupper(); /* see stream_lines */                             \
        uint64_t n = merge_scalar_##NAME(c->ai, c->av, na, c->bi, c->bv, nb,   \
                                         c->oi, c->ov);                        \
        c->oi += n;                                                            \
        c->ov += n;                                                            \
    }                                                                          \
    /* The windows at c by the tagged network for 8-byte values, their     \
     * offsets ra and rb from base: as vmerge_mixed. */                     \
    __attribute__((target("avx2"), always_inline)) static inline unsigned     \
    vmerge_tagged8_##NAME(vmerge_cursor_##NAME *c, __m256i ra, __m256i rb,     \
                          vmerge_vals va, vmerge_vals vb, uint64_t na,         \
                          uint64_t nb, uint64_t base)                          \
    {                                                                          \
        __m256i k[2], ko[2], vo[4];                                            \
        __m256 planes[4];                                                      \
        vmerge_sort_tags(ra, rb, VMERGE_TAGS8, k, ko);                         \
        if (vmerge_repeats(ko, na + nb)) {                                     \
            vmerge_scalar_##NAME(c, na, nb);                                   \
            return VMERGE_SCALAR;                                              \
        }                                                                      \
        vmerge_planes8(va, vb, planes);                                        \
        vmerge_follow8(k[0], planes, vo);                                      \
        vmerge_follow8(k[1], planes, vo + 2);                                  \
        vmerge_put_indices##IW(c->oi, ko, base, 0xffff);                        \
        vmerge_put8(c->ov, vo, 0xffff);                                        \
        c->oi += na + nb;                                                      \
        c->ov += na + nb;                                                      \
        return 0;                                                              \
    }                                                                          \
    /* The windows at c when neither lies below the other: the network, or \
     * the scalar merge when a sum is not folded (FOLD) or the indices span \
     * more than 32 bits.  With `fold`, FOLD runs whether or not a sum is  \
     * due (no branch on it).  Returns VMERGE_SCALAR, VMERGE_SUMMED or 0. */ \
    __attribute__((target("avx2"), always_inline)) static inline unsigned     \
    vmerge_mixed_##NAME(vmerge_cursor_##NAME *c, vmerge_vals ka, vmerge_vals va, \
                        vmerge_vals kb, vmerge_vals vb, uint64_t na, uint64_t nb, \
                        int fold, int mode)                                    \
    {                                                                          \
        __m256i ra, rb, ko[2], vo[4];                                          \
        uint64_t base;                                                         \
        /* The tagged network unless the offsets span too much for the     \
         * tags (vmerge_mode).  Raw windows ask for the keyed span: 32-bit  \
         * indices take it as they are, and the merge has seen that all    \
         * are below 2^28. */                                                \
        int keyed = mode == VMERGE_KEYED                                       \
                    || !vmerge_offsets##IW(c->ai, c->bi, ka, kb,               \
                                           mode == VMERGE_RAW ? VMERGE_SPAN_KEYED \
                                                              : VMERGE_SPAN_TAGGED, \
                                           &ra, &rb, &base);                   \
        if (keyed && !vmerge_offsets##IW(c->ai, c->bi, ka, kb, VMERGE_SPAN_KEYED, \
                                         &ra, &rb, &base)) {                   \
            vmerge_scalar_##NAME(c, na, nb);                                   \
            return VMERGE_SCALAR;                                              \
        }                                                                      \
        if (VW == 8 && !keyed)                                                 \
            return vmerge_tagged8_##NAME(c, ra, rb, va, vb, na, nb, base);     \
        if (keyed)                                                             \
            vmerge_keyed(ra, rb, va, vb, VW == 8, ko, vo);                     \
        else                                                                   \
            vmerge_tagged(ra, rb, va, vb, ko, vo);                             \
        unsigned pairs = vmerge_repeats(ko, na + nb);                          \
        if (VW == 4 && (fold || pairs) && !(keyed && vmerge_nan_pairs(vo, pairs, FP))) { \
            vmerge_fold4(ko, vo, pairs, FP);                                   \
            vmerge_put_indices##IW(c->oi, ko, base, vmerge_keep(pairs));        \
            vmerge_put##VW(c->ov, vo, vmerge_keep(pairs));                     \
        } else if (!pairs) { /* the stores' offsets are constants */           \
            vmerge_put_indices##IW(c->oi, ko, base, 0xffff);                    \
            vmerge_put##VW(c->ov, vo, 0xffff);                                 \
        } else { /* a sum keyed: of 8-byte values, or of two NaNs */           \
            vmerge_scalar_##NAME(c, na, nb);                                   \
            return VMERGE_SCALAR;                                              \
        }                                                                      \
        c->oi += na + nb - (uint64_t)__builtin_popcount(pairs);                \
        c->ov += na + nb - (uint64_t)__builtin_popcount(pairs);                \
        return pairs ? VMERGE_SUMMED : 0;                                      \
    }                                                                          \
    /* One window at c, folding as vmerge_mixed; returns what it did.  */   \
    __attribute__((target("avx2"), always_inline)) static inline unsigned     \
    vmerge_window_##NAME(vmerge_cursor_##NAME *c, int fold, int mode)          \
    {                                                                          \
        vmerge_vals ka = vmerge_load##IW(c->ai), kb = vmerge_load##IW(c->bi);  \
        vmerge_vals va = vmerge_load##VW(c->av), vb = vmerge_load##VW(c->bv);  \
        uint64_t na = vmerge_count_le##IW(ka, c->bi + 7);                      \
        uint64_t nb = vmerge_count_le##IW(kb, c->ai + 7);                      \
        unsigned did = 0;                                                      \
        /* The fast paths advance by constants: no wait for the counts.  */ \
        if (vmerge_same##IW(ka, kb)) {                                         \
            vmerge_store##IW(c->oi, ka);                                       \
            vmerge_store##VW(c->ov, ADD(va, vb));                               \
            na = nb = 8;                                                       \
            c->oi += 8;                                                        \
            c->ov += 8;                                                        \
        } else if (nb == 0) {                                                  \
            vmerge_store##IW(c->oi, ka);                                       \
            vmerge_store##VW(c->ov, va);                                        \
            na = 8;                                                            \
            c->oi += 8;                                                        \
            c->ov += 8;                                                        \
        } else if (na == 0) {                                                  \
            vmerge_store##IW(c->oi, kb);                                       \
            vmerge_store##VW(c->ov, vb);                                        \
            nb = 8;                                                            \
            c->oi += 8;                                                        \
            c->ov += 8;                                                        \
        } else {                                                               \
            did = vmerge_mixed_##NAME(c, ka, va, kb, vb, na, nb, fold, mode);  \
        }                                                                      \
        c->ai += na;                                                           \
        c->av += na;                                                           \
        c->bi += nb;                                                           \
        c->bv += nb;                                                           \
        return did;                                                            \
    }                                                                          \
    /* Windows at c while there is room before aend and bend and the     \
     * scalar merge is rarely due.  Each probe decides whether the next    \
     * windows fold without a branch (sums frequent: the branch would      \
     * mispredict).  */                                                    \
    __attribute__((target("avx2"), always_inline)) static inline void         \
    vmerge_windows_##NAME(vmerge_cursor_##NAME *cp, const IT *aend,            \
                          const IT *bend, int mode)                            \
    {                                                                          \
        vmerge_cursor_##NAME c = *cp; /* in registers */                        \
        unsigned tally = 0, windows = 0;                                       \
        int fold = 0;                                                          \
        for (;;) {                                                             \
            /* windows that each take at most 8 of an input and leave it  \
             * VMERGE_ROOM, up to the next probe: no checks between them */ \
            uint64_t left = vmerge_min(aend - c.ai, bend - c.bi);             \
            if (left < VMERGE_ROOM) break;                                     \
            unsigned n = (unsigned)vmerge_min((left - VMERGE_ROOM) / 8 + 1,    \
                                              VMERGE_PROBE - windows);         \
            windows += n;                                                      \
            while (n--) tally += vmerge_window_##NAME(&c, fold, mode);         \
            if (windows < VMERGE_PROBE) continue;                              \
            if ((tally & 0xff) > VMERGE_SCALAR_MAX) break;                     \
            fold = tally >> 8 > VMERGE_FOLD_MIN;                               \
            tally = windows = 0;                                               \
        }                                                                      \
        *cp = c;                                                               \
    }                                                                          \
    /* The windows, each mode of vmerge_mode a loop of its own, the rest \
     * by `rest`.  */                                                      \
    __attribute__((target("avx2"))) static uint64_t vmerge_##NAME(            \
        const void *ai, const void *av, uint64_t an, const void *bi,           \
        const void *bv, uint64_t bn, void *oi, void *ov, merge_fn rest)        \
    {                                                                          \
        vmerge_cursor_##NAME c = {.ai = ai, .bi = bi, .av = av, .bv = bv,      \
                                  .oi = oi, .ov = ov};                         \
        const IT *aend = c.ai + an, *bend = c.bi + bn;                         \
        int mode = an && bn ? vmerge_mode(vmerge_min(c.ai[0], c.bi[0]),        \
                                          vmerge_max(aend[-1], bend[-1]),      \
                                          an + bn, IW)                         \
                            : VMERGE_KEYED; /* no windows run */               \
        if (mode == VMERGE_RAW)                                                \
            vmerge_windows_##NAME(&c, aend, bend, VMERGE_RAW);                 \
        else if (mode == VMERGE_BASED)                                         \
            vmerge_windows_##NAME(&c, aend, bend, VMERGE_BASED);               \
        else                                                                   \
            vmerge_windows_##NAME(&c, aend, bend, VMERGE_KEYED);               \
        _mm256_zeroupper(); /* see stream_lines */                             \
        return (uint64_t)(c.oi - (IT *)oi)                                     \
               + rest(c.ai, c.av, (uint64_t)(aend - c.ai), c.bi, c.bv,         \
                      (uint64_t)(bend - c.bi), c.oi, c.ov);                    \
    }                                                                          \
    static uint64_t merge_##NAME##_avx2(const void *ai, const void *av,        \
                                        uint64_t an, const void *bi,           \
                                        const void *bv, uint64_t bn, void *oi, \
                                        void *ov)                              \
    {                                                                          \
        return vmerge_##NAME(ai, av, an, bi, bv, bn, oi, ov, merge_##NAME);    \
    }                                                                          \
    static uint64_t merge_exact_##NAME##_avx2(const void *ai, const void *av,  \
                                              uint64_t an, const void *bi,     \
                                              const void *bv, uint64_t bn,     \
                                              void *oi, void *ov)              \
    {                                                                          \
        return vmerge_##NAME(ai, av, an, bi, bv, bn, oi, ov, merge_scalar_##NAME); \
    }

VMERGE_KERNELS(f32_i32, float, uint32_t, 4, 4, vmerge_add_f32, 1)
VMERGE_KERNELS(f32_i64, float, uint64_t, 4, 8, vmerge_add_f32, 1)
VMERGE_KERNELS(f64_i32, double, uint32_t, 8, 4, vmerge_add_f64, 1)
VMERGE_KERNELS(f64_i64, double, uint64_t, 8, 8, vmerge_add_f64, 1)
VMERGE_KERNELS(u32_i32, uint32_t, uint32_t, 4, 4, vmerge_add_u32, 0)
VMERGE_KERNELS(u32_i64, uint32_t, uint64_t, 4, 8, vmerge_add_u32, 0)
VMERGE_KERNELS(u64_i32, uint64_t, uint32_t, 8, 4, vmerge_add_u64, 0)
VMERGE_KERNELS(u64_i64, uint64_t, uint64_t, 8, 8, vmerge_add_u64, 0)

typedef struct vmerge {
    merge_fn merge, merge_exact;
} vmerge;

#define VTAB(NAME) {merge_##NAME##_avx2, merge_exact_##NAME##_avx2}
/* Indexed by [value type][index width == 8], as kernel_table. */
static const vmerge vmerge_table[5][2] = {
    [SPARCML_FLOAT] = {VTAB(f32_i32), VTAB(f32_i64)},
    [SPARCML_DOUBLE] = {VTAB(f64_i32), VTAB(f64_i64)},
    [SPARCML_INT32] = {VTAB(u32_i32), VTAB(u32_i64)},
    [SPARCML_INT64] = {VTAB(u64_i32), VTAB(u64_i64)},
};
#endif

/* ---------------------------------------------- dense vectors: the sweeps */

/* Transparent mode reads the application's dense buffer once (the gather
 * below counts and collects its nonzeros in the same pass) and writes the
 * dense result once (the densify sweep).  Where the CPU has AVX2 the
 * gather tests 128 bytes a step and large results are written with
 * streaming stores; the portable loops compute the same bytes. */

/* Where the gather is: the next element to read and the next entry to write. */
typedef struct gather_cursor {
    uint64_t i, o;
} gather_cursor;

typedef void (*gather_fn)(const void *x, uint64_t n, uint64_t cap, void *oi, void *ov, gather_cursor *c);
/* Store the values of entries k.. whose index is below end into blk, which
 * holds the elements from lo on; returns the first entry not stored.
 * unplace zeroes again what entries [k0, k) stored. */
typedef uint64_t (*place_fn)(void *blk, uint64_t lo, uint64_t end, const void *ix, const void *v, uint64_t k,
                             uint64_t n);
typedef void (*unplace_fn)(void *blk, uint64_t lo, const void *ix, uint64_t k0, uint64_t k);

/* gather: x != 0 is C's test (NaN and Inf are nonzeros, -0.0 is a zero, a
 * denormal is what the floating-point environment says, as in
 * stream_count_nonzero).  The portable loop tests GATHER_SPAN elements at
 * once (the compiler vectorises the test), so a span of zeros costs one
 * branch; a span that holds a nonzero is stored GATHER_GROUP elements at a
 * time, each at the output cursor, which advances past nonzeros only
 * (branch-free: no mispredict per nonzero).  A span needs that much room
 * left below cap.  It stops at cap entries or at n. */
#define GATHER_SPAN 32
#define GATHER_GROUP 8
#define DENSE_VECTOR_KERNELS(NAME, VT, IT)                                      \
    static void gather_##NAME(const void *x_, uint64_t n, uint64_t cap, void *oi_, \
                              void *ov_, gather_cursor *c)                      \
    {                                                                           \
        const VT *x = x_;                                                       \
        IT *oi = oi_;                                                           \
        VT *ov = ov_;                                                           \
        uint64_t i = c->i, o = c->o;                                            \
        for (; n - i >= GATHER_SPAN && cap - o >= GATHER_SPAN; i += GATHER_SPAN) { \
            int any = 0;                                                        \
            for (int j = 0; j < GATHER_SPAN; j++) any |= x[i + j] != 0;         \
            if (!any) continue;                                                 \
            for (uint64_t g = i; g < i + GATHER_SPAN; g += GATHER_GROUP) {      \
                any = 0;                                                        \
                for (int j = 0; j < GATHER_GROUP; j++) any |= x[g + j] != 0;    \
                for (int j = 0; any && j < GATHER_GROUP; j++) {                 \
                    oi[o] = (IT)(g + (uint64_t)j);                              \
                    ov[o] = x[g + j];                                           \
                    o += x[g + j] != 0;                                         \
                }                                                               \
            }                                                                   \
        }                                                                       \
        for (; i < n && o < cap; i++)                                           \
            if (x[i] != 0) {                                                    \
                oi[o] = (IT)i;                                                  \
                ov[o++] = x[i];                                                 \
            }                                                                   \
        c->i = i;                                                               \
        c->o = o;                                                               \
    }                                                                           \
    static uint64_t place_##NAME(void *blk, uint64_t lo, uint64_t end,          \
                                 const void *ix_, const void *v_, uint64_t k,   \
                                 uint64_t n)                                    \
    {                                                                           \
        VT *b = blk;                                                            \
        const IT *ix = ix_;                                                     \
        const VT *v = v_;                                                       \
        for (; k < n && ix[k] < end; k++) b[ix[k] - lo] = v[k];                 \
        return k;                                                               \
    }                                                                           \
    static void unplace_##NAME(void *blk, uint64_t lo, const void *ix_,         \
                               uint64_t k0, uint64_t k)                         \
    {                                                                           \
        VT *b = blk;                                                            \
        const IT *ix = ix_;                                                     \
        for (; k0 < k; k0++) b[ix[k0] - lo] = 0;                                \
    }

DENSE_VECTOR_KERNELS(f32_i32, float, uint32_t)
DENSE_VECTOR_KERNELS(f32_i64, float, uint64_t)
DENSE_VECTOR_KERNELS(f64_i32, double, uint32_t)
DENSE_VECTOR_KERNELS(f64_i64, double, uint64_t)
DENSE_VECTOR_KERNELS(u32_i32, uint32_t, uint32_t)
DENSE_VECTOR_KERNELS(u32_i64, uint32_t, uint64_t)
DENSE_VECTOR_KERNELS(u64_i32, uint64_t, uint32_t)
DENSE_VECTOR_KERNELS(u64_i64, uint64_t, uint64_t)

typedef struct placement {
    place_fn place;
    unplace_fn unplace;
} placement;

#define GTAB(NAME) gather_##NAME
#define PTAB(NAME) {place_##NAME, unplace_##NAME}
/* Indexed by [value type][index width == 8]. */
static const gather_fn gather_portable[5][2] = {
    [SPARCML_FLOAT] = {GTAB(f32_i32), GTAB(f32_i64)},
    [SPARCML_DOUBLE] = {GTAB(f64_i32), GTAB(f64_i64)},
    [SPARCML_INT32] = {GTAB(u32_i32), GTAB(u32_i64)},
    [SPARCML_INT64] = {GTAB(u64_i32), GTAB(u64_i64)},
};
static const placement placements[5][2] = {
    [SPARCML_FLOAT] = {PTAB(f32_i32), PTAB(f32_i64)},
    [SPARCML_DOUBLE] = {PTAB(f64_i32), PTAB(f64_i64)},
    [SPARCML_INT32] = {PTAB(u32_i32), PTAB(u32_i64)},
    [SPARCML_INT64] = {PTAB(u64_i32), PTAB(u64_i64)},
};

/* densify: the result is written one block of DENSIFY_BLOCK bytes (in L1)
 * at a time, so its memory is written in one sweep, each line once.  Two
 * ways, measured (bench/kernel_bench --scan, "densify" rows):
 *  - portable: zero the block in place and store its values (the values'
 *    elements are written twice, within L1).  Zeroing each gap between
 *    the sorted indices instead writes every element once, but the gaps'
 *    varying lengths mispredict a branch per entry: 2.5-2.8x the block's
 *    time at density 0.1 and 7x at 0.4 (16M floats).  Where one memset of
 *    the whole result is much faster than memsets of blocks (zeros at 72
 *    against about 25 GB/s on the 2-core machine of bench/results), the
 *    blocks take 2.7-3.9x a zero fill and a scatter at density 1e-3;
 *  - streaming (AVX2, results of DENSIFY_STREAM_MIN bytes and more): the
 *    block is assembled in a zeroed buffer on the stack and written with
 *    streaming stores, each element once, and no line of the result is
 *    read before it is written (a plain store reads it first).  A result
 *    that large is not in cache when the program reads it again anyway. */
#define DENSIFY_BLOCK 4096
#define DENSIFY_STREAM_MIN (UINT64_C(16) << 20)

static void densify_blocks(char *d, uint64_t dim, unsigned vs, const placement *pl, const void *ix,
                           const void *v, uint64_t n)
{
    uint64_t per = DENSIFY_BLOCK / vs, k = 0;
    for (uint64_t lo = 0; lo < dim; lo += per) {
        uint64_t hi = dim - lo < per ? dim : lo + per;
        memset(d + lo * vs, 0, (hi - lo) * vs);
        k = pl->place(d + lo * vs, lo, hi, ix, v, k, n);
    }
}

#ifdef STREAM_X86
/* Bit j of the result says whether element j of the 128 bytes at p is
 * nonzero: 32 floats, 16 doubles, 32 or 16 integers.  Floats compare
 * "not equal, or unordered" to zero, C's x != 0. */
__attribute__((target("avx2"))) static inline uint32_t nonzero_bits_f32(const float *p)
{
    const __m256 z = _mm256_setzero_ps();
    uint32_t m = 0;
    for (int q = 0; q < 4; q++)
        m |= (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p + 8 * q), z, _CMP_NEQ_UQ)) << 8 * q;
    return m;
}

__attribute__((target("avx2"))) static inline uint32_t nonzero_bits_f64(const double *p)
{
    const __m256d z = _mm256_setzero_pd();
    uint32_t m = 0;
    for (int q = 0; q < 4; q++)
        m |= (uint32_t)_mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(p + 4 * q), z, _CMP_NEQ_UQ)) << 4 * q;
    return m;
}

__attribute__((target("avx2"))) static inline uint32_t nonzero_bits_u32(const uint32_t *p)
{
    const __m256i z = _mm256_setzero_si256();
    uint32_t m = 0;
    for (int q = 0; q < 4; q++) {
        __m256i eq = _mm256_cmpeq_epi32(_mm256_loadu_si256((const __m256i *)(p + 8 * q)), z);
        m |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(eq)) << 8 * q;
    }
    return ~m;
}

__attribute__((target("avx2"))) static inline uint32_t nonzero_bits_u64(const uint64_t *p)
{
    const __m256i z = _mm256_setzero_si256();
    uint32_t m = 0;
    for (int q = 0; q < 4; q++) {
        __m256i eq = _mm256_cmpeq_epi64(_mm256_loadu_si256((const __m256i *)(p + 4 * q)), z);
        m |= (uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(eq)) << 4 * q;
    }
    return ~m & 0xffff;
}

/* The entries of the nonzeros among the 32 elements at x + i (bit j of m:
 * element i + j) to oi and ov from o on; return the next o.  gather_bits:
 * one by one.  gather_lanes, for 4-byte values and indices: 8 elements a
 * store, the merge's table of kept lanes (vmerge_compact) moving a group's
 * nonzeros to the front, with their indices; the next group's store
 * overwrites what lies beyond them (room below cap: the step's condition). */
__attribute__((target("avx2"), always_inline)) static inline uint64_t gather_lanes(const void *x, uint64_t i,
                                                                                  uint32_t m, uint32_t *oi,
                                                                                  void *ov, uint64_t o)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int q = 0; q < 4; q++) {
        unsigned kept = m >> 8 * q & 0xff;
        __m256i v = _mm256_loadu_si256((const __m256i *)((const uint32_t *)x + i) + q);
        __m256i at = _mm256_add_epi32(lane, _mm256_set1_epi32((int)(uint32_t)(i + 8 * (uint64_t)q)));
        _mm256_storeu_si256((__m256i *)((uint32_t *)ov + o), vmerge_compact(v, kept));
        _mm256_storeu_si256((__m256i *)(oi + o), vmerge_compact(at, kept));
        o += (uint64_t)__builtin_popcount(kept);
    }
    return o;
}

/* 128 bytes a step (B elements): one test skips them when all are zero,
 * a run of nonzeros is copied whole, else the set bits say where the
 * nonzeros are: gather_bits, or LANES once the last GATHER_PROBE steps
 * with a nonzero held more than GATHER_LANES_MIN (gather_lanes costs the
 * same at any count, gather_bits a branch per nonzero, mispredicted on
 * data it has not seen: at density 0.1 and above lanes measured twice as
 * fast, at 0.03 alike, below it slower).  The portable loop does the last
 * elements and those past the room for a whole step. */
#define GATHER_PROBE 64
#define GATHER_LANES_MIN 96
#define GATHER_AVX2(NAME, VT, IT, B, BITS, LANES)                               \
    __attribute__((target("avx2"), always_inline)) static inline uint64_t      \
    gather_bits_##NAME(const VT *x, uint64_t i, uint32_t m, IT *oi, VT *ov,     \
                       uint64_t o)                                              \
    {                                                                           \
        for (; m; m &= m - 1) {                                                 \
            uint64_t j = i + (uint64_t)__builtin_ctz(m);                        \
            oi[o] = (IT)j;                                                      \
            ov[o++] = x[j];                                                     \
        }                                                                       \
        return o;                                                               \
    }                                                                           \
    __attribute__((target("avx2")))                                             \
    static void gather_##NAME##_avx2(const void *x_, uint64_t n, uint64_t cap,  \
                                     void *oi_, void *ov_, gather_cursor *c)    \
    {                                                                           \
        const VT *x = x_;                                                       \
        IT *oi = oi_;                                                           \
        VT *ov = ov_;                                                           \
        uint64_t i = c->i, o = c->o;                                            \
        unsigned steps = 0, seen = 0;                                           \
        int lanes = 0;                                                          \
        for (; n - i >= (B) && cap - o >= (B); i += (B)) {                      \
            uint32_t m = BITS(x + i);                                           \
            if (m == (uint32_t)((UINT64_C(1) << (B)) - 1)) { /* a run */        \
                for (uint64_t j = 0; j < (B); j++) oi[o + j] = (IT)(i + j);     \
                memcpy(ov + o, x + i, (B) * sizeof(VT));                        \
                o += (B);                                                       \
            } else if (m) {                                                     \
                seen += (unsigned)__builtin_popcount(m);                        \
                o = lanes ? LANES(x, i, m, oi, ov, o)                           \
                          : gather_bits_##NAME(x, i, m, oi, ov, o);             \
                if (++steps < GATHER_PROBE) continue;                           \
                lanes = seen > GATHER_LANES_MIN;                                \
                steps = seen = 0;                                               \
            }                                                                   \
        }                                                                       \
        c->i = i;                                                               \
        c->o = o;                                                               \
        _mm256_zeroupper(); /* see stream_lines */                              \
        gather_##NAME(x_, n, cap, oi_, ov_, c);                                 \
    }

GATHER_AVX2(f32_i32, float, uint32_t, 32, nonzero_bits_f32, gather_lanes)
GATHER_AVX2(f32_i64, float, uint64_t, 32, nonzero_bits_f32, gather_bits_f32_i64)
GATHER_AVX2(f64_i32, double, uint32_t, 16, nonzero_bits_f64, gather_bits_f64_i32)
GATHER_AVX2(f64_i64, double, uint64_t, 16, nonzero_bits_f64, gather_bits_f64_i64)
GATHER_AVX2(u32_i32, uint32_t, uint32_t, 32, nonzero_bits_u32, gather_lanes)
GATHER_AVX2(u32_i64, uint32_t, uint64_t, 32, nonzero_bits_u32, gather_bits_u32_i64)
GATHER_AVX2(u64_i32, uint64_t, uint32_t, 16, nonzero_bits_u64, gather_bits_u64_i32)
GATHER_AVX2(u64_i64, uint64_t, uint64_t, 16, nonzero_bits_u64, gather_bits_u64_i64)

#define GTAB_AVX2(NAME) gather_##NAME##_avx2
static const gather_fn gather_avx2[5][2] = {
    [SPARCML_FLOAT] = {GTAB_AVX2(f32_i32), GTAB_AVX2(f32_i64)},
    [SPARCML_DOUBLE] = {GTAB_AVX2(f64_i32), GTAB_AVX2(f64_i64)},
    [SPARCML_INT32] = {GTAB_AVX2(u32_i32), GTAB_AVX2(u32_i64)},
    [SPARCML_INT64] = {GTAB_AVX2(u64_i32), GTAB_AVX2(u64_i64)},
};

/* bytes (a multiple of 64) from the 64-byte aligned blk to the 64-byte
 * aligned dst, by streaming stores.  Every AVX2 loop here ends with
 * vzeroupper before other code runs: the compiler leaves it out before a
 * tail call, and upper halves left dirty slowed the process's later
 * vendor allreduces by a tenth (transparent_bench, dense data, P = 2). */
__attribute__((target("avx2"))) static void stream_lines(char *dst, const char *blk, uint64_t bytes)
{
    for (uint64_t o = 0; o < bytes; o += 64) {
        _mm256_stream_si256((__m256i *)(dst + o), _mm256_load_si256((const __m256i *)(blk + o)));
        _mm256_stream_si256((__m256i *)(dst + o + 32), _mm256_load_si256((const __m256i *)(blk + o + 32)));
    }
    _mm256_zeroupper();
}

/* The whole 64-byte lines of d go through the staging block; the elements
 * before the first and after the last are written in place.  After the
 * copy, the block is zeroed again where values went (or whole, when that
 * is cheaper: more than one value in 16 elements). */
__attribute__((target("avx2")))
static void densify_streaming(char *d, uint64_t dim, unsigned vs, const placement *pl, const void *ix,
                              const void *v, uint64_t n)
{
    _Alignas(64) char blk[DENSIFY_BLOCK];
    uint64_t per = DENSIFY_BLOCK / vs, line = 64 / vs;
    uint64_t head = (64 - (uintptr_t)d % 64) % 64 / vs, end = head + (dim - head) / line * line, k;
    memset(d, 0, head * vs);
    k = pl->place(d, 0, head, ix, v, 0, n);
    memset(blk, 0, sizeof blk);
    for (uint64_t lo = head; lo < end; lo += per) {
        uint64_t hi = end - lo < per ? end : lo + per, k0 = k;
        k = pl->place(blk, lo, hi, ix, v, k, n);
        stream_lines(d + lo * vs, blk, (hi - lo) * vs);
        if ((k - k0) * 16 > hi - lo) memset(blk, 0, (hi - lo) * vs);
        else pl->unplace(blk, lo, ix, k0, k);
    }
    memset(d + end * vs, 0, (dim - end) * vs);
    pl->place(d + end * vs, end, dim, ix, v, k, n);
    _mm_sfence(); /* streaming stores are weakly ordered: ordered before what follows */
}
#endif

static gather_fn gather_for(int vtype, unsigned iw)
{
#ifdef STREAM_X86
    if (stream_avx2_runs()) return gather_avx2[vtype][iw == 8];
#endif
    return gather_portable[vtype][iw == 8];
}

/* Sparse s into dim values at dense. */
static void densify_sparse(const sv *s, void *dense)
{
    const placement *pl = &placements[s->vtype][s->iw == 8];
#ifdef STREAM_X86
    if (s->dim * s->vs >= DENSIFY_STREAM_MIN && (uintptr_t)dense % s->vs == 0 && stream_avx2_runs()) {
        densify_streaming(dense, s->dim, s->vs, pl, s->idx, s->val, s->nnz);
        return;
    }
#endif
    densify_blocks(dense, s->dim, s->vs, pl, s->idx, s->val, s->nnz);
}

/* ------------------------------------------------------------- merge-add */

uint64_t stream_merge_bound(const sv *a, const sv *b)
{
    uint64_t dense = sparcml_dense_bytes(a->dim, a->vtype);
    uint64_t sparse;
    if (a->dense || b->dense) return dense;
    sparse = sparcml_sparse_bytes(a->dim, a->vtype, a->nnz + b->nnz);
    return sparse < dense + 8 ? sparse : dense + 8;
}

/* Dense out = a + b where at least one of them is dense. */
static sv merge_into_dense(const sv *a, const sv *b, void *outbuf)
{
    const kernels *k = kernels_for(a->vtype, a->iw);
    sv out = stream_init(outbuf, a->dim, a->vtype, a->dim, 1);
    if (a->dense) {
        memcpy(out.val, a->val, a->dim * a->vs);
        stream_accumulate(&out, b, 0);
    } else if (b->dense) {
        memcpy(out.val, b->val, b->dim * b->vs);
        stream_accumulate(&out, a, 1);
    } else {
        memset(out.val, 0, a->dim * a->vs);
        k->scatter(out.val, a->idx, a->val, a->nnz);
        stream_accumulate(&out, b, 0);
    }
    return out;
}

/* The sparse merge for a and b: exact needs room for the union only. */
static merge_fn merge_for(const kernels *k, const sv *a, int exact)
{
#ifdef STREAM_X86
    const vmerge *v = &vmerge_table[a->vtype][a->iw == 8];
    if (v->merge && stream_avx2_runs()) return exact ? v->merge_exact : v->merge;
#else
    (void)a;
#endif
    return exact ? k->merge_exact : k->merge;
}

sv stream_merge_add(const sv *a, const sv *b, void *outbuf)
{
    const kernels *k = kernels_for(a->vtype, a->iw);
    uint64_t n = a->nnz + b->nnz; /* an upper bound of the union */
    int exact = 0;
    sv out;
    char *vals;
    if (a->dense || b->dense) return merge_into_dense(a, b, outbuf);
    /* Only when the union might be big enough to go dense do we pay for an
     * exact count first (the buffer may then be too small for the bound). */
    if (sparcml_prefers_dense(a->dim, a->vtype, n)) {
        n = k->union_size(a->idx, a->nnz, b->idx, b->nnz);
        if (sparcml_prefers_dense(a->dim, a->vtype, n)) return merge_into_dense(a, b, outbuf);
        exact = 1;
    }
    /* Otherwise values first go where they would sit for the bound, then move
     * down to where they belong for the real count (memmove: regions overlap). */
    out = stream_init(outbuf, a->dim, a->vtype, n, 0);
    vals = out.val;
    n = merge_for(k, a, exact)(a->idx, a->val, a->nnz, b->idx, b->val, b->nnz, out.idx, vals);
    if (exact) return out;
    out = stream_init(outbuf, a->dim, a->vtype, n, 0);
    memmove(out.val, vals, n * out.vs);
    return out;
}

void stream_accumulate(sv *acc, const sv *b, int b_left)
{
    const kernels *k = kernels_for(b->vtype, b->iw);
    if (b->dense)
        k->dense_add(acc->val, b->val, b->dim, b_left);
    else
        k->scatter_add(acc->val, b->idx, b->val, b->nnz, b_left);
}

void stream_densify(const sv *s, void *dense)
{
    if (s->dense) {
        if (dense != s->val) memmove(dense, s->val, s->dim * s->vs);
        return;
    }
    densify_sparse(s, dense);
}

/* -------------------------------------------------------- slice / concat */

/* First position in the sorted indices of s whose index is >= x. */
static uint64_t lower_bound(const sv *s, uint64_t x)
{
    uint64_t lo = 0, hi = s->nnz;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (sparcml_get_index(s->idx, s->iw, mid) < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint64_t stream_slice_bytes(const sv *s, uint64_t lo, uint64_t hi)
{
    if (s->dense) return sparcml_dense_bytes(hi - lo, s->vtype);
    return sparcml_sparse_bytes(hi - lo, s->vtype, lower_bound(s, hi) - lower_bound(s, lo));
}

/* 16 bytes of indices of one width, added to as a vector (GCC's vector
 * extension: SSE2 on x86-64, whatever the target has elsewhere). */
typedef uint32_t index_lanes4 __attribute__((vector_size(16)));
typedef uint64_t index_lanes8 __attribute__((vector_size(16)));

/* Copy n indices from (src, sw) minus `shift` (plus it if `add`) to (dst,
 * dw).  Every result fits dw, so at one width the sum modulo 2^(8 dw) is
 * exact: those loops carry no width test per index, and take 16 bytes a
 * step (an index a step measured 1.5-2.8x slower). */
static void copy_indices(void *dst, unsigned dw, const void *src, unsigned sw, uint64_t n,
                         uint64_t shift, int add)
{
    uint64_t delta = add ? shift : 0 - shift, i = 0;
    if (dw == sw && shift == 0) {
        memcpy(dst, src, n * dw);
        return;
    }
    if (dw == 4 && sw == 4) {
        for (; i + 4 <= n; i += 4) {
            index_lanes4 x;
            memcpy(&x, (const char *)src + 4 * i, 16);
            x += (uint32_t)delta;
            memcpy((char *)dst + 4 * i, &x, 16);
        }
    } else if (dw == 8 && sw == 8) {
        for (; i + 2 <= n; i += 2) {
            index_lanes8 x;
            memcpy(&x, (const char *)src + 8 * i, 16);
            x += delta;
            memcpy((char *)dst + 8 * i, &x, 16);
        }
    }
    for (; i < n; i++) sparcml_put_index(dst, dw, i, sparcml_get_index(src, sw, i) + delta);
}

sv stream_slice(const sv *s, uint64_t lo, uint64_t hi, void *outbuf)
{
    uint64_t dim = hi - lo, first, m;
    sv out;
    if (s->dense) {
        out = stream_init(outbuf, dim, s->vtype, dim, 1);
        memcpy(out.val, (char *)s->val + lo * s->vs, dim * s->vs);
        return out;
    }
    first = lower_bound(s, lo);
    m = lower_bound(s, hi) - first;
    out = stream_init(outbuf, dim, s->vtype, m, 0);
    copy_indices(out.idx, out.iw, (char *)s->idx + first * s->iw, s->iw, m, lo, 0);
    memcpy(out.val, (char *)s->val + first * s->vs, m * s->vs);
    return out;
}

uint64_t stream_range_bytes(const sv *s, uint64_t lo, uint64_t hi)
{
    return sparcml_sparse_bytes(s->dim, s->vtype, lower_bound(s, hi) - lower_bound(s, lo));
}

sv stream_range(const sv *s, uint64_t lo, uint64_t hi, void *outbuf)
{
    uint64_t first = lower_bound(s, lo), m = lower_bound(s, hi) - first;
    sv out = stream_init(outbuf, s->dim, s->vtype, m, 0);
    copy_indices(out.idx, out.iw, (char *)s->idx + first * s->iw, s->iw, m, 0, 0);
    memcpy(out.val, (char *)s->val + first * s->vs, m * s->vs);
    return out;
}

/* ------------------------------------------------------------- presence */

void stream_mark_present(const sv *s, uint64_t *present)
{
    for (uint64_t i = 0; i < s->nnz; i++) {
        uint64_t x = sparcml_get_index(s->idx, s->iw, i);
        present[x / 64] |= UINT64_C(1) << (x % 64);
    }
}

uint64_t stream_count_present(const uint64_t *present, uint64_t dim)
{
    uint64_t n = 0;
    for (uint64_t w = 0; w < dim / 64; w++) n += (uint64_t)__builtin_popcountll(present[w]);
    if (dim % 64) n += (uint64_t)__builtin_popcountll(present[dim / 64] & ((UINT64_C(1) << (dim % 64)) - 1));
    return n;
}

sv stream_select(const sv *s, const uint64_t *present, uint64_t n, void *outbuf)
{
    sv out = stream_init(outbuf, s->dim, s->vtype, n, 0);
    uint64_t o = 0;
    if (!present) {
        for (uint64_t x = 0; x < s->dim; x++) sparcml_put_index(out.idx, out.iw, x, x);
        memcpy(out.val, s->val, s->dim * s->vs);
        return out;
    }
    for (uint64_t w = 0; w < (s->dim + 63) / 64; w++) {
        for (uint64_t bits = present[w]; bits; bits &= bits - 1) {
            uint64_t x = w * 64 + (uint64_t)__builtin_ctzll(bits);
            sparcml_put_index(out.idx, out.iw, o, x);
            memcpy((char *)out.val + o * out.vs, (char *)s->val + x * s->vs, s->vs);
            o++;
        }
    }
    return out;
}

/* ------------------------------------------------------------- concat */

sv stream_concat(const sv *parts, const uint64_t *lo, int n, uint64_t dim, int dense, void *outbuf)
{
    uint64_t nnz = 0, at = 0;
    int vtype = parts[0].vtype;
    sv out;
    if (dense) {
        out = stream_init(outbuf, dim, vtype, dim, 1);
        for (int r = 0; r < n; r++) stream_densify(&parts[r], (char *)out.val + lo[r] * out.vs);
        return out;
    }
    for (int r = 0; r < n; r++) nnz += parts[r].nnz;
    out = stream_init(outbuf, dim, vtype, nnz, 0);
    for (int r = 0; r < n; r++) {
        const sv *p = &parts[r];
        copy_indices((char *)out.idx + at * out.iw, out.iw, p->idx, p->iw, p->nnz, lo[r], 1);
        memcpy((char *)out.val + at * out.vs, p->val, p->nnz * p->vs);
        at += p->nnz;
    }
    return out;
}

/* Eight independent 32-bit lanes per block (blocks short enough not to
 * overflow them) so that the compiler vectorises the count: one compare and
 * one subtract per element, at memory speed (bench/kernel_bench --scan). */
#define COUNT_NONZERO(T)                                                        \
    do {                                                                        \
        const T *x = (const T *)s->val;                                         \
        uint64_t i = lo;                                                        \
        while (hi - i >= 8) {                                                   \
            uint32_t lane[8] = {0};                                             \
            uint64_t end = i + ((hi - i) / 8 < (1u << 20) ? (hi - i) / 8 : (1u << 20)) * 8; \
            for (; i < end; i += 8)                                             \
                for (int j = 0; j < 8; j++) lane[j] += x[i + j] != 0;           \
            for (int j = 0; j < 8; j++) n += lane[j];                           \
        }                                                                       \
        for (; i < hi; i++) n += x[i] != 0;                                     \
    } while (0)

uint64_t stream_count_nonzero(const sv *s, uint64_t lo, uint64_t hi)
{
    uint64_t n = 0;
    switch (s->vtype) {
    case SPARCML_FLOAT: COUNT_NONZERO(float); break;
    case SPARCML_DOUBLE: COUNT_NONZERO(double); break;
    case SPARCML_INT32: COUNT_NONZERO(uint32_t); break;
    default: COUNT_NONZERO(uint64_t); break;
    }
    return n;
}

/* ------------------------------------------------------ dense vectors */

sv stream_dense_view(const void *values, uint64_t dim, int vtype)
{
    sv s = {.base = (void *)values, .val = (void *)values, .dim = dim, .nnz = dim, .vtype = vtype,
            .vs = (unsigned)sparcml_value_size(vtype), .dense = 1};
    return s;
}

uint64_t stream_gather_capacity(uint64_t dim, int vtype, uint64_t bytes)
{
    uint64_t vs = sparcml_value_size(vtype), entry = sparcml_index_width(dim) + vs, fit, most;
    if (bytes < SPARCML_HEADER_BYTES || dim * vs == 0) return 0;
    /* The padding of the indices (under 8 bytes, less than an entry) can
     * cost at most one entry of the plain quotient. */
    fit = (bytes - SPARCML_HEADER_BYTES) / entry;
    if (sparcml_sparse_bytes(dim, vtype, fit) > bytes) fit--;
    most = (dim * vs - 1) / entry; /* the most entries still sparse */
    return fit < most ? fit : most;
}

/* The values are collected where cap entries would put them and move down
 * to where the count puts them once it is known: nnz * vs bytes, which the
 * gather has just written (in cache while the stream is small). */
uint64_t stream_gather_nonzero(const sv *v, uint64_t cap, void *outbuf, sv *out)
{
    unsigned iw = sparcml_index_width(v->dim);
    char *oi = (char *)outbuf + SPARCML_HEADER_BYTES, *ov = oi + sparcml_round8(cap * iw);
    gather_cursor c = {.i = 0, .o = 0};
    uint64_t n;
    gather_for(v->vtype, iw)(v->val, v->dim, cap, oi, ov, &c);
    n = c.o + (c.i < v->dim ? stream_count_nonzero(v, c.i, v->dim) : 0);
    *out = sv_absent();
    if (n > cap || sparcml_prefers_dense(v->dim, v->vtype, n)) return n;
    *out = stream_init(outbuf, v->dim, v->vtype, n, 0);
    memmove(out->val, ov, n * out->vs);
    return n;
}

/* x != 0 ? x : 0 is the identity for integers and turns -0.0 into +0.0. */
#define FROM_VALUES(T)                                                          \
    do {                                                                        \
        const T *x = v->val;                                                    \
        T *y = out.val;                                                         \
        for (uint64_t i = 0; i < v->dim; i++) y[i] = x[i] != 0 ? x[i] : 0;      \
    } while (0)

sv stream_from_values(const sv *v, uint64_t nnz, void *outbuf)
{
    sv out;
    if (!sparcml_prefers_dense(v->dim, v->vtype, nnz)) {
        stream_gather_nonzero(v, nnz, outbuf, &out);
        return out;
    }
    out = stream_init(outbuf, v->dim, v->vtype, v->dim, 1);
    switch (v->vtype) {
    case SPARCML_FLOAT: FROM_VALUES(float); break;
    case SPARCML_DOUBLE: FROM_VALUES(double); break;
    case SPARCML_INT32: FROM_VALUES(uint32_t); break;
    default: FROM_VALUES(uint64_t); break;
    }
    return out;
}
void stream_split_bounds(uint64_t dim, int P, uint64_t *offsets)
{
    uint64_t base = dim / (uint64_t)P, extra = dim % (uint64_t)P;
    for (int r = 0; r <= P; r++)
        offsets[r] = (uint64_t)r * base + ((uint64_t)r < extra ? (uint64_t)r : extra);
}
