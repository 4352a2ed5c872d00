/* stream.c -- validation, merge-add, slicing and assembly of streams.
 *
 * The inner loops are instantiated per (value type, index width) by the
 * KERNELS macro so that each is one tight pass without per-element
 * dispatch.  Integer values add as unsigned (two's complement wrap-around,
 * never undefined behaviour). */
#include "config.h"

#include <string.h>

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
    sv s;
    memcpy(&h, buf, sizeof h);
    s.base = (void *)buf;
    s.dim = h.dim;
    s.nnz = h.nnz;
    s.vtype = h.value_type;
    s.iw = h.index_width;
    s.vs = (unsigned)sparcml_value_size(h.value_type);
    s.dense = h.format == SPARCML_DENSE;
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

/* ---------------------------------------------------------------- kernels */

typedef struct kernels {
    /* Sparse a + sparse b -> (oi, ov); returns the number of entries.
     * merge needs room for an + bn entries in oi and in ov (it may write
     * beyond the union before compacting); merge_exact only for the union. */
    uint64_t (*merge)(const void *ai, const void *av, uint64_t an, const void *bi,
                      const void *bv, uint64_t bn, void *oi, void *ov);
    uint64_t (*merge_exact)(const void *ai, const void *av, uint64_t an, const void *bi,
                            const void *bv, uint64_t bn, void *oi, void *ov);
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

/* One branch-free step of a chain with cursors (i, j, o) over ai/av,
 * bi/bv into oi/ov: the smaller index, both values summed (a left) when
 * equal, both cursors advanced by the comparison.  Values are chosen on
 * their bits (BT: an unsigned integer of their size) with masks: a
 * compiler turns a floating-point select into a branch, which would
 * mispredict as often as the merge it replaces. */
#define MERGE_STEP(VT, IT, BT, i, j, o)                                        \
    do {                                                                       \
        IT x_ = ai[i], y_ = bi[j];                                             \
        VT va_ = av[i], vb_ = bv[j], sum_ = (VT)(va_ + vb_);                   \
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

#define KERNELS(NAME, VT, IT, BT)                                              \
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
            else { oi[o] = x; ov[o++] = (VT)(av[i++] + bv[j++]); }             \
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
                MERGE_STEP(VT, IT, BT, i0, j0, o0);                                \
                MERGE_STEP(VT, IT, BT, i1, j1, o1);                                \
                MERGE_STEP(VT, IT, BT, i2, j2, o2);                                \
                MERGE_STEP(VT, IT, BT, i3, j3, o3);                                \
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

KERNELS(f32_i32, float, uint32_t, uint32_t)
KERNELS(f32_i64, float, uint64_t, uint32_t)
KERNELS(f64_i32, double, uint32_t, uint64_t)
KERNELS(f64_i64, double, uint64_t, uint64_t)
KERNELS(u32_i32, uint32_t, uint32_t, uint32_t)
KERNELS(u32_i64, uint32_t, uint64_t, uint32_t)
KERNELS(u64_i32, uint64_t, uint32_t, uint64_t)
KERNELS(u64_i64, uint64_t, uint64_t, uint64_t)

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
    n = (exact ? k->merge_exact : k->merge)(a->idx, a->val, a->nnz, b->idx, b->val, b->nnz,
                                            out.idx, vals);
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
    memset(dense, 0, s->dim * s->vs);
    kernels_for(s->vtype, s->iw)->scatter(dense, s->idx, s->val, s->nnz);
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

/* Copy n indices from (src, sw) minus `shift` to (dst, dw). */
static void copy_indices(void *dst, unsigned dw, const void *src, unsigned sw, uint64_t n,
                         uint64_t shift, int add)
{
    if (dw == sw && shift == 0) {
        memcpy(dst, src, n * dw);
        return;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t x = sparcml_get_index(src, sw, i);
        sparcml_put_index(dst, dw, i, add ? x + shift : x - shift);
    }
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

/* x != 0 ? x : 0 is the identity for integers and turns -0.0 into +0.0. */
#define FROM_VALUES(T)                                                          \
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

sv stream_from_values(const sv *v, uint64_t nnz, void *outbuf)
{
    int dense = sparcml_prefers_dense(v->dim, v->vtype, nnz);
    sv out = stream_init(outbuf, v->dim, v->vtype, dense ? v->dim : nnz, dense);
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
