/* qsgd_avx2.c -- the AVX2 back end of the QSGD quantizer.
 *
 * Each function here does in lanes what a loop of qsgd.c does one value at
 * a time, with the same operations in the same precision, so that it
 * writes the same codes and values bit for bit (unit-tested against the
 * portable loops); qsgd.c calls them only where stream_avx2_runs says so,
 * on whole groups of 8 values, and each leaves the upper halves of the
 * vector registers clean (vzeroupper). */
#include "config.h"

#include <float.h>

#include "kernel/qsgd_impl.h"

#ifdef QSGD_X86

/* The 8 codes of 2 or 4 bits from value first + i on (a multiple of 8),
 * lane j shifted right by shift[j]: the step's codes are one load of
 * constant size (no call). */
__attribute__((target("avx2"), always_inline)) static inline __m256i step_codes(const unsigned char *codes,
                                                                                uint64_t first, uint64_t i, int bits,
                                                                                __m256i shift)
{
    const unsigned char *at = codes + (first + i) * (uint64_t)bits / 8;
    uint32_t word;
    uint16_t half;
    if (bits == 4) memcpy(&word, at, 4);
    else memcpy(&half, at, 2), word = half;
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)word), shift), _mm256_set1_epi32((1 << bits) - 1));
}

/* table[c] for each lane's code c, the table's 16 entries in two
 * registers (4-bit codes: the high one where bit 3 is set). */
__attribute__((target("avx2"), always_inline)) static inline __m256 lookup16(__m256 low, __m256 high, __m256i c,
                                                                             int bits)
{
    __m256 x = _mm256_permutevar8x32_ps(low, c);
    if (bits == 2) return x;
    return _mm256_blendv_ps(x, _mm256_permutevar8x32_ps(high, c), _mm256_castsi256_ps(_mm256_slli_epi32(c, 28)));
}

/* v[i] for i in [lo, hi), a multiple of 8 codes of 2 or 4 bits starting
 * at a byte (first + lo a multiple of 8), 8 values a step, through the
 * table of the bucket's levels: the same entries, so the same bits. */
__attribute__((target("avx2"), always_inline)) static inline void decode_steps_f32(float *v, uint64_t lo, uint64_t hi,
                                                                                __m256 low, __m256 high, int bits,
                                                                                uint64_t first,
                                                                                const unsigned char *codes)
{
    const __m256i shift = bits == 4 ? _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)
                                    : _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const unsigned char *at = codes + (first + lo) * (uint64_t)bits / 8; /* one counter for codes and values */
    for (uint64_t i = 0; i < hi - lo; i += 8)
        _mm256_storeu_ps(v + lo + i, lookup16(low, high, step_codes(at, 0, i, bits, shift), bits));
}

/* The loop once per width, so that its shifts and masks are constants. */
__attribute__((target("avx2"))) void decode_lanes_f32(float *v, uint64_t lo, uint64_t hi, const float *level,
                                                             int bits, uint64_t first, const unsigned char *codes)
{
    const __m256 low = _mm256_loadu_ps(level), high = _mm256_loadu_ps(level + 8);
    if (bits == 4) decode_steps_f32(v, lo, hi, low, high, 4, first, codes);
    else decode_steps_f32(v, lo, hi, low, high, 2, first, codes);
    _mm256_zeroupper(); /* as the stream kernels' AVX2 loops */
}

/* decode_lanes_f64's loop for one width: half[0] and [1] are the table's
 * low halves, half[2] and [3] its high halves. */
__attribute__((target("avx2"), always_inline)) static inline void decode_steps_f64(double *v, uint64_t lo, uint64_t hi,
                                                                                const __m256 *half, int bits,
                                                                                uint64_t first,
                                                                                const unsigned char *codes)
{
    const __m256i shift = bits == 4 ? _mm256_setr_epi32(0, 4, 16, 20, 8, 12, 24, 28)
                                    : _mm256_setr_epi32(0, 2, 8, 10, 4, 6, 12, 14);
    for (uint64_t i = lo; i < hi; i += 8) {
        __m256i c = step_codes(codes, first, i, bits, shift);
        __m256 l = lookup16(half[0], half[1], c, bits), h = lookup16(half[2], half[3], c, bits);
        _mm256_storeu_pd(v + i, _mm256_castps_pd(_mm256_unpacklo_ps(l, h)));
        _mm256_storeu_pd(v + i + 4, _mm256_castps_pd(_mm256_unpackhi_ps(l, h)));
    }
}

/* The 32-bit halves of doubles level[0..7], lows in the first register,
 * highs in the second, each in the doubles' order. */
__attribute__((target("avx2"), always_inline)) static inline void split_halves(const double *level, __m256 *low,
                                                                               __m256 *high)
{
    __m256 a = _mm256_loadu_ps((const float *)(const void *)level);
    __m256 b = _mm256_loadu_ps((const float *)(const void *)(level + 4));
    /* per 128-bit lane: doubles 0 1 4 5 (first lane) and 2 3 6 7 */
    __m256d lo = _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
    __m256d hi = _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
    *low = _mm256_castpd_ps(_mm256_permute4x64_pd(lo, _MM_SHUFFLE(3, 1, 2, 0)));
    *high = _mm256_castpd_ps(_mm256_permute4x64_pd(hi, _MM_SHUFFLE(3, 1, 2, 0)));
}

/* As decode_lanes_f32 for doubles: the table's low and high 32-bit halves
 * are two tables of 16 lanes, looked up by the same codes, and interleaved
 * back into doubles.  The lanes take the codes of a step in the order 0 1 4
 * 5 2 3 6 7, the one in which interleaving the halves of each 128-bit lane
 * yields values 0-3 and 4-7.  The halves are split in registers: a round
 * trip of the table through memory by pieces would wait for its stores. */
__attribute__((target("avx2"))) void decode_lanes_f64(double *v, uint64_t lo, uint64_t hi, const double *level,
                                                             int bits, uint64_t first, const unsigned char *codes)
{
    __m256 half[4];
    split_halves(level, &half[0], &half[2]);
    split_halves(level + 8, &half[1], &half[3]);
    if (bits == 4) decode_steps_f64(v, lo, hi, half, 4, first, codes);
    else decode_steps_f64(v, lo, hi, half, 2, first, codes);
    _mm256_zeroupper();
}

/* The random numbers of 8 values i .. i + 7 of a bucket, as draw()
 * computes them: ctr holds (uint32_t)bk + i * WEYL32 in each lane, high
 * the key's high half. */
__attribute__((target("avx2"), always_inline)) static inline __m256i draw_lanes(__m256i ctr, __m256i high)
{
    __m256i x = _mm256_xor_si256(ctr, high);
    x = _mm256_mullo_epi32(_mm256_xor_si256(x, _mm256_srli_epi32(x, 16)), _mm256_set1_epi32((int)HASH32_M1));
    x = _mm256_mullo_epi32(_mm256_xor_si256(x, _mm256_srli_epi32(x, 15)), _mm256_set1_epi32((int)HASH32_M2));
    return _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
}

/* draw_lanes' counter for values lo .. lo + 7 of the bucket keyed bk. */
__attribute__((target("avx2"), always_inline)) static inline __m256i draw_counter(uint64_t bk, uint64_t lo)
{
    return _mm256_add_epi32(_mm256_set1_epi32((int)((uint32_t)bk + (uint32_t)lo * WEYL32)),
                            _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)WEYL32)));
}

/* Codes of 8 values (lanes below 2^bits) packed as they lie in the codes,
 * value j at bit j * bits, and stored (one store of constant size). */
__attribute__((target("avx2"), always_inline)) static inline void store_codes8(unsigned char *at, __m256i c, int bits)
{
    uint64_t word;
    c = _mm256_sllv_epi32(c, _mm256_setr_epi32(0, bits, 2 * bits, 3 * bits, 0, bits, 2 * bits, 3 * bits));
    c = _mm256_or_si256(c, _mm256_shuffle_epi32(c, _MM_SHUFFLE(1, 0, 3, 2)));
    c = _mm256_or_si256(c, _mm256_shuffle_epi32(c, _MM_SHUFFLE(2, 3, 0, 1)));
    word = (uint32_t)_mm256_extract_epi32(c, 0) | (uint64_t)(uint32_t)_mm256_extract_epi32(c, 4) << 4 * bits;
    if (bits == 2) { uint16_t w = (uint16_t)word; memcpy(at, &w, 2); }
    else if (bits == 4) { uint32_t w = (uint32_t)word; memcpy(at, &w, 4); }
    else memcpy(at, &word, 8);
}

/* The codes of 32 values, 8 a register, packed and stored: narrowed to
 * bytes in value order, then pairs of 4-bit codes (c + 16 c') or quads of
 * 2-bit codes folded by multiply-adds of constant weights. */
__attribute__((target("avx2"), always_inline)) static inline void store_codes32(unsigned char *at, __m256i c0, __m256i c1,
                                                                                __m256i c2, __m256i c3, int bits)
{
    const __m256i even_odd = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    __m256i b = _mm256_packus_epi16(_mm256_packus_epi32(c0, c1), _mm256_packus_epi32(c2, c3));
    b = _mm256_permutevar8x32_epi32(b, even_odd);
    if (bits == 8) {
        _mm256_storeu_si256((__m256i *)(void *)at, b);
    } else if (bits == 4) {
        b = _mm256_maddubs_epi16(b, _mm256_set1_epi16(0x1001)); /* bytes 1, 16 */
        b = _mm256_permute4x64_epi64(_mm256_packus_epi16(b, b), _MM_SHUFFLE(3, 1, 2, 0));
        _mm_storeu_si128((__m128i *)(void *)at, _mm256_castsi256_si128(b));
    } else {
        b = _mm256_madd_epi16(_mm256_maddubs_epi16(b, _mm256_set1_epi16(0x0401)), _mm256_set1_epi32(0x00100001));
        b = _mm256_packus_epi32(b, b);
        b = _mm256_packus_epi16(b, b);
        _mm_storel_epi64((__m128i *)(void *)at, _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(b, even_odd)));
    }
}

/* The level: l = the integer part of x, at most s, plus one where `up`
 * (all ones) and l < s. */
__attribute__((target("avx2"), always_inline)) static inline __m256i round_level(__m256i l, __m256i up, __m256i si)
{
    return _mm256_sub_epi32(_mm256_min_epi32(l, si), _mm256_and_si256(up, _mm256_cmpgt_epi32(si, l)));
}

/* What codes8_f32 needs of a bucket, in lanes. */
typedef struct bucket_f32 {
    __m256 f, scale, s, grid, magnitude;
    __m256i si, high, ctr_step; /* ctr_step: draw_lanes' counter, 8 values on */
    int has_scale, sign_at;
} bucket_f32;

__attribute__((target("avx2"), always_inline)) static inline bucket_f32 bucket_lanes_f32(float f, float scale,
                                                                                         unsigned s, int bits,
                                                                                         uint64_t bk)
{
    return (bucket_f32){.f = _mm256_set1_ps(f), .scale = _mm256_set1_ps(scale), .s = _mm256_set1_ps((float)s),
                        .grid = _mm256_set1_ps(0x1p24f),
                        .magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MAX)),
                        .si = _mm256_set1_epi32((int)s), .high = _mm256_set1_epi32((int)(uint32_t)(bk >> 32)),
                        .ctr_step = _mm256_set1_epi32((int)(8 * WEYL32)), .has_scale = scale > 0, .sign_at = bits - 1};
}

/* The codes of 8 floats as encode_codes_f32 computes them (the same float
 * operations, so the same codes); ctr moves on to the next 8. */
__attribute__((target("avx2"), always_inline)) static inline __m256i codes8_f32(const float *v, __m256i *ctr,
                                                                                const bucket_f32 *b)
{
    __m256 v8 = _mm256_loadu_ps(v), a = _mm256_and_ps(v8, b->magnitude), x = _mm256_mul_ps(a, b->f);
    if (b->has_scale) x = _mm256_blendv_ps(x, b->s, _mm256_cmp_ps(a, b->scale, _CMP_EQ_OQ));
    __m256i l = _mm256_cvttps_epi32(x);
    __m256 frac = _mm256_sub_ps(x, _mm256_cvtepi32_ps(l));
    __m256 u = _mm256_cvtepi32_ps(_mm256_srli_epi32(draw_lanes(*ctr, b->high), 8));
    __m256i up = _mm256_castps_si256(_mm256_cmp_ps(u, _mm256_mul_ps(frac, b->grid), _CMP_LT_OQ));
    *ctr = _mm256_add_epi32(*ctr, b->ctr_step);
    return _mm256_or_si256(round_level(l, up, b->si),
                           _mm256_slli_epi32(_mm256_srli_epi32(_mm256_castps_si256(v8), 31), b->sign_at));
}

/* 4 lanes of 32-bit random numbers r as doubles r * 2^-32: r - 2^31
 * converts exactly as a signed integer, and scaling and adding one half
 * are exact, so these are encode_codes_f64's numbers. */
__attribute__((target("avx2"), always_inline)) static inline __m256d unit_interval(__m128i r)
{
    __m256d x = _mm256_cvtepi32_pd(_mm_xor_si128(r, _mm_set1_epi32(INT32_MIN)));
    return _mm256_add_pd(_mm256_mul_pd(x, _mm256_set1_pd(0x1p-32)), _mm256_set1_pd(0.5));
}

/* What codes8_f64 needs of a bucket, in lanes. */
typedef struct bucket_f64 {
    __m256d f, scale, s, magnitude;
    __m256i si, high, ctr_step, odd;
    int has_scale, sign_at;
} bucket_f64;

__attribute__((target("avx2"), always_inline)) static inline bucket_f64 bucket_lanes_f64(double f, double scale,
                                                                                         unsigned s, int bits,
                                                                                         uint64_t bk)
{
    return (bucket_f64){.f = _mm256_set1_pd(f), .scale = _mm256_set1_pd(scale), .s = _mm256_set1_pd(s),
                        .magnitude = _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MAX)),
                        .si = _mm256_set1_epi32((int)s), .high = _mm256_set1_epi32((int)(uint32_t)(bk >> 32)),
                        .ctr_step = _mm256_set1_epi32((int)(8 * WEYL32)), .odd = _mm256_setr_epi32(1, 3, 5, 7, 1, 3, 5, 7),
                        .has_scale = scale > 0, .sign_at = bits - 1};
}

/* The integer parts of x = a f (or s for the bucket's largest a), and
 * whether u is below their fractional parts, for 4 magnitudes. */
__attribute__((target("avx2"), always_inline)) static inline __m128i level_f64(__m256d a, __m256d u,
                                                                               const bucket_f64 *b, __m128i *up)
{
    __m256d x = _mm256_mul_pd(a, b->f);
    if (b->has_scale) x = _mm256_blendv_pd(x, b->s, _mm256_cmp_pd(a, b->scale, _CMP_EQ_OQ));
    __m128i l = _mm256_cvttpd_epi32(x);
    __m256i below = _mm256_castpd_si256(_mm256_cmp_pd(u, _mm256_sub_pd(x, _mm256_cvtepi32_pd(l)), _CMP_LT_OQ));
    *up = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(below, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)));
    return l;
}

/* As codes8_f32 for doubles, in double precision (encode_codes_f64's
 * operations), 4 values a register. */
__attribute__((target("avx2"), always_inline)) static inline __m256i codes8_f64(const double *v, __m256i *ctr,
                                                                                const bucket_f64 *b)
{
    __m256d x0 = _mm256_loadu_pd(v), x1 = _mm256_loadu_pd(v + 4);
    __m256i r = draw_lanes(*ctr, b->high);
    __m128i up0, up1;
    __m128i l0 = level_f64(_mm256_and_pd(x0, b->magnitude), unit_interval(_mm256_castsi256_si128(r)), b, &up0);
    __m128i l1 = level_f64(_mm256_and_pd(x1, b->magnitude), unit_interval(_mm256_extracti128_si256(r, 1)), b, &up1);
    __m256i sign = _mm256_set_m128i(_mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(x1), b->odd)),
                                    _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(x0), b->odd)));
    *ctr = _mm256_add_epi32(*ctr, b->ctr_step);
    return _mm256_or_si256(round_level(_mm256_set_m128i(l1, l0), _mm256_set_m128i(up1, up0), b->si),
                           _mm256_slli_epi32(_mm256_srli_epi32(sign, 31), b->sign_at));
}

/* The codes of the 8 values from v[i] (codes8_f32, codes8_f64; b: the
 * bucket's lanes of vt's type). */
__attribute__((target("avx2"), always_inline)) static inline __m256i codes8(int vt, const void *v, uint64_t i,
                                                                            __m256i *ctr, const void *b)
{
    return vt == SPARCML_FLOAT ? codes8_f32((const float *)v + i, ctr, b) : codes8_f64((const double *)v + i, ctr, b);
}

/* Values [lo, hi) of a bucket, a multiple of 8 from a byte of codes on
 * (first + lo a multiple of 8), in lanes, their random numbers too: 32 a
 * step, then 8, into the zeroed codes. */
__attribute__((target("avx2"), always_inline)) static inline void encode_steps(int vt, const void *v, uint64_t lo,
                                                                               uint64_t hi, const void *b, int bits,
                                                                               uint64_t first, uint64_t bk,
                                                                               unsigned char *codes)
{
    __m256i ctr = draw_counter(bk, lo);
    uint64_t i = lo;
    for (; i + 32 <= hi; i += 32) {
        __m256i c0 = codes8(vt, v, i, &ctr, b), c1 = codes8(vt, v, i + 8, &ctr, b);
        __m256i c2 = codes8(vt, v, i + 16, &ctr, b), c3 = codes8(vt, v, i + 24, &ctr, b);
        store_codes32(codes + (first + i) * (uint64_t)bits / 8, c0, c1, c2, c3, bits);
    }
    for (; i < hi; i += 8) store_codes8(codes + (first + i) * (uint64_t)bits / 8, codes8(vt, v, i, &ctr, b), bits);
    _mm256_zeroupper();
}

__attribute__((target("avx2"))) void encode_lanes_f32(const float *v, uint64_t lo, uint64_t hi, float f, float scale,
                                                      unsigned s, int bits, uint64_t first, uint64_t bk,
                                                      unsigned char *codes)
{
    const bucket_f32 b = bucket_lanes_f32(f, scale, s, bits, bk);
    encode_steps(SPARCML_FLOAT, v, lo, hi, &b, bits, first, bk, codes);
}

__attribute__((target("avx2"))) void encode_lanes_f64(const double *v, uint64_t lo, uint64_t hi, double f,
                                                      double scale, unsigned s, int bits, uint64_t first, uint64_t bk,
                                                      unsigned char *codes)
{
    const bucket_f64 b = bucket_lanes_f64(f, scale, s, bits, bk);
    encode_steps(SPARCML_DOUBLE, v, lo, hi, &b, bits, first, bk, codes);
}

/* The largest |v[i]| for i in [0, n), n a multiple of the lanes (32
 * bytes), and whether every one is finite (|v| <= the largest finite value
 * fails for infinities and NaNs).  A maximum does not round, so it is
 * bucket_scale's in any order.  PS/PD: the intrinsics' suffix, SIGN: the
 * value's sign bit alone in a lane.  A macro: the loop is the same over
 * __m256 and __m256d, whose intrinsics differ in their suffix only, which
 * a function over vt could only reach by a branch around each of them. */
#define MAGNITUDE_LANES(NAME, VT, V256, PS, LANES, VMAX, SIGN)                                                 \
    __attribute__((target("avx2"))) VT magnitude_##NAME(const VT *v, uint64_t n, int *finite)           \
    {                                                                                                          \
        const V256 magnitude = _mm256_castsi256_##PS(SIGN), largest = _mm256_set1_##PS(VMAX);                  \
        V256 m = _mm256_setzero_##PS(), ok = _mm256_cmp_##PS(m, m, _CMP_EQ_OQ);                                \
        VT lane[LANES], max = 0;                                                                               \
        for (uint64_t i = 0; i < n; i += LANES) {                                                              \
            V256 a = _mm256_andnot_##PS(magnitude, _mm256_loadu_##PS(v + i));                                  \
            ok = _mm256_and_##PS(ok, _mm256_cmp_##PS(a, largest, _CMP_LE_OQ));                                \
            m = _mm256_max_##PS(m, a);                                                                         \
        }                                                                                                      \
        *finite = _mm256_movemask_##PS(ok) == (1 << LANES) - 1;                                                \
        _mm256_storeu_##PS(lane, m);                                                                           \
        _mm256_zeroupper();                                                                                    \
        for (int j = 0; j < LANES; j++) max = lane[j] > max ? lane[j] : max;                                   \
        return max;                                                                                            \
    }

MAGNITUDE_LANES(f32, float, __m256, ps, 8, FLT_MAX, _mm256_set1_epi32(INT32_MIN))
MAGNITUDE_LANES(f64, double, __m256d, pd, 4, DBL_MAX, _mm256_set1_epi64x(INT64_MIN))

/* v[i] for i in [lo, hi), a multiple of 8, from 8-bit codes c[i], 8 a
 * step as level_value_f32 computes them: l * step, or scale where l = s,
 * the sign bit moved to the float's. */
__attribute__((target("avx2"))) void decode8_lanes_f32(float *v, uint64_t lo, uint64_t hi, float scale,
                                                              float step, unsigned s, const unsigned char *c)
{
    const __m256i low7 = _mm256_set1_epi32(0x7f), si = _mm256_set1_epi32((int)s), top = _mm256_set1_epi32(INT32_MIN);
    const __m256 stepv = _mm256_set1_ps(step), scalev = _mm256_set1_ps(scale);
    for (uint64_t i = lo; i < hi; i += 8) {
        __m256i code = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(c + i)));
        __m256i l = _mm256_and_si256(code, low7);
        __m256 m = _mm256_blendv_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(l), stepv), scalev,
                                    _mm256_castsi256_ps(_mm256_cmpeq_epi32(l, si)));
        _mm256_storeu_ps(v + i, _mm256_xor_ps(m, _mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(code, 24), top))));
    }
    _mm256_zeroupper();
}

/* As decode8_lanes_f32 for doubles, 4 a step. */
__attribute__((target("avx2"))) void decode8_lanes_f64(double *v, uint64_t lo, uint64_t hi, double scale,
                                                              double step, unsigned s, const unsigned char *c)
{
    const __m128i low7 = _mm_set1_epi32(0x7f), si = _mm_set1_epi32((int)s);
    const __m256d stepv = _mm256_set1_pd(step), scalev = _mm256_set1_pd(scale);
    for (uint64_t i = lo; i < hi; i += 4) {
        uint32_t word;
        memcpy(&word, c + i, 4);
        __m128i code = _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)word)), l = _mm_and_si128(code, low7);
        __m256d m = _mm256_blendv_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(l), stepv), scalev,
                                     _mm256_castsi256_pd(_mm256_cvtepi32_epi64(_mm_cmpeq_epi32(l, si))));
        __m256i sign = _mm256_slli_epi64(_mm256_cvtepu32_epi64(_mm_srli_epi32(code, 7)), 63);
        _mm256_storeu_pd(v + i, _mm256_xor_pd(m, _mm256_castsi256_pd(sign)));
    }
    _mm256_zeroupper();
}
#endif
