/* qsgd.c -- the bucketed stochastic quantizer and its message format.
 *
 * It keeps the promises of qsgd.h: E[Q(v)] = v to within the grid of the
 * random numbers, exact buckets travel raw, the random numbers are a pure
 * function of (key, bucket, position), and a part of a decoded block
 * re-encodes on the block's grid without loss.  The codes and values are
 * the same bit for bit whether the AVX2 back end (qsgd_avx2.c) runs or
 * not. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "kernel/qsgd.h"
#include "kernel/qsgd_impl.h"

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

/* ------------------------------------------------------- bucket kernels */

/* The kernels below are written once for both value types vt (float or
 * double) and instantiated per type.  The arithmetic on each value is
 * done in its type (QSGD_VALUE_OPS); a bucket's scale and factors travel
 * as doubles, which hold a float exactly, and q_div divides in the type
 * (a float division, not a double one rounded: the same bits, but the
 * latter's longer latency lies on each bucket's path to its first value). */
KERNEL_INLINE double q_div(int vt, double a, double b) { return vt == SPARCML_FLOAT ? (float)a / (float)b : a / b; }
KERNEL_INLINE double q_get(int vt, const void *v, uint64_t i)
{
    return vt == SPARCML_FLOAT ? ((const float *)v)[i] : ((const double *)v)[i];
}
KERNEL_INLINE void q_put(int vt, void *v, uint64_t i, double x)
{
    if (vt == SPARCML_FLOAT) ((float *)v)[i] = (float)x;
    else ((double *)v)[i] = x;
}

/* -m where neg is nonzero, as a flip of the sign bit (what negation is):
 * the sign of a code is a coin toss, on which a branch mispredicts. */
KERNEL_INLINE float negate_if_f32(float m, unsigned neg)
{
    uint32_t u;
    memcpy(&u, &m, 4);
    u ^= (uint32_t)(neg != 0) << 31;
    return memcpy(&m, &u, 4), m;
}
KERNEL_INLINE double negate_if_f64(double m, unsigned neg)
{
    uint64_t u;
    memcpy(&u, &m, 8);
    u ^= (uint64_t)(neg != 0) << 63;
    return memcpy(&m, &u, 8), m;
}

/* The per-value arithmetic, in the value type VT: level l of a bucket's
 * grid, l * step (step = scale / s, one division per bucket; level s is
 * the scale itself, exactly), negated where the sign bit is set; and the
 * code of value v: x = |v| / scale * s as one multiply (f = s / scale),
 * so that the bucket's largest |v| is level s exactly whatever the
 * factor's rounding (an all-zero bucket, scale 0, stays at level 0),
 * rounded up where the random number is below x's fractional part.  A
 * macro: each operation is one of VT (a float's rounding at each step),
 * which a function over vt could only have by writing each one twice. */
#define QSGD_VALUE_OPS(NAME, VT)                                                                                  \
    KERNEL_INLINE VT level_##NAME(VT scale, VT step, unsigned s, unsigned code, unsigned sign)                   \
    {                                                                                                            \
        unsigned l = code & (sign - 1);                                                                          \
        VT m = l == s ? scale : (VT)l * step;                                                                    \
        return negate_if_##NAME(m, code & sign);                                                                 \
    }                                                                                                            \
    KERNEL_INLINE unsigned code_##NAME(VT v, VT f, VT scale, unsigned s, int bits, uint64_t bk, uint64_t i)      \
    {                                                                                                            \
        VT a = (VT)fabs(v), x = scale > 0 && a == scale ? (VT)s : a * f;                                         \
        unsigned l = (unsigned)x;                                                                                \
        unsigned up = (l < s) & draw_below_##NAME(bk, i, x - (VT)l); /* branch-free: a coin toss per value */    \
        return ((l < s ? l : s) + up) | (signbit(v) ? 1u << (bits - 1) : 0);                                     \
    }
QSGD_VALUE_OPS(f32, float)
QSGD_VALUE_OPS(f64, double)

/* v[i] = the value of `code` (level_f32/f64). */
KERNEL_INLINE void put_level(int vt, void *v, uint64_t i, double scale, double step, unsigned s, unsigned code,
                             unsigned sign)
{
    if (vt == SPARCML_FLOAT) ((float *)v)[i] = level_f32((float)scale, (float)step, s, code, sign);
    else ((double *)v)[i] = level_f64(scale, step, s, code, sign);
}

/* The code of v[i] (code_f32/f64). */
KERNEL_INLINE unsigned code_of(int vt, const void *v, uint64_t i, double f, double scale, unsigned s, int bits,
                               uint64_t bk)
{
    return vt == SPARCML_FLOAT ? code_f32(((const float *)v)[i], (float)f, (float)scale, s, bits, bk, i)
                               : code_f64(((const double *)v)[i], f, scale, s, bits, bk, i);
}

/* A bucket whose scale is below this travels raw, so that for the others
 * s / scale (s < 2^7) is finite and scale / s a normal number (a
 * subnormal step would decode to zeros where the program flushes them). */
KERNEL_INLINE double q_scale_min(int vt) { return vt == SPARCML_FLOAT ? 0x1p-119 : 0x1p-1000; }

/* The AVX2 back end's loops for vt (qsgd_impl.h); without AVX2 the
 * callers' ranges are empty. */
KERNEL_INLINE void encode_lanes(int vt, const void *v, uint64_t lo, uint64_t hi, double f, double scale, unsigned s,
                                int bits, uint64_t first, uint64_t bk, unsigned char *codes)
{
#ifdef QSGD_X86
    if (vt == SPARCML_FLOAT) encode_lanes_f32(v, lo, hi, (float)f, (float)scale, s, bits, first, bk, codes);
    else encode_lanes_f64(v, lo, hi, f, scale, s, bits, first, bk, codes);
#else
    (void)vt, (void)v, (void)lo, (void)hi, (void)f, (void)scale, (void)s, (void)bits, (void)first, (void)bk, (void)codes;
#endif
}

KERNEL_INLINE void decode_lanes(int vt, void *v, uint64_t lo, uint64_t hi, const void *level, int bits,
                                uint64_t first, const unsigned char *codes)
{
#ifdef QSGD_X86
    if (vt == SPARCML_FLOAT) decode_lanes_f32(v, lo, hi, level, bits, first, codes);
    else decode_lanes_f64(v, lo, hi, level, bits, first, codes);
#else
    (void)vt, (void)v, (void)lo, (void)hi, (void)level, (void)bits, (void)first, (void)codes;
#endif
}

KERNEL_INLINE void decode8_lanes(int vt, void *v, uint64_t lo, uint64_t hi, double scale, double step, unsigned s,
                                 const unsigned char *c)
{
#ifdef QSGD_X86
    if (vt == SPARCML_FLOAT) decode8_lanes_f32(v, lo, hi, (float)scale, (float)step, s, c);
    else decode8_lanes_f64(v, lo, hi, scale, step, s, c);
#else
    (void)vt, (void)v, (void)lo, (void)hi, (void)scale, (void)step, (void)s, (void)c;
#endif
}

/* The largest |v| of n values, a multiple of 32 bytes, in lanes, and
 * whether all are finite. */
KERNEL_INLINE double magnitude(int vt, const void *v, uint64_t n, int *finite)
{
#ifdef QSGD_X86
    return vt == SPARCML_FLOAT ? magnitude_f32(v, n, finite) : magnitude_f64(v, n, finite);
#else
    (void)vt, (void)v, (void)n;
    return *finite = 1, 0;
#endif
}

/* Scale of a bucket (its largest |v|), or -1: send it raw.  Whole groups
 * of 32 bytes in lanes where they run. */
KERNEL_INLINE double bucket_scale(int vt, const void *v, uint64_t n)
{
    uint64_t i = 0, lanes = 32 / value_size(vt);
    double m = 0;
    int finite = 1;
    if (stream_avx2_runs()) {
        i = n / lanes * lanes;
        m = magnitude(vt, v, i, &finite);
        if (!finite) return -1;
    }
    for (; i < n; i++) {
        double x = q_get(vt, v, i);
        if (!isfinite(x)) return -1;
        if (fabs(x) > m) m = fabs(x);
    }
    return m > 0 && m < q_scale_min(vt) ? -1 : m;
}

/* The codes of values [lo, hi) of a bucket, one by one. */
KERNEL_INLINE void encode_codes(int vt, const void *v, uint64_t lo, uint64_t hi, double f, double scale, unsigned s,
                                int bits, uint64_t first, uint64_t bk, unsigned char *codes)
{
    for (uint64_t i = lo; i < hi; i++) put_code(codes, first + i, bits, code_of(vt, v, i, f, scale, s, bits, bk));
}

/* The bucket's lanes: its values from the first whose code starts a byte
 * to the last whole group of 8 after it, where AVX2 runs (else none). */
KERNEL_INLINE void bucket_lanes(uint64_t n, uint64_t first, uint64_t *lo, uint64_t *hi)
{
    *lo = (8 - first % 8) % 8 < n ? (8 - first % 8) % 8 : n;
    *hi = stream_avx2_runs() ? *lo + (n - *lo) / 8 * 8 : *lo;
}

/* Whole groups of 8 values by lanes where they run (the same codes);
 * scale is 0 or at least q_scale_min, so f is finite. */
KERNEL_INLINE void encode_bucket(int vt, const void *v, uint64_t n, double scale, unsigned s, int bits,
                                 uint64_t first, uint64_t kh, unsigned char *codes)
{
    double f = scale > 0 ? q_div(vt, s, scale) : 0;
    uint64_t lo, hi, bk = bucket_key(kh, first);
    bucket_lanes(n, first, &lo, &hi);
    encode_codes(vt, v, 0, lo, f, scale, s, bits, first, bk, codes);
    encode_lanes(vt, v, lo, hi, f, scale, s, bits, first, bk, codes);
    encode_codes(vt, v, hi, n, f, scale, s, bits, first, bk, codes);
}

/* 0 when a value is not on the bucket's grid (put_level of no code). */
KERNEL_INLINE int regrid_bucket(int vt, const void *v, uint64_t n, double scale, unsigned s, int bits,
                                uint64_t first, unsigned char *codes)
{
    unsigned sign = 1u << (bits - 1);
    double step = q_div(vt, scale, s);
    for (uint64_t i = 0; i < n; i++) {
        double x = scale > 0 ? fabs(q_get(vt, v, i)) / scale * s : 0;
        unsigned code = (x < s ? (unsigned)lround(x) : s) | (signbit(q_get(vt, v, i)) ? sign : 0);
        union { float f; double d; } back;
        put_level(vt, &back, 0, scale, step, s, code, sign);
        if (memcmp(&back, (const char *)v + i * value_size(vt), value_size(vt)) != 0) return 0;
        put_code(codes, first + i, bits, code);
    }
    return 1;
}

/* v[i] for i in [lo, hi) from its code through the table: the codes of a
 * byte at a time, with constant shifts (a shift that varies per value was
 * slower, bench/RESULTS.md, Kernels); the ends of the range one by one. */
KERNEL_INLINE void decode_codes(int vt, void *restrict v, uint64_t lo, uint64_t hi, const void *restrict level,
                                int bits, uint64_t first, const unsigned char *restrict codes)
{
    uint64_t i = lo, per = 8 / (uint64_t)bits;
    for (; i < hi && (first + i) % per; i++) value_copy(vt, v, i, level, get_code(codes, first + i, bits));
    if (bits == 4) {
        for (; i + 2 <= hi; i += 2) {
            unsigned c = codes[(first + i) / 2];
            value_copy(vt, v, i, level, c & 15);
            value_copy(vt, v, i + 1, level, c >> 4);
        }
    } else {
        for (; i + 4 <= hi; i += 4) {
            unsigned c = codes[(first + i) / 4];
            value_copy(vt, v, i, level, c & 3);
            value_copy(vt, v, i + 1, level, c >> 2 & 3);
            value_copy(vt, v, i + 2, level, c >> 4 & 3);
            value_copy(vt, v, i + 3, level, c >> 6);
        }
    }
    for (; i < hi; i++) value_copy(vt, v, i, level, get_code(codes, first + i, bits));
}

/* v[i] for i in [lo, hi) from 8-bit codes c[i], one by one. */
KERNEL_INLINE void decode8_codes(int vt, void *v, uint64_t lo, uint64_t hi, double scale, double step, unsigned s,
                                 const unsigned char *c)
{
    for (uint64_t i = lo; i < hi; i++) put_level(vt, v, i, scale, step, s, c[i], 1u << 7);
}

/* A bucket's 16 levels, of either type. */
typedef union qsgd_table {
    float f[16];
    double d[16];
} qsgd_table;

/* v[i] = -v[k] in the value type (exact). */
KERNEL_INLINE void q_negate(int vt, void *v, uint64_t i, uint64_t k)
{
    if (vt == SPARCML_FLOAT) ((float *)v)[i] = -((const float *)v)[k];
    else ((double *)v)[i] = -((const double *)v)[k];
}

/* 2- or 4-bit codes (`bits` a constant in each instance, so that the
 * divisions and shifts by it fold) through a table of the bucket's levels. */
KERNEL_INLINE void decode_table_bucket(int vt, void *v, uint64_t n, double scale, double step, int bits,
                                       uint64_t first, const unsigned char *codes)
{
    unsigned sign = 1u << (bits - 1), s = qsgd_levels(bits);
    qsgd_table level;
    uint64_t lo, hi;
    bucket_lanes(n, first, &lo, &hi);
    for (unsigned code = 0; code < sign; code++) {
        put_level(vt, &level, code, scale, step, s, code, sign);
        q_negate(vt, &level, code | sign, code);
    }
    if (bits == 2) memset((char *)&level + 4 * value_size(vt), 0, 12 * value_size(vt)); /* loaded, unused */
    decode_codes(vt, v, 0, lo, &level, bits, first, codes);
    decode_lanes(vt, v, lo, hi, &level, bits, first, codes);
    decode_codes(vt, v, hi, n, &level, bits, first, codes);
}

/* 8-bit codes decode by put_level, 2- and 4-bit codes through a table of
 * its values; whole groups of 8 by lanes where they run (the same bits).
 * bits is 2, 4 or 8. */
KERNEL_INLINE void decode_bucket(int vt, void *v, uint64_t n, double scale, int bits, uint64_t first,
                                 const unsigned char *codes)
{
    unsigned s = qsgd_levels(bits);
    double step = q_div(vt, scale, s);
    uint64_t lo, hi;
    if (bits == 4) {
        decode_table_bucket(vt, v, n, scale, step, 4, first, codes);
    } else if (bits == 2) {
        decode_table_bucket(vt, v, n, scale, step, 2, first, codes);
    } else {
        bucket_lanes(n, first, &lo, &hi);
        decode8_codes(vt, v, 0, lo, scale, step, s, codes + first);
        decode8_lanes(vt, v, lo, hi, scale, step, s, codes + first);
        decode8_codes(vt, v, hi, n, scale, step, s, codes + first);
    }
}

/* With block_scales NULL: quantize (phase 0); otherwise re-encode values
 * on the grid of those scales without loss (0 when one is not on it). */
KERNEL_INLINE uint64_t encode_body(int vt, const void *v, uint64_t n, const qsgd_params *p, uint64_t kh, uint64_t ph,
                                   const void *block_scales, unsigned char *out)
{
    uint64_t nb = nbuckets(n, ph, p), sb = scales_bytes(n, ph, vt, p), cb = codes_bytes(n, p), raw = 0;
    unsigned vs = value_size(vt), s = qsgd_levels(p->bits);
    unsigned char *codes = out + sb;
    memset(out, 0, sb + cb);
    for (uint64_t b = 0; b < nb; b++) {
        uint64_t first = bucket_start(b, ph, p), len = bucket_end(b, n, ph, p) - first;
        const char *at = (const char *)v + first * vs;
        double scale = block_scales ? q_get(vt, block_scales, b) : bucket_scale(vt, at, len);
        q_put(vt, out, b, scale);
        if (scale < 0) {
            memcpy(out + sb + cb + raw, at, len * vs);
            raw += len * vs;
        } else if (!block_scales) {
            encode_bucket(vt, at, len, scale, s, p->bits, first, kh, codes);
        } else if (!regrid_bucket(vt, at, len, scale, s, p->bits, first, codes)) {
            return 0;
        }
    }
    return sb + cb + raw;
}

/* The parameters are copied: no store to v can alias the copy, which
 * keeps its fields in registers across the buckets. */
KERNEL_INLINE void decode_body(int vt, const unsigned char *in, uint64_t n, const qsgd_params *params, uint64_t ph,
                               void *v)
{
    const qsgd_params copy = *params, *p = &copy;
    uint64_t nb = nbuckets(n, ph, p), sb = scales_bytes(n, ph, vt, p), cb = codes_bytes(n, p), raw = 0;
    unsigned vs = value_size(vt);
    for (uint64_t b = 0; b < nb; b++) {
        uint64_t first = bucket_start(b, ph, p), len = bucket_end(b, n, ph, p) - first;
        double scale = q_get(vt, in, b);
        char *at = (char *)v + first * vs;
        if (scale < 0) {
            memcpy(at, in + sb + cb + raw, len * vs);
            raw += len * vs;
        } else {
            decode_bucket(vt, at, len, scale, p->bits, first, in + sb);
        }
    }
}

#define QSGD_KERNELS(NAME, VT)                                                                                \
    static uint64_t encode_##NAME(const void *v, uint64_t n, const qsgd_params *p, uint64_t kh, uint64_t ph, \
                                  const void *block_scales, unsigned char *out)                              \
    { return encode_body(VT, v, n, p, kh, ph, block_scales, out); }                                           \
    static void decode_##NAME(const unsigned char *in, uint64_t n, const qsgd_params *p, uint64_t ph, void *v) \
    { decode_body(VT, in, n, p, ph, v); }
QSGD_KERNELS(f32, SPARCML_FLOAT)
QSGD_KERNELS(f64, SPARCML_DOUBLE)


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
