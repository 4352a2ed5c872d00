/* stream_dense.c -- dense vectors: transparent mode's sweeps, and the
 * dense form of a stream.
 *
 * Transparent mode reads the application's dense buffer once (the gather
 * counts and collects its nonzeros in the same pass) and writes the dense
 * result once (the densify sweep, each element written once).  "Nonzero"
 * is C's x != 0 throughout: NaN and Inf are nonzeros, -0.0 is a zero, a
 * denormal is what the floating-point environment says.  The portable
 * loops here and the AVX2 ones (stream_dense_avx2.c) compute the same
 * bytes; which runs is decided per call (stream_avx2_runs). */
#include "config.h"

#include "kernel/stream_dense_impl.h"

/* ---------------------------------------------------------------- gather */

/* The portable gather tests GATHER_SPAN elements at once (the compiler
 * vectorises the test), so a span of zeros costs one branch; a span that
 * holds a nonzero is stored GATHER_GROUP elements at a time, each at the
 * output cursor, which advances past nonzeros only (branch-free: no
 * mispredict per nonzero).  A span needs that much room left below cap.
 * It stops at cap entries or at n. */
#define GATHER_SPAN 32
#define GATHER_GROUP 8

/* The nonzeros of the GATHER_GROUP elements at x + g to the entries from
 * o on; returns the next o. */
KERNEL_INLINE uint64_t gather_group(int vt, unsigned iw, const void *x, uint64_t g, void *oi, void *ov, uint64_t o)
{
    int any = 0;
    for (int j = 0; j < GATHER_GROUP; j++) any |= value_nonzero(vt, x, g + (uint64_t)j);
    for (int j = 0; any && j < GATHER_GROUP; j++) {
        index_put(oi, iw, o, g + (uint64_t)j);
        value_copy(vt, ov, o, x, g + (uint64_t)j);
        o += value_nonzero(vt, x, g + (uint64_t)j);
    }
    return o;
}

KERNEL_INLINE void gather_body(int vt, unsigned iw, const void *x, uint64_t n, uint64_t cap, void *oi, void *ov,
                               gather_cursor *c)
{
    uint64_t i = c->i, o = c->o;
    for (; n - i >= GATHER_SPAN && cap - o >= GATHER_SPAN; i += GATHER_SPAN) {
        int any = 0;
        for (int j = 0; j < GATHER_SPAN; j++) any |= value_nonzero(vt, x, i + (uint64_t)j);
        if (!any) continue;
        for (uint64_t g = i; g < i + GATHER_SPAN; g += GATHER_GROUP) o = gather_group(vt, iw, x, g, oi, ov, o);
    }
    for (; i < n && o < cap; i++)
        if (value_nonzero(vt, x, i)) {
            index_put(oi, iw, o, i);
            value_copy(vt, ov, o++, x, i);
        }
    c->i = i;
    c->o = o;
}

/* --------------------------------------------------------------- densify */

/* Store the values of entries k.. whose index is below end into blk, which
 * holds the elements from lo on; returns the first entry not stored. */
KERNEL_INLINE uint64_t place_body(int vt, unsigned iw, void *blk, uint64_t lo, uint64_t end, const void *ix,
                                  const void *v, uint64_t k, uint64_t n)
{
    for (; k < n && index_at(ix, iw, k) < end; k++) value_copy(vt, blk, index_at(ix, iw, k) - lo, v, k);
    return k;
}

/* Zero again what entries [k0, k) stored. */
KERNEL_INLINE void unplace_body(int vt, unsigned iw, void *blk, uint64_t lo, const void *ix, uint64_t k0, uint64_t k)
{
    for (; k0 < k; k0++) value_put(blk, value_size(vt), index_at(ix, iw, k0) - lo, 0);
}

#define DENSE_KERNELS(NAME, VT, IW)                                                                             \
    void gather_##NAME(const void *x, uint64_t n, uint64_t cap, void *oi, void *ov, gather_cursor *c)          \
    { gather_body(VT, IW, x, n, cap, oi, ov, c); }                                                              \
    static uint64_t place_##NAME(void *b, uint64_t lo, uint64_t end, const void *ix, const void *v, uint64_t k, \
                                 uint64_t n)                                                                    \
    { return place_body(VT, IW, b, lo, end, ix, v, k, n); }                                                     \
    static void unplace_##NAME(void *b, uint64_t lo, const void *ix, uint64_t k0, uint64_t k)                   \
    { unplace_body(VT, IW, b, lo, ix, k0, k); }
STREAM_TYPES(DENSE_KERNELS)

#define GATHER_ROW(NAME, VT, IW) STREAM_SLOT(VT, IW) = gather_##NAME,
#define PLACEMENT_ROW(NAME, VT, IW) STREAM_SLOT(VT, IW) = {place_##NAME, unplace_##NAME},
static gather_fn *const gather_portable[5][2] = {STREAM_TYPES(GATHER_ROW)};
static const placement placements[5][2] = {STREAM_TYPES(PLACEMENT_ROW)};

/* densify: the result is written one block of DENSIFY_BLOCK bytes (in L1)
 * at a time, so its memory is written in one sweep, each line once.  Two
 * ways (bench/RESULTS.md, Kernels and Transparent mode; kernel_bench
 * --scan, "densify" rows):
 *  - portable: zero the block in place and store its values (the values'
 *    elements are written twice, within L1).  Zeroing each gap between
 *    the sorted indices instead writes every element once, but the gaps'
 *    varying lengths mispredict a branch per entry.  Where one memset of
 *    the whole result runs much faster than memsets of blocks, the blocks
 *    take a few times a zero fill and a scatter at low density;
 *  - streaming (AVX2, results of DENSIFY_STREAM_MIN bytes and more,
 *    densify_streaming): each element written once, and no line of the
 *    result read before it is written. */
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

void stream_densify(const sv *s, void *dense)
{
    if (s->dense) {
        if (dense != s->val) memmove(dense, s->val, s->dim * s->vs);
        return;
    }
    densify_sparse(s, dense);
}

/* ------------------------------------------------------ counts and builds */

/* Eight independent 32-bit lanes per block (blocks short enough not to
 * overflow them) so that the compiler vectorises the count: one compare and
 * one subtract per element, at memory speed (bench/kernel_bench --scan). */
KERNEL_INLINE uint64_t count_nonzero_body(int vt, const void *x, uint64_t lo, uint64_t hi)
{
    uint64_t i = lo, n = 0;
    while (hi - i >= 8) {
        uint32_t lane[8] = {0};
        uint64_t end = i + ((hi - i) / 8 < (1u << 20) ? (hi - i) / 8 : (1u << 20)) * 8;
        for (; i < end; i += 8)
            for (int j = 0; j < 8; j++) lane[j] += value_nonzero(vt, x, i + (uint64_t)j);
        for (int j = 0; j < 8; j++) n += lane[j];
    }
    for (; i < hi; i++) n += value_nonzero(vt, x, i);
    return n;
}

uint64_t stream_count_nonzero(const sv *s, uint64_t lo, uint64_t hi)
{
    switch (s->vtype) {
    case SPARCML_FLOAT: return count_nonzero_body(SPARCML_FLOAT, s->val, lo, hi);
    case SPARCML_DOUBLE: return count_nonzero_body(SPARCML_DOUBLE, s->val, lo, hi);
    case SPARCML_INT32: return count_nonzero_body(SPARCML_INT32, s->val, lo, hi);
    default: return count_nonzero_body(SPARCML_INT64, s->val, lo, hi);
    }
}

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

static gather_fn *gather_for(int vtype, unsigned iw)
{
#ifdef STREAM_X86
    if (stream_avx2_runs()) return gather_avx2_for(vtype, iw);
#endif
    return gather_portable[vtype][iw == 8];
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

/* y[i] = x[i] != 0 ? x[i] : 0: the identity for integers, and -0.0 turns
 * into +0.0. */
KERNEL_INLINE void from_values_body(int vt, const void *x, void *y, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) value_copy_nonzero(vt, y, x, i);
}

sv stream_from_values(const sv *v, uint64_t nnz, void *outbuf)
{
    sv out;
    if (!sparcml_prefers_dense(v->dim, v->vtype, nnz)) {
        stream_gather_nonzero(v, nnz, outbuf, &out);
        return out;
    }
    out = stream_init(outbuf, v->dim, v->vtype, v->dim, 1);
    switch (v->vtype) {
    case SPARCML_FLOAT: from_values_body(SPARCML_FLOAT, v->val, out.val, v->dim); break;
    case SPARCML_DOUBLE: from_values_body(SPARCML_DOUBLE, v->val, out.val, v->dim); break;
    case SPARCML_INT32: from_values_body(SPARCML_INT32, v->val, out.val, v->dim); break;
    default: from_values_body(SPARCML_INT64, v->val, out.val, v->dim); break;
    }
    return out;
}
