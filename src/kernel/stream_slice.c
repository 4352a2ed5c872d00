/* stream_slice.c -- cutting streams into ranges and joining them again.
 *
 * A slice re-bases a range of indices to 0 (the split algorithms' parts),
 * a range keeps them (pipelined chunks); concat joins consecutive parts
 * into one stream; presence bitmaps record which indices a union holds,
 * and select turns a dense sum back into the sparse stream of those
 * indices.  All copy values as they are: nothing here adds. */
#include "config.h"

#include "kernel/stream_impl.h"

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
 * step (an index a step was slower: bench/RESULTS.md, Kernels, slicing). */
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

/* The bounds of P nearly equal ranges (stream.h). */
void stream_split_bounds(uint64_t dim, int P, uint64_t *offsets)
{
    uint64_t base = dim / (uint64_t)P, extra = dim % (uint64_t)P;
    for (int r = 0; r <= P; r++)
        offsets[r] = (uint64_t)r * base + ((uint64_t)r < extra ? (uint64_t)r : extra);
}
