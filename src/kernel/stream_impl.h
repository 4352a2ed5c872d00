/* stream_impl.h -- what the kernel files share (private to kernel/): the
 * stream files of every concern (format, slicing, merge, dense sweeps),
 * QSGD and top-k.  What only the merge's or the dense sweeps' files share
 * is in stream_merge_impl.h and stream_dense_impl.h.
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

/* The floating-point kernels (top-k, the residual's) know float and
 * double only: anything else is float's. */
KERNEL_INLINE int is_f64(int vt) { return vt == SPARCML_DOUBLE; }

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

/* ------------------------------------------- the AVX2 lanes' compaction */

/* Of the merge's and the dense gather's AVX2 loops. */
#ifdef STREAM_X86
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
#endif

#endif
