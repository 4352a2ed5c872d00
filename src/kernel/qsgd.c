/* qsgd.c -- the bucketed stochastic quantizer and its message format. */
#include "config.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "kernel/qsgd.h"

#define SPLITMIX_STEP 0x9e3779b97f4a7c15ull /* splitmix64's increment */

static uint64_t mix(uint64_t z)
{
    z += SPLITMIX_STEP;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A bucket's key: element `first` (the bucket's first value) of the
 * splitmix64 sequence seeded with the message key's hash. */
static uint64_t bucket_key(uint64_t keyhash, uint64_t first) { return mix(keyhash + first * SPLITMIX_STEP); }

#define WEYL32 0x9e3779b9u /* 2^32 / golden ratio, odd: i * WEYL32 is a bijection */
#define HASH32_M1 0x7feb352du
#define HASH32_M2 0x846ca68bu

/* A 32-bit integer hash of good avalanche built of shifts, xors and 32-bit
 * multiplies, so that 8 lanes of AVX2 compute it (AVX2 has no 64-bit
 * multiply in lanes, which a 64-bit mix per value would need). */
static uint32_t hash32(uint32_t x)
{
    x = (x ^ (x >> 16)) * HASH32_M1;
    x = (x ^ (x >> 15)) * HASH32_M2;
    return x ^ (x >> 16);
}

/* The 32-bit random number of value i of the bucket keyed bk (i < 2^32: a
 * bucket holds at most 2^24): a pure function of (message key, bucket, i),
 * so any rank that encodes a message draws the same numbers.  The key's
 * high half enters the hash, so that buckets whose low halves lie close on
 * the Weyl sequence still draw unrelated numbers. */
static uint32_t draw(uint64_t bk, uint64_t i)
{
    return hash32(((uint32_t)bk + (uint32_t)i * WEYL32) ^ (uint32_t)(bk >> 32));
}

/* Whether value i's random number, uniform on a grid in [0, 1), is below
 * frac in [0, 1): for float values its 24 high bits (a float's precision)
 * against frac * 2^24, for doubles all 32 against frac (u = r * 2^-32).
 * Either rounds a probability up by less than one step of its grid. */
static int draw_below_f32(uint64_t bk, uint64_t i, float frac)
{
    return (float)(draw(bk, i) >> 8) < frac * 0x1p24f;
}
static int draw_below_f64(uint64_t bk, uint64_t i, double frac)
{
    return (double)draw(bk, i) * 0x1p-32 < frac;
}

static uint64_t key_hash(const qsgd_key *k)
{
    return mix(mix(mix(mix(k->seed) ^ k->rank) ^ k->call) ^ k->message);
}

/* Buckets of B values; with a phase ph (0 <= ph < B) the first one holds
 * only B - ph, so that a part of a block starting at its entry `first`
 * keeps the block's buckets (ph = first % B). */
static uint64_t nbuckets(uint64_t n, uint64_t ph, const qsgd_params *p)
{
    return n ? (n + ph + p->bucket - 1) / p->bucket : 0;
}
static uint64_t bucket_start(uint64_t b, uint64_t ph, const qsgd_params *p) { return b ? b * p->bucket - ph : 0; }
static uint64_t bucket_end(uint64_t b, uint64_t n, uint64_t ph, const qsgd_params *p)
{
    uint64_t e = (b + 1) * p->bucket - ph;
    return e < n ? e : n;
}
static uint64_t scales_bytes(uint64_t n, uint64_t ph, int vtype, const qsgd_params *p)
{
    return sparcml_round8(nbuckets(n, ph, p) * sparcml_value_size(vtype));
}
static uint64_t codes_bytes(uint64_t n, const qsgd_params *p)
{
    return sparcml_round8((n * (uint64_t)p->bits + 7) / 8);
}
static uint64_t block_bound(uint64_t n, uint64_t ph, int vtype, const qsgd_params *p)
{
    return scales_bytes(n, ph, vtype, p) + codes_bytes(n, p) + n * sparcml_value_size(vtype);
}

uint64_t qsgd_block_bound(uint64_t n, int vtype, const qsgd_params *p) { return block_bound(n, 0, vtype, p); }

static void put_code(unsigned char *codes, uint64_t i, int bits, unsigned code)
{
    codes[i * bits / 8] |= (unsigned char)(code << (i * bits % 8));
}

/* bits is 2, 4 or 8: a code never spans two bytes. */
static unsigned get_code(const unsigned char *codes, uint64_t i, int bits)
{
    return (unsigned)(codes[i * bits / 8] >> (i * bits % 8)) & ((1u << bits) - 1);
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

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
    for (uint64_t i = lo; i < hi; i += 8)
        _mm256_storeu_ps(v + i, lookup16(low, high, step_codes(codes, first, i, bits, shift), bits));
}

/* The loop once per width, so that its shifts and masks are constants. */
__attribute__((target("avx2"))) static void decode_lanes_f32(float *v, uint64_t lo, uint64_t hi, const float *level,
                                                             int bits, uint64_t first, const unsigned char *codes)
{
    const __m256 low = _mm256_loadu_ps(level), high = _mm256_loadu_ps(level + 8);
    if (bits == 4) decode_steps_f32(v, lo, hi, low, high, 4, first, codes);
    else decode_steps_f32(v, lo, hi, low, high, 2, first, codes);
    _mm256_zeroupper(); /* as stream.c's AVX2 loops */
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

/* As decode_lanes_f32 for doubles: the table's low and high 32-bit halves
 * are two tables of 16 lanes, looked up by the same codes, and interleaved
 * back into doubles.  The lanes take the codes of a step in the order 0 1 4
 * 5 2 3 6 7, the one in which interleaving the halves of each 128-bit lane
 * yields values 0-3 and 4-7. */
__attribute__((target("avx2"))) static void decode_lanes_f64(double *v, uint64_t lo, uint64_t hi, const double *level,
                                                             int bits, uint64_t first, const unsigned char *codes)
{
    float half_of[2][16]; /* the bits of each half, as lanes */
    for (int i = 0; i < 16; i++) {
        uint64_t u;
        uint32_t part[2];
        memcpy(&u, level + i, 8);
        part[0] = (uint32_t)u, part[1] = (uint32_t)(u >> 32);
        memcpy(&half_of[0][i], &part[0], 4);
        memcpy(&half_of[1][i], &part[1], 4);
    }
    const __m256 half[4] = {_mm256_loadu_ps(half_of[0]), _mm256_loadu_ps(half_of[0] + 8),
                            _mm256_loadu_ps(half_of[1]), _mm256_loadu_ps(half_of[1] + 8)};
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

/* Values [lo, hi) of a bucket, a multiple of 8 from a byte of codes on
 * (first + lo a multiple of 8), in lanes, their random numbers too: 32 a
 * step, then 8, into the zeroed codes. */
#define ENCODE_LANES(NAME, VT)                                                                                 \
    __attribute__((target("avx2"))) static void encode_lanes_##NAME(const VT *v, uint64_t lo, uint64_t hi,     \
                                                                   VT f, VT scale, unsigned s, int bits,       \
                                                                   uint64_t first, uint64_t bk,                \
                                                                   unsigned char *codes)                       \
    {                                                                                                          \
        const bucket_##NAME b = bucket_lanes_##NAME(f, scale, s, bits, bk);                                    \
        __m256i ctr = draw_counter(bk, lo);                                                                    \
        uint64_t i = lo;                                                                                       \
        for (; i + 32 <= hi; i += 32) {                                                                        \
            __m256i c0 = codes8_##NAME(v + i, &ctr, &b), c1 = codes8_##NAME(v + i + 8, &ctr, &b);              \
            __m256i c2 = codes8_##NAME(v + i + 16, &ctr, &b), c3 = codes8_##NAME(v + i + 24, &ctr, &b);        \
            store_codes32(codes + (first + i) * (uint64_t)bits / 8, c0, c1, c2, c3, bits);                     \
        }                                                                                                      \
        for (; i < hi; i += 8)                                                                                 \
            store_codes8(codes + (first + i) * (uint64_t)bits / 8, codes8_##NAME(v + i, &ctr, &b), bits);      \
        _mm256_zeroupper();                                                                                    \
    }

ENCODE_LANES(f32, float)
ENCODE_LANES(f64, double)

/* The largest |v[i]| for i in [0, n), n a multiple of the lanes (32
 * bytes), and whether every one is finite (|v| <= the largest finite value
 * fails for infinities and NaNs).  A maximum does not round, so it is
 * bucket_scale's in any order.  PS/PD: the intrinsics' suffix, SIGN: the
 * value's sign bit alone in a lane. */
#define MAGNITUDE_LANES(NAME, VT, V256, PS, LANES, VMAX, SIGN)                                                 \
    __attribute__((target("avx2"))) static VT magnitude_##NAME(const VT *v, uint64_t n, int *finite)           \
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
__attribute__((target("avx2"))) static void decode8_lanes_f32(float *v, uint64_t lo, uint64_t hi, float scale,
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
__attribute__((target("avx2"))) static void decode8_lanes_f64(double *v, uint64_t lo, uint64_t hi, double scale,
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
#else
#define decode_lanes_f32(v, lo, hi, level, bits, first, codes) ((void)0)
#define decode_lanes_f64(v, lo, hi, level, bits, first, codes) ((void)0)
#define encode_lanes_f32(v, lo, hi, f, scale, s, bits, first, bk, codes) ((void)0)
#define encode_lanes_f64(v, lo, hi, f, scale, s, bits, first, bk, codes) ((void)0)
#define magnitude_f32(v, n, finite) (*(finite) = 1, 0.0f)
#define magnitude_f64(v, n, finite) (*(finite) = 1, 0.0)
#define decode8_lanes_f32(v, lo, hi, scale, step, s, c) ((void)0)
#define decode8_lanes_f64(v, lo, hi, scale, step, s, c) ((void)0)
#endif

/* Per value type: scale of a bucket (or -1: send it raw), the codes, and
 * the level of a value already on a bucket's grid.  A bucket whose scale is
 * below SCALE_MIN travels raw, so that for the others s / scale (s < 2^7)
 * is finite and scale / s a normal number (a subnormal step would decode
 * to zeros where the program flushes them). */
#define QSGD_KERNELS(NAME, VT, SCALE_MIN)                                            \
    /* Whole groups of 32 bytes in lanes where they run. */                 \
    static VT bucket_scale_##NAME(const VT *v, uint64_t n)                       \
    {                                                                            \
        VT m = 0;                                                                \
        uint64_t i = 0;                                                          \
        int finite = 1;                                                          \
        if (stream_avx2_runs()) {                                                \
            i = n / (32 / sizeof(VT)) * (32 / sizeof(VT));                       \
            m = magnitude_##NAME(v, i, &finite);                                 \
            if (!finite) return (VT)-1;                                          \
        }                                                                        \
        for (; i < n; i++) {                                                     \
            if (!isfinite(v[i])) return (VT)-1;                                  \
            if (fabs(v[i]) > m) m = (VT)fabs(v[i]);                              \
        }                                                                        \
        return m > 0 && m < SCALE_MIN ? (VT)-1 : m;                              \
    }                                                                            \
    /* A code's value: level l of the bucket's grid, l * step (step = scale \
     * / s, one division per bucket; level s is the scale itself, exactly), \
     * negated where the sign bit is set. */                               \
    static VT level_value_##NAME(VT scale, VT step, unsigned s, unsigned code, unsigned sign) \
    {                                                                            \
        unsigned l = code & (sign - 1);                                          \
        VT m = l == s ? scale : (VT)l * step;                                    \
        return code & sign ? -m : m;                                             \
    }                                                                            \
    /* Values [lo, hi) of a bucket, in the value type's precision: x =     \
     * |v| / scale * s as one multiply (f = s / scale); the bucket's largest \
     * |v| is level s exactly, whatever the factor's rounding (an all-zero  \
     * bucket, scale 0, stays at level 0). */                               \
    static void encode_codes_##NAME(const VT *v, uint64_t lo, uint64_t hi,      \
                                    VT f, VT scale, unsigned s, int bits,        \
                                    uint64_t first, uint64_t bk,                 \
                                    unsigned char *codes)                        \
    {                                                                            \
        for (uint64_t i = lo; i < hi; i++) {                                     \
            VT a = (VT)fabs(v[i]);                                               \
            VT x = scale > 0 && a == scale ? (VT)s : a * f;                      \
            unsigned l = (unsigned)x;                                            \
            /* branch-free: the comparison is a coin toss per value */          \
            unsigned up = (l < s) & draw_below_##NAME(bk, i, x - (VT)l);         \
            l = (l < s ? l : s) + up;                                            \
            put_code(codes, first + i, bits, l | (signbit(v[i]) ? 1u << (bits - 1) : 0)); \
        }                                                                        \
    }                                                                            \
    /* Whole groups of 8 values by lanes where they run (the same codes); \
     * scale is 0 or at least SCALE_MIN, so f is finite. */                 \
    static void encode_bucket_##NAME(const VT *v, uint64_t n, VT scale, unsigned s, \
                                     int bits, uint64_t first, uint64_t kh,      \
                                     unsigned char *codes)                       \
    {                                                                            \
        VT f = scale > 0 ? (VT)s / scale : 0;                                    \
        uint64_t lo = (8 - first % 8) % 8 < n ? (8 - first % 8) % 8 : n, hi = lo; \
        uint64_t bk = bucket_key(kh, first);                                     \
        if (stream_avx2_runs()) hi = lo + (n - lo) / 8 * 8;                      \
        encode_codes_##NAME(v, 0, lo, f, scale, s, bits, first, bk, codes);      \
        encode_lanes_##NAME(v, lo, hi, f, scale, s, bits, first, bk, codes);     \
        encode_codes_##NAME(v, hi, n, f, scale, s, bits, first, bk, codes);      \
    }                                                                            \
    /* 0 when a value is not on the bucket's grid (level_value of no code). */ \
    static int regrid_bucket_##NAME(const VT *v, uint64_t n, VT scale, unsigned s, \
                                    int bits, uint64_t first, unsigned char *codes) \
    {                                                                            \
        unsigned sign = 1u << (bits - 1);                                        \
        VT step = scale / (VT)s;                                                 \
        for (uint64_t i = 0; i < n; i++) {                                       \
            double x = scale > 0 ? fabs((double)v[i]) / (double)scale * s : 0;   \
            unsigned code = (x < s ? (unsigned)lround(x) : s) | (signbit(v[i]) ? sign : 0); \
            VT back = level_value_##NAME(scale, step, s, code, sign);            \
            if (memcmp(&back, &v[i], sizeof back) != 0) return 0;                \
            put_code(codes, first + i, bits, code);                              \
        }                                                                        \
        return 1;                                                                \
    }                                                                            \
    /* v[i] for i in [lo, hi) from its code through the table: the codes  \
     * of a byte at a time, with constant shifts (a shift that varies per   \
     * value measured 1.3x slower); the ends of the range one by one. */    \
    static inline void decode_codes_##NAME(VT *restrict v, uint64_t lo,         \
                                           uint64_t hi, const VT *restrict level, \
                                           int bits, uint64_t first,            \
                                           const unsigned char *restrict codes) \
    {                                                                            \
        uint64_t i = lo, per = 8 / (uint64_t)bits;                               \
        for (; i < hi && (first + i) % per; i++) v[i] = level[get_code(codes, first + i, bits)]; \
        if (bits == 4) {                                                         \
            for (; i + 2 <= hi; i += 2) {                                        \
                unsigned c = codes[(first + i) / 2];                             \
                v[i] = level[c & 15];                                            \
                v[i + 1] = level[c >> 4];                                        \
            }                                                                    \
        } else {                                                                 \
            for (; i + 4 <= hi; i += 4) {                                        \
                unsigned c = codes[(first + i) / 4];                             \
                v[i] = level[c & 3];                                             \
                v[i + 1] = level[c >> 2 & 3];                                    \
                v[i + 2] = level[c >> 4 & 3];                                    \
                v[i + 3] = level[c >> 6];                                        \
            }                                                                    \
        }                                                                        \
        for (; i < hi; i++) v[i] = level[get_code(codes, first + i, bits)];      \
    }                                                                            \
    /* v[i] for i in [lo, hi) from 8-bit codes c[i], one by one. */         \
    static void decode8_codes_##NAME(VT *v, uint64_t lo, uint64_t hi, VT scale,  \
                                     VT step, unsigned s, const unsigned char *c) \
    {                                                                            \
        for (uint64_t i = lo; i < hi; i++) v[i] = level_value_##NAME(scale, step, s, c[i], 1u << 7); \
    }                                                                            \
    /* 8-bit codes decode by level_value, 2- and 4-bit codes through a table \
     * of its values; whole groups of 8 by lanes where they run (the same   \
     * bits). */                                                             \
    static void decode_bucket_##NAME(VT *v, uint64_t n, VT scale, unsigned s,    \
                                     int bits, uint64_t first,                   \
                                     const unsigned char *codes)                 \
    {                                                                            \
        unsigned sign = 1u << (bits - 1);                                        \
        VT step = scale / (VT)s, level[16];                                      \
        uint64_t lo = (8 - first % 8) % 8 < n ? (8 - first % 8) % 8 : n, hi = lo; \
        if (stream_avx2_runs()) hi = lo + (n - lo) / 8 * 8;                      \
        if (bits == 8) {                                                         \
            decode8_codes_##NAME(v, 0, lo, scale, step, s, codes + first);       \
            decode8_lanes_##NAME(v, lo, hi, scale, step, s, codes + first);      \
            decode8_codes_##NAME(v, hi, n, scale, step, s, codes + first);       \
            return;                                                              \
        }                                                                        \
        for (unsigned code = 0; code < sign; code++) { /* negation is exact */  \
            level[code] = level_value_##NAME(scale, step, s, code, sign);        \
            level[code | sign] = -level[code];                                   \
        }                                                                        \
        if (bits == 2) memset(level + 4, 0, 12 * sizeof(VT)); /* loaded, unused */ \
        decode_codes_##NAME(v, 0, lo, level, bits, first, codes);                \
        decode_lanes_##NAME(v, lo, hi, level, bits, first, codes);              \
        decode_codes_##NAME(v, hi, n, level, bits, first, codes);                \
    }                                                                            \
    /* With block_scales NULL: quantize (phase 0); otherwise re-encode values \
     * on the grid of those scales without loss (0 when one is not on it). */  \
    static uint64_t encode_##NAME(const VT *v, uint64_t n, const qsgd_params *p, \
                                  uint64_t kh, uint64_t ph, const VT *block_scales, \
                                  unsigned char *out)                            \
    {                                                                            \
        uint64_t nb = nbuckets(n, ph, p), sb = scales_bytes(n, ph, SPARCML_VT_##NAME, p); \
        uint64_t cb = codes_bytes(n, p), raw = 0;                                \
        VT *scales = (VT *)out;                                                  \
        unsigned char *codes = out + sb;                                         \
        unsigned s = qsgd_levels(p->bits);                                       \
        memset(out, 0, sb + cb);                                                 \
        for (uint64_t b = 0; b < nb; b++) {                                      \
            uint64_t first = bucket_start(b, ph, p), len = bucket_end(b, n, ph, p) - first; \
            VT scale = block_scales ? block_scales[b] : bucket_scale_##NAME(v + first, len); \
            scales[b] = scale;                                                   \
            if (scale < 0) {                                                     \
                memcpy(out + sb + cb + raw, v + first, len * sizeof(VT));        \
                raw += len * sizeof(VT);                                         \
            } else if (!block_scales) {                                          \
                encode_bucket_##NAME(v + first, len, scale, s, p->bits, first, kh, codes); \
            } else if (!regrid_bucket_##NAME(v + first, len, scale, s, p->bits, first, codes)) { \
                return 0;                                                        \
            }                                                                    \
        }                                                                        \
        return sb + cb + raw;                                                    \
    }                                                                            \
    static void decode_##NAME(const unsigned char *in, uint64_t n, const qsgd_params *p, \
                              uint64_t ph, VT *v)                                \
    {                                                                            \
        uint64_t nb = nbuckets(n, ph, p), sb = scales_bytes(n, ph, SPARCML_VT_##NAME, p); \
        uint64_t cb = codes_bytes(n, p), raw = 0;                                \
        const VT *scales = (const VT *)in;                                       \
        unsigned s = qsgd_levels(p->bits);                                       \
        for (uint64_t b = 0; b < nb; b++) {                                      \
            uint64_t first = bucket_start(b, ph, p), len = bucket_end(b, n, ph, p) - first; \
            if (scales[b] < 0) {                                                 \
                memcpy(v + first, in + sb + cb + raw, len * sizeof(VT));         \
                raw += len * sizeof(VT);                                         \
            } else {                                                             \
                decode_bucket_##NAME(v + first, len, scales[b], s, p->bits, first, in + sb); \
            }                                                                    \
        }                                                                        \
    }

#define SPARCML_VT_f32 SPARCML_FLOAT
#define SPARCML_VT_f64 SPARCML_DOUBLE
QSGD_KERNELS(f32, float, 0x1p-119f)
QSGD_KERNELS(f64, double, 0x1p-1000)

uint64_t qsgd_encode_block(const void *vals, uint64_t n, int vtype, const qsgd_params *p,
                           const qsgd_key *key, void *out)
{
    uint64_t kh = key_hash(key);
    return vtype == SPARCML_FLOAT ? encode_f32(vals, n, p, kh, 0, NULL, out)
                                  : encode_f64(vals, n, p, kh, 0, NULL, out);
}

static void decode_block(const void *block, uint64_t n, uint64_t ph, int vtype, const qsgd_params *p,
                         void *vals)
{
    if (vtype == SPARCML_FLOAT)
        decode_f32(block, n, p, ph, vals);
    else
        decode_f64(block, n, p, ph, vals);
}

void qsgd_decode_block(const void *block, uint64_t n, int vtype, const qsgd_params *p, void *vals)
{
    decode_block(block, n, 0, vtype, p, vals);
}

/* ---------------------------------------------------------------- messages */

static uint64_t index_bytes(const sv *s) { return s->dense ? 0 : sparcml_round8(s->nnz * s->iw); }

uint64_t qsgd_message_bound(const sv *s, const qsgd_params *p)
{
    return SPARCML_HEADER_BYTES + index_bytes(s) + qsgd_block_bound(s->nnz, s->vtype, p);
}

/* The header (reserved: bits | bucket << 8 | phase << 40; the bucket is
 * at most 2^24, so is the phase) and the indices. */
static uint64_t encode_head(const sv *s, const qsgd_params *p, uint64_t ph, void *out)
{
    sparcml_header h;
    uint64_t ib = index_bytes(s);
    memcpy(&h, s->base, sizeof h);
    h.format |= QSGD_FLAG;
    h.reserved = (uint64_t)p->bits | (uint64_t)p->bucket << 8 | ph << 40;
    memcpy(out, &h, sizeof h);
    if (ib) memcpy((char *)out + SPARCML_HEADER_BYTES, s->idx, ib);
    return SPARCML_HEADER_BYTES + ib;
}

uint64_t qsgd_encode_message(const sv *s, const qsgd_params *p, const qsgd_key *key, void *out)
{
    uint64_t head = encode_head(s, p, 0, out);
    return head + qsgd_encode_block(s->val, s->nnz, s->vtype, p, key, (char *)out + head);
}

uint64_t qsgd_grid_bound(uint64_t n, unsigned iw, int vtype, const qsgd_params *p, uint64_t parts)
{
    uint64_t vs = sparcml_value_size(vtype);
    return parts * (SPARCML_HEADER_BYTES + 32 + 3 * vs) + n * ((uint64_t)iw + vs)
           + (n * (uint64_t)p->bits + 7) / 8 + (n + p->bucket - 1) / p->bucket * vs;
}

uint64_t qsgd_encode_on_grid(const sv *s, const qsgd_params *p, const void *block, uint64_t first,
                             void *out)
{
    uint64_t ph = first % p->bucket, head, vs = sparcml_value_size(s->vtype), body;
    const char *scales = (const char *)block + first / p->bucket * vs;
    if (s->nnz == 0) return 0;
    head = encode_head(s, p, ph, out);
    body = s->vtype == SPARCML_FLOAT
               ? encode_f32(s->val, s->nnz, p, 0, ph, (const float *)scales, (unsigned char *)out + head)
               : encode_f64(s->val, s->nnz, p, 0, ph, (const double *)scales, (unsigned char *)out + head);
    return body ? head + body : 0;
}

int qsgd_is_message(const void *buf)
{
    sparcml_header h;
    memcpy(&h, buf, sizeof h);
    return (h.format & QSGD_FLAG) != 0;
}

static sparcml_header plain_header(const void *msg, qsgd_params *p, uint64_t *ph)
{
    sparcml_header h;
    memcpy(&h, msg, sizeof h);
    p->bits = (int)(h.reserved & 0xff);
    p->bucket = (uint32_t)(h.reserved >> 8);
    p->seed = 0;
    *ph = h.reserved >> 40;
    h.format &= (uint8_t)~QSGD_FLAG;
    h.reserved = 0;
    return h;
}

uint64_t qsgd_decoded_bytes(const void *msg)
{
    qsgd_params p;
    uint64_t ph;
    sparcml_header h = plain_header(msg, &p, &ph);
    return h.format == SPARCML_DENSE ? sparcml_dense_bytes(h.dim, h.value_type)
                                     : sparcml_sparse_bytes(h.dim, h.value_type, h.nnz);
}

sv qsgd_decode_message(const void *msg, void *out)
{
    qsgd_params p;
    uint64_t ph, ib;
    sparcml_header h = plain_header(msg, &p, &ph);
    sv s;
    memcpy(out, &h, sizeof h);
    s = stream_view(out);
    ib = index_bytes(&s);
    if (ib) memcpy(s.idx, (const char *)msg + SPARCML_HEADER_BYTES, ib);
    decode_block((const char *)msg + SPARCML_HEADER_BYTES + ib, s.nnz, ph, s.vtype, &p, s.val);
    return s;
}
