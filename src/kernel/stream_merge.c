/* stream_merge.c -- merge-add of streams: the portable kernels, and the
 * entry points that choose between them and the AVX2 merge.
 *
 * stream_merge_add(a, b) is a + b element-wise with `a` the left operand
 * of every addition, so that a pair merged anywhere sums to the same bits
 * (NaN payloads included); its result is dense when an input is or when
 * the sparse form would not be smaller.  The portable merges here and the
 * AVX2 one (stream_merge_avx2.c) write the same bytes; which runs is
 * decided per call, by stream_avx2_runs, the switch every AVX2 back end of
 * the kernel obeys. */
#include "config.h"

#include <stdatomic.h>

#include "kernel/stream_merge_impl.h"

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

/* ------------------------------------------------------ the scalar merge */

/* The two-pointer merge: room for the union only.  It runs in stretches
 * of m steps, m the entries left in the shorter input: no stretch can run
 * an input out, so a step tests no end and the loop keeps its cursors in
 * registers.  Equal indices are tested first: where the inputs share their
 * indices (the same support on every rank) a step takes one branch. */
KERNEL_INLINE uint64_t merge_scalar_body(int vt, unsigned iw, MERGE_PARAMS)
{
    uint64_t i = 0, j = 0, o = 0, m;
    while ((m = an - i < bn - j ? an - i : bn - j) > 0)
        do {
            uint64_t x = index_at(ai, iw, i), y = index_at(bi, iw, j);
            if (x == y) { index_put(oi, iw, o, x); merge_add_to(vt, ov, o++, av, i++, bv, j++); }
            else if (x < y) { index_put(oi, iw, o, x); value_copy(vt, ov, o++, av, i++); }
            else { index_put(oi, iw, o, y); value_copy(vt, ov, o++, bv, j++); }
        } while (--m);
    for (; i < an; i++, o++) { index_put(oi, iw, o, index_at(ai, iw, i)); value_copy(vt, ov, o, av, i); }
    for (; j < bn; j++, o++) { index_put(oi, iw, o, index_at(bi, iw, j)); value_copy(vt, ov, o, bv, j); }
    return o;
}

/* ------------------------------------------------------ the chained merge */

/* Inputs of at least MERGE_INTERLEAVE_MIN entries are cut into
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

/* Chain s takes the indices in [ai[s an / S], ai[(s+1) an / S]): equal
 * indices meet in one chain; it writes from i + j on, where the union of
 * the chains before it ends at the latest.  Chain 0 also takes b's
 * smaller indices. */
KERNEL_INLINE void merge_cut(unsigned iw, const void *ai, uint64_t an, const void *bi, uint64_t bn, merge_chain *c)
{
    for (int s = 0; s <= MERGE_CHAINS; s++) {
        uint64_t i = an * (uint64_t)s / MERGE_CHAINS, lo = 0, hi = bn;
        if (s == MERGE_CHAINS)
            lo = bn;
        else if (s > 0)
            while (lo < hi) {
                uint64_t mid = lo + (hi - lo) / 2;
                if (index_at(bi, iw, mid) < index_at(ai, iw, i)) lo = mid + 1; else hi = mid;
            }
        if (s > 0) { c[s - 1].iend = i; c[s - 1].jend = lo; }
        if (s < MERGE_CHAINS) c[s] = (merge_chain){.i = i, .j = lo, .o = i + lo, .start = i + lo};
    }
}

/* Does the merge take the same direction step after step at the chains'
 * starts (identical or clustered indices)?  Then the branchy scalar merge
 * predicts well and beats the branch-free chains. */
KERNEL_INLINE int merge_predictable(unsigned iw, const void *ai, const void *bi, const merge_chain *c)
{
    unsigned steps = 0, changes = 0;
    for (int s = 0; s < MERGE_CHAINS; s++) {
        uint64_t i = c[s].i, j = c[s].j;
        int prev = 0;
        for (int t = 0; t < MERGE_PROBE && i < c[s].iend && j < c[s].jend; t++) {
            uint64_t x = index_at(ai, iw, i), y = index_at(bi, iw, j);
            int dir = (x <= y) | (y <= x) << 1;
            changes += prev != 0 && dir != prev;
            steps++;
            prev = dir;
            i += dir & 1;
            j += dir >> 1;
        }
    }
    return changes * 8 < steps;
}

/* One branch-free step of a chain with cursors (i, j, o): the smaller
 * index, both values summed (a left) when equal, both cursors advanced by
 * the comparison.  Values are chosen on their bits with masks: a compiler
 * turns a floating-point select into a branch, which would mispredict as
 * often as the merge it replaces. */
KERNEL_INLINE void merge_step(int vt, unsigned iw, MERGE_PARAMS, uint64_t *i, uint64_t *j, uint64_t *o)
{
    (void)an, (void)bn;
    uint64_t x = index_at(ai, iw, *i), y = index_at(bi, iw, *j);
    uint64_t ta = x <= y, tb = y <= x;
    index_put(oi, iw, *o, y ^ ((x ^ y) & -ta));
    value_put(ov, value_size(vt), *o, merge_pick(vt, av, *i, bv, *j, -ta, -tb));
    ++*o;
    *i += ta;
    *j += tb;
}

/* m steps of every chain, interleaved; the cursors live in locals so that
 * they stay in registers. */
KERNEL_INLINE void merge_interleave(int vt, unsigned iw, MERGE_PARAMS, merge_chain *c, uint64_t m)
{
    uint64_t i0 = c[0].i, j0 = c[0].j, o0 = c[0].o;
    uint64_t i1 = c[1].i, j1 = c[1].j, o1 = c[1].o;
    uint64_t i2 = c[2].i, j2 = c[2].j, o2 = c[2].o;
    uint64_t i3 = c[3].i, j3 = c[3].j, o3 = c[3].o;
    for (uint64_t t = 0; t < m; t++) {
        merge_step(vt, iw, MERGE_ARGS, &i0, &j0, &o0);
        merge_step(vt, iw, MERGE_ARGS, &i1, &j1, &o1);
        merge_step(vt, iw, MERGE_ARGS, &i2, &j2, &o2);
        merge_step(vt, iw, MERGE_ARGS, &i3, &j3, &o3);
    }
    c[0].i = i0; c[0].j = j0; c[0].o = o0;
    c[1].i = i1; c[1].j = j1; c[1].o = o1;
    c[2].i = i2; c[2].j = j2; c[2].o = o2;
    c[3].i = i3; c[3].j = j3; c[3].o = o3;
}

/* The chains' rest by the scalar merge, each chain's output moved down to
 * close the gap the duplicates of earlier chains left; the union's size. */
KERNEL_INLINE uint64_t merge_finish(int vt, unsigned iw, MERGE_PARAMS, merge_chain *c, merge_fn *scalar)
{
    (void)an, (void)bn;
    unsigned vs = value_size(vt);
    uint64_t o = 0;
    for (int s = 0; s < MERGE_CHAINS; s++) {
        merge_chain *k = &c[s];
        k->o += scalar((const char *)ai + k->i * iw, (const char *)av + k->i * vs, k->iend - k->i,
                       (const char *)bi + k->j * iw, (const char *)bv + k->j * vs, k->jend - k->j,
                       (char *)oi + k->o * iw, (char *)ov + k->o * vs);
        if (o != k->start) {
            memmove((char *)oi + o * iw, (char *)oi + k->start * iw, (k->o - k->start) * iw);
            memmove((char *)ov + o * vs, (char *)ov + k->start * vs, (k->o - k->start) * vs);
        }
        o += k->o - k->start;
    }
    return o;
}

/* The merge with room for an + bn entries: chained where that pays. */
KERNEL_INLINE uint64_t merge_body(int vt, unsigned iw, MERGE_PARAMS, merge_fn *scalar)
{
    merge_chain c[MERGE_CHAINS];
    uint64_t m;
    if (an + bn < MERGE_INTERLEAVE_MIN || an < MERGE_CHAINS) return scalar(MERGE_ARGS);
    merge_cut(iw, ai, an, bi, bn, c);
    if (merge_predictable(iw, ai, bi, c)) return scalar(MERGE_ARGS);
    while ((m = merge_safe_steps(c)) > 0) merge_interleave(vt, iw, MERGE_ARGS, c, m);
    return merge_finish(vt, iw, MERGE_ARGS, c, scalar);
}

/* ------------------------------------------------------- the other kernels */

/* Number of distinct indices in the union of a and b. */
KERNEL_INLINE uint64_t union_body(unsigned iw, const void *ai, uint64_t an, const void *bi, uint64_t bn)
{
    uint64_t i = 0, j = 0, o = 0;
    while (i < an && j < bn) {
        uint64_t x = index_at(ai, iw, i), y = index_at(bi, iw, j);
        i += x <= y;
        j += y <= x;
        o++;
    }
    return o + (an - i) + (bn - j);
}

/* dense d[ix[i]] = left ? v[i] + d[..] : d[..] + v[i]; a loop per order. */
KERNEL_INLINE void scatter_add_body(int vt, unsigned iw, void *d, const void *ix, const void *v, uint64_t n, int left)
{
    if (left)
        for (uint64_t i = 0; i < n; i++) value_add_into(vt, d, index_at(ix, iw, i), v, i, 1);
    else
        for (uint64_t i = 0; i < n; i++) value_add_into(vt, d, index_at(ix, iw, i), v, i, 0);
}

/* dense d[i] = left ? s[i] + d[i] : d[i] + s[i] */
KERNEL_INLINE void dense_add_body(int vt, void *d, const void *s, uint64_t n, int left)
{
    if (left)
        for (uint64_t i = 0; i < n; i++) value_add_into(vt, d, i, s, i, 1);
    else
        for (uint64_t i = 0; i < n; i++) value_add_into(vt, d, i, s, i, 0);
}

/* dense d[ix[i]] = v[i] (d already zeroed) */
KERNEL_INLINE void scatter_body(int vt, unsigned iw, void *d, const void *ix, const void *v, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) value_copy(vt, d, index_at(ix, iw, i), v, i);
}

typedef struct kernels {
    merge_fn *merge, *merge_exact;
    uint64_t (*union_size)(const void *ai, uint64_t an, const void *bi, uint64_t bn);
    void (*scatter_add)(void *d, const void *idx, const void *v, uint64_t n, int left);
    void (*dense_add)(void *d, const void *s, uint64_t n, int left);
    void (*scatter)(void *d, const void *idx, const void *v, uint64_t n);
} kernels;

#define MERGE_KERNELS(NAME, VT, IW)                                                                       \
    uint64_t merge_scalar_##NAME(MERGE_PARAMS) { return merge_scalar_body(VT, IW, MERGE_ARGS); }           \
    uint64_t merge_##NAME(MERGE_PARAMS) { return merge_body(VT, IW, MERGE_ARGS, merge_scalar_##NAME); }    \
    static uint64_t union_##NAME(const void *ai, uint64_t an, const void *bi, uint64_t bn)                \
    { return union_body(IW, ai, an, bi, bn); }                                                             \
    static void scatter_add_##NAME(void *d, const void *ix, const void *v, uint64_t n, int left)          \
    { scatter_add_body(VT, IW, d, ix, v, n, left); }                                                       \
    static void dense_add_##NAME(void *d, const void *s, uint64_t n, int left)                            \
    { dense_add_body(VT, d, s, n, left); }                                                                 \
    static void scatter_##NAME(void *d, const void *ix, const void *v, uint64_t n)                        \
    { scatter_body(VT, IW, d, ix, v, n); }
STREAM_TYPES(MERGE_KERNELS)

#define KERNEL_ROW(NAME, VT, IW)                                                                          \
    STREAM_SLOT(VT, IW) = {merge_##NAME, merge_scalar_##NAME, union_##NAME, scatter_add_##NAME,          \
                           dense_add_##NAME, scatter_##NAME},
static const kernels kernel_table[5][2] = {STREAM_TYPES(KERNEL_ROW)};

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

/* The sparse merge for a and b: exact needs room for the union only. */
static merge_fn *merge_for(const kernels *k, const sv *a, int exact)
{
#ifdef STREAM_X86
    if (stream_avx2_runs()) return vmerge_for(a->vtype, a->iw, exact);
#else
    (void)a;
#endif
    return exact ? k->merge_exact : k->merge;
}

/* Whether a and b hold the same indices (the same support on every rank):
 * then their union is known without a merge. */
static int same_indices(const sv *a, const sv *b)
{
    return a->nnz == b->nnz && a->iw == b->iw && (!a->nnz || memcmp(a->idx, b->idx, a->nnz * a->iw) == 0);
}

sv stream_merge_add(const sv *a, const sv *b, void *outbuf)
{
    const kernels *k = kernels_for(a->vtype, a->iw);
    uint64_t n = a->nnz + b->nnz; /* an upper bound of the union */
    int exact = 0;
    sv out;
    char *vals;
    if (a->dense || b->dense) return merge_into_dense(a, b, outbuf);
    /* The union is counted first where it might be big enough to go dense
     * (the buffer may then be too small for the bound); with the same
     * indices it is a's. */
    if (same_indices(a, b)) {
        n = a->nnz;
        exact = 1;
    } else if (sparcml_prefers_dense(a->dim, a->vtype, n)) {
        n = k->union_size(a->idx, a->nnz, b->idx, b->nnz);
        exact = 1;
    }
    if (exact && sparcml_prefers_dense(a->dim, a->vtype, n)) return merge_into_dense(a, b, outbuf);
    /* Else values first go where they would sit for the bound, then move
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
