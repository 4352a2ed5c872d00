/* stream_impl.h -- what the stream kernel files share (private to kernel/).
 *
 * Each kernel is written once, as an always_inline body over a value type
 * vt (enum sparcml_value_type) and an index width iw (4 or 8 bytes), and
 * instantiated per pair by a one-line wrapper that passes both as
 * constants: each instance compiles to the loop of its types, with no
 * per-element dispatch.  The element helpers below are where a body meets
 * its types; each is a switch on a constant that folds away.  Integer
 * values add as unsigned (two's complement wrap-around, never undefined
 * behaviour). */
#ifndef SPARCML_STREAM_IMPL_H
#define SPARCML_STREAM_IMPL_H

#include <stdint.h>
#include <string.h>

#include "kernel/stream.h"

#if defined(__GNUC__) && defined(__x86_64__)
#define STREAM_X86 1
#include <immintrin.h>
#endif

#define KERNEL_INLINE __attribute__((always_inline)) static inline
/* Inlined into AVX2 code: the body may use AVX2 instructions itself. */
#define KERNEL_INLINE_AVX2 __attribute__((target("avx2"), always_inline)) static inline
/* Shared by the kernel files only: bound within the library (no PLT). */
#define KERNEL_HIDDEN __attribute__((visibility("hidden")))

/* The (value type, index width) pairs of the kernels, X(NAME, VT, IW);
 * integer values are instantiated as unsigned. */
#define STREAM_TYPES(X)                                                                       \
    X(f32_i32, SPARCML_FLOAT, 4) X(f32_i64, SPARCML_FLOAT, 8) X(f64_i32, SPARCML_DOUBLE, 4)   \
    X(f64_i64, SPARCML_DOUBLE, 8) X(u32_i32, SPARCML_INT32, 4) X(u32_i64, SPARCML_INT32, 8)   \
    X(u64_i32, SPARCML_INT64, 4) X(u64_i64, SPARCML_INT64, 8)

/* A table's row for a pair: tables are indexed [value type][iw == 8]. */
#define STREAM_SLOT(VT, IW) [VT][(IW) == 8]

/* ------------------------------------------------------ element helpers */

KERNEL_INLINE unsigned value_size(int vt) { return vt == SPARCML_DOUBLE || vt == SPARCML_INT64 ? 8 : 4; }
KERNEL_INLINE int value_is_fp(int vt) { return vt == SPARCML_FLOAT || vt == SPARCML_DOUBLE; }

KERNEL_INLINE uint64_t index_at(const void *ix, unsigned iw, uint64_t i)
{
    return iw == 4 ? ((const uint32_t *)ix)[i] : ((const uint64_t *)ix)[i];
}

KERNEL_INLINE void index_put(void *ix, unsigned iw, uint64_t i, uint64_t x)
{
    if (iw == 4) ((uint32_t *)ix)[i] = (uint32_t)x;
    else ((uint64_t *)ix)[i] = x;
}

/* Storing the bits of value i of vs bytes (4 or 8): values are moved as
 * bits, which keeps every NaN payload. */
KERNEL_INLINE void value_put(void *v, unsigned vs, uint64_t i, uint64_t bits)
{
    uint32_t u = (uint32_t)bits;
    if (vs == 8) memcpy((char *)v + 8 * i, &bits, 8);
    else memcpy((char *)v + 4 * i, &u, 4);
}

/* d[o] = s[i], an assignment of the value type (bit for bit on x86). */
KERNEL_INLINE void value_copy(int vt, void *d, uint64_t o, const void *s, uint64_t i)
{
    switch (vt) {
    case SPARCML_FLOAT: ((float *)d)[o] = ((const float *)s)[i]; break;
    case SPARCML_DOUBLE: ((double *)d)[o] = ((const double *)s)[i]; break;
    case SPARCML_INT32: ((uint32_t *)d)[o] = ((const uint32_t *)s)[i]; break;
    default: ((uint64_t *)d)[o] = ((const uint64_t *)s)[i]; break;
    }
}

/* x[i] != 0 as C tests it: NaN and Inf are nonzeros, -0.0 is a zero. */
KERNEL_INLINE int value_nonzero(int vt, const void *x, uint64_t i)
{
    switch (vt) {
    case SPARCML_FLOAT: return ((const float *)x)[i] != 0;
    case SPARCML_DOUBLE: return ((const double *)x)[i] != 0;
    case SPARCML_INT32: return ((const uint32_t *)x)[i] != 0;
    default: return ((const uint64_t *)x)[i] != 0;
    }
}

/* y[i] = x[i] != 0 ? x[i] : 0 in the value type: -0.0 becomes +0.0. */
KERNEL_INLINE void value_copy_nonzero(int vt, void *y, const void *x, uint64_t i)
{
    switch (vt) {
    case SPARCML_FLOAT: ((float *)y)[i] = ((const float *)x)[i] != 0 ? ((const float *)x)[i] : 0; break;
    case SPARCML_DOUBLE: ((double *)y)[i] = ((const double *)x)[i] != 0 ? ((const double *)x)[i] : 0; break;
    case SPARCML_INT32: ((uint32_t *)y)[i] = ((const uint32_t *)x)[i]; break;
    default: ((uint64_t *)y)[i] = ((const uint64_t *)x)[i]; break;
    }
}

/* d[k] = left ? v[i] + d[k] : d[k] + v[i], a C addition of the value type
 * (the dense sums: the compiler orders and vectorises it). */
KERNEL_INLINE void value_add_into(int vt, void *d, uint64_t k, const void *v, uint64_t i, int left)
{
    switch (vt) {
    case SPARCML_FLOAT: {
        float *x = d;
        const float *y = v;
        x[k] = left ? y[i] + x[k] : x[k] + y[i];
        break;
    }
    case SPARCML_DOUBLE: {
        double *x = d;
        const double *y = v;
        x[k] = left ? y[i] + x[k] : x[k] + y[i];
        break;
    }
    case SPARCML_INT32: {
        uint32_t *x = d;
        const uint32_t *y = v;
        x[k] = left ? (uint32_t)(y[i] + x[k]) : (uint32_t)(x[k] + y[i]);
        break;
    }
    default: {
        uint64_t *x = d;
        const uint64_t *y = v;
        x[k] = left ? y[i] + x[k] : x[k] + y[i];
        break;
    }
    }
}

/* a + b of one pair of values, a the first operand of the x86 addition:
 * where both are NaN it returns a's (quieted), so that the merge's sums
 * do not depend on which of its loops adds a pair.  Written in assembly
 * because the compiler may swap the operands of a C addition (it folds a
 * load into the second). */
KERNEL_INLINE float merge_add_f32(float a, float b)
{
#ifdef STREAM_X86
    __asm__("addss %1, %0" : "+x"(a) : "xm"(b));
    return a;
#else
    return a + b;
#endif
}

KERNEL_INLINE double merge_add_f64(double a, double b)
{
#ifdef STREAM_X86
    __asm__("addsd %1, %0" : "+x"(a) : "xm"(b));
    return a;
#else
    return a + b;
#endif
}

/* out[o] = a[i] + b[j], the merge's sum (merge_add_f32). */
KERNEL_INLINE void merge_add_to(int vt, void *out, uint64_t o, const void *a, uint64_t i, const void *b, uint64_t j)
{
    switch (vt) {
    case SPARCML_FLOAT: ((float *)out)[o] = merge_add_f32(((const float *)a)[i], ((const float *)b)[j]); break;
    case SPARCML_DOUBLE: ((double *)out)[o] = merge_add_f64(((const double *)a)[i], ((const double *)b)[j]); break;
    case SPARCML_INT32: ((uint32_t *)out)[o] = ((const uint32_t *)a)[i] + ((const uint32_t *)b)[j]; break;
    default: ((uint64_t *)out)[o] = ((const uint64_t *)a)[i] + ((const uint64_t *)b)[j]; break;
    }
}

/* The bits of a value, and of b, a or their sum as the masks ta, tb (all
 * ones or zero: a's index not above b's, b's not above a's) choose. */
KERNEL_INLINE uint64_t f32_bits(float x) { uint32_t u; return memcpy(&u, &x, 4), u; }
KERNEL_INLINE uint64_t f64_bits(double x) { uint64_t u; return memcpy(&u, &x, 8), u; }
KERNEL_INLINE uint64_t pick_bits(uint64_t ba, uint64_t bb, uint64_t bs, uint64_t ta, uint64_t tb)
{
    uint64_t pick = bb ^ ((ba ^ bb) & ta);
    return pick ^ ((bs ^ pick) & ta & tb);
}

/* The bits of b[j], a[i] or a[i] + b[j] (the merge's sum) as ta and tb
 * choose, the values read in their type: a float read as an integer would
 * reach the addition through memory. */
KERNEL_INLINE uint64_t merge_pick(int vt, const void *a, uint64_t i, const void *b, uint64_t j, uint64_t ta,
                                  uint64_t tb)
{
    float fa, fb;
    double da, db;
    uint64_t ua, ub;
    switch (vt) {
    case SPARCML_FLOAT:
        fa = ((const float *)a)[i], fb = ((const float *)b)[j];
        return pick_bits(f32_bits(fa), f32_bits(fb), f32_bits(merge_add_f32(fa, fb)), ta, tb);
    case SPARCML_DOUBLE:
        da = ((const double *)a)[i], db = ((const double *)b)[j];
        return pick_bits(f64_bits(da), f64_bits(db), f64_bits(merge_add_f64(da, db)), ta, tb);
    case SPARCML_INT32:
        ua = ((const uint32_t *)a)[i], ub = ((const uint32_t *)b)[j];
        return pick_bits(ua, ub, (uint32_t)(ua + ub), ta, tb);
    default:
        ua = ((const uint64_t *)a)[i], ub = ((const uint64_t *)b)[j];
        return pick_bits(ua, ub, ua + ub, ta, tb);
    }
}

/* --------------------------------------------- kernels between the files */

/* Sparse a + sparse b -> (oi, ov); returns the number of entries.  A
 * merge needs room for an + bn entries in oi and in ov (it may write
 * beyond the union before compacting); a scalar merge only for the union. */
#define MERGE_PARAMS                                                                                  \
    const void *ai, const void *av, uint64_t an, const void *bi, const void *bv, uint64_t bn, void *oi, \
        void *ov
#define MERGE_ARGS ai, av, an, bi, bv, bn, oi, ov
typedef uint64_t merge_fn(MERGE_PARAMS);

/* The portable merges (stream_merge.c), fallbacks of the AVX2 ones. */
#define STREAM_DECLARE_MERGE(NAME, VT, IW) KERNEL_HIDDEN merge_fn merge_##NAME, merge_scalar_##NAME;
STREAM_TYPES(STREAM_DECLARE_MERGE)

/* The dense sweeps (stream_dense.c).  Where the gather is: the next
 * element to read and the next entry to write. */
typedef struct gather_cursor {
    uint64_t i, o;
} gather_cursor;

/* The nonzeros of x[c->i .. n) to (oi, ov) from entry c->o on, at most
 * cap entries in all; c moves on to where it stopped. */
typedef void gather_fn(const void *x, uint64_t n, uint64_t cap, void *oi, void *ov, gather_cursor *c);
#define STREAM_DECLARE_GATHER(NAME, VT, IW) KERNEL_HIDDEN gather_fn gather_##NAME;
STREAM_TYPES(STREAM_DECLARE_GATHER)

/* Store the values of entries k.. whose index is below end into blk, which
 * holds the elements from lo on, returning the first entry not stored;
 * unplace zeroes again what entries [k0, k) stored. */
typedef struct placement {
    uint64_t (*place)(void *blk, uint64_t lo, uint64_t end, const void *ix, const void *v, uint64_t k, uint64_t n);
    void (*unplace)(void *blk, uint64_t lo, const void *ix, uint64_t k0, uint64_t k);
} placement;

/* Bytes of the blocks a densify writes at a time (in L1). */
#define DENSIFY_BLOCK 4096

#ifdef STREAM_X86
/* The AVX2 merge for (vt, iw) (stream_merge_avx2.c): with `exact`, of the
 * scalar merge's room. */
KERNEL_HIDDEN merge_fn *vmerge_for(int vt, unsigned iw, int exact);

/* Row m: the lanes whose bit is set in m, in order, as nibbles
 * (stream_merge_avx2.c). */
KERNEL_HIDDEN extern const uint32_t vmerge_kept_lanes[256];

/* The lanes of x whose bit is set in the 8-bit `keep`, moved to the front. */
KERNEL_INLINE_AVX2 __m256i vmerge_compact(__m256i x, unsigned keep)
{
    __m256i order = _mm256_srlv_epi32(_mm256_set1_epi32((int)vmerge_kept_lanes[keep]),
                                      _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
    return _mm256_permutevar8x32_epi32(x, order);
}

/* The AVX2 sweeps (stream_dense_avx2.c): the gather for (vt, iw), and the
 * densify of n entries (ix, v) into dim values of vs bytes at d by
 * streaming stores. */
KERNEL_HIDDEN gather_fn *gather_avx2_for(int vt, unsigned iw);
KERNEL_HIDDEN void densify_streaming(char *d, uint64_t dim, unsigned vs, const placement *pl, const void *ix,
                                     const void *v, uint64_t n);
#endif

#endif
