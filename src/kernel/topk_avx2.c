/* topk_avx2.c -- the AVX2 back end of the top-k selection: the filters of
 * one block of values (topk_impl.h), which find the same candidates in
 * the same order as the portable ones of topk.c, 128 bytes of values a
 * step, and leave the block's last values to them.  topk.c runs them only
 * where stream_avx2_runs says so; each leaves the upper halves of the
 * vector registers clean (vzeroupper). */
#include "config.h"

#include "kernel/topk_impl.h"

#ifdef TOPK_X86

/* The lanes of x whose magnitude (the bits without the sign, `abs`) is
 * above lim: signed compares, which order keys (below 2^63 or 2^31). */
KERNEL_INLINE_AVX2 __m256i lanes_above(int vt, __m256i x, __m256i abs, __m256i lim)
{
    x = _mm256_and_si256(x, abs);
    return is_f64(vt) ? _mm256_cmpgt_epi64(x, lim) : _mm256_cmpgt_epi32(x, lim);
}

/* A compare's lanes as the low 8 (float) or 4 (double) bits. */
KERNEL_INLINE_AVX2 uint64_t lanes_mask(int vt, __m256i c)
{
    int mask = is_f64(vt) ? _mm256_movemask_pd(_mm256_castsi256_pd(c)) : _mm256_movemask_ps(_mm256_castsi256_ps(c));
    return (unsigned)mask;
}

/* The values of the 4 vectors at x whose key passes the limit lim = t - 1,
 * as a mask of 32 (float) or 16 (double) bits, bit j for value j; 0, after
 * one test of the 4 compares, where none passed (most steps). */
KERNEL_INLINE_AVX2 uint64_t passed4(int vt, const void *x, __m256i abs, __m256i lim)
{
    const __m256i *v = x;
    const unsigned lanes = is_f64(vt) ? 4 : 8;
    __m256i c0 = lanes_above(vt, _mm256_loadu_si256(v), abs, lim);
    __m256i c1 = lanes_above(vt, _mm256_loadu_si256(v + 1), abs, lim);
    __m256i c2 = lanes_above(vt, _mm256_loadu_si256(v + 2), abs, lim);
    __m256i c3 = lanes_above(vt, _mm256_loadu_si256(v + 3), abs, lim);
    __m256i any = _mm256_or_si256(_mm256_or_si256(c0, c1), _mm256_or_si256(c2, c3));
    if (_mm256_testz_si256(any, any)) return 0;
    return lanes_mask(vt, c0) | lanes_mask(vt, c1) << lanes | lanes_mask(vt, c2) << 2 * lanes
           | lanes_mask(vt, c3) << 3 * lanes;
}

/* The values x[j] whose bit j is set in `passed`, appended at ci[m] (their
 * index base + j) and cv[m] (their bits); returns the new m. */
KERNEL_INLINE uint64_t push_passed(int vt, const void *x, uint64_t passed, uint64_t base, uint64_t *ci, void *cv,
                                   uint64_t m)
{
    for (; passed; passed &= passed - 1) {
        unsigned j = (unsigned)__builtin_ctzll(passed);
        ci[m] = base + j;
        if (is_f64(vt)) ((uint64_t *)cv)[m++] = ((const uint64_t *)x)[j];
        else ((uint32_t *)cv)[m++] = ((const uint32_t *)x)[j];
    }
    return m;
}

/* The filter of vt's values: whole steps of 4 vectors in lanes, the rest
 * by the portable filter. */
KERNEL_INLINE_AVX2 uint64_t filter_lanes(int vt, const void *x, uint64_t base, uint64_t len, uint64_t t,
                                         uint64_t *ci, void *cv)
{
    const unsigned vs = is_f64(vt) ? 8 : 4, step = 128 / vs;
    const __m256i abs = is_f64(vt) ? _mm256_set1_epi64x(INT64_MAX) : _mm256_set1_epi32(INT32_MAX);
    const __m256i lim = is_f64(vt) ? _mm256_set1_epi64x((long long)(t - 1)) : _mm256_set1_epi32((int)(uint32_t)(t - 1));
    const char *v = x;
    uint64_t m = 0, i = 0, whole = len / step * step;
    for (; i < whole; i += step) {
        uint64_t passed = passed4(vt, v + i * vs, abs, lim);
        if (passed) m = push_passed(vt, v + i * vs, passed, base + i, ci, cv, m);
    }
    _mm256_zeroupper(); /* GCC omits it here; dirty upper halves slow the SSE code after */
    return m + (is_f64(vt) ? filter_f64 : filter_f32)(v + i * vs, base + i, len - i, t, ci + m, (char *)cv + m * vs);
}

__attribute__((target("avx2"))) uint64_t filter_f32_avx2(const void *x, uint64_t base, uint64_t len, uint64_t t,
                                                         uint64_t *ci, void *cv)
{ return filter_lanes(SPARCML_FLOAT, x, base, len, t, ci, cv); }
__attribute__((target("avx2"))) uint64_t filter_f64_avx2(const void *x, uint64_t base, uint64_t len, uint64_t t,
                                                         uint64_t *ci, void *cv)
{ return filter_lanes(SPARCML_DOUBLE, x, base, len, t, ci, cv); }

#endif
