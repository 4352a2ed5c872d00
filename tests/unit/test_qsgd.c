/* QSGD: unbiasedness and variance against bounds derived from the
 * quantizer's definition (so these can fail), bit packing round trips,
 * special values, messages. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/qsgd.h"
#include "suites.h"

static const int bit_settings[] = {2, 4, 8};

/* A fixed vector with a spread of magnitudes and signs. */
static void fixed_vector(float *v, int n)
{
    for (int i = 0; i < n; i++) v[i] = (float)(sin(i * 1.7 + 0.3) * (1 + i % 5));
}

static uint64_t encode_decode_as(int vtype, const void *v, void *out, int n, const qsgd_params *p, uint64_t call)
{
    static unsigned char block[1 << 16];
    qsgd_key key = {.seed = p->seed, .rank = 3, .call = call, .message = 9};
    uint64_t bytes = qsgd_encode_block(v, (uint64_t)n, vtype, p, &key, block);
    qsgd_decode_block(block, (uint64_t)n, vtype, p, out);
    return bytes;
}

static uint64_t encode_decode(const float *v, float *out, int n, const qsgd_params *p, uint64_t call)
{
    return encode_decode_as(SPARCML_FLOAT, v, out, n, p, call);
}

/* E[Q(v)] = v.  For one element, Q(v) takes two values scale*l/s and
 * scale*(l+1)/s, so its variance is at most (scale/s)^2 / 4; the mean of T
 * independent draws has standard deviation at most scale / (2 s sqrt(T)).
 * We allow 5 of those (a false alarm has probability < 1e-6 per element),
 * plus float rounding.  A biased rounding (e.g. to nearest) misses by up to
 * scale / (2 s): 50 to 100 times this tolerance at T = 10000.  Float
 * buckets of 16 (groups of 8 in lanes) and of 40 (a group of 32), double
 * buckets of 40 (values off the float grid). */
START_TEST(unbiased)
{
    enum { N = 64, T = 10000 };
    static const uint32_t buckets[] = {16, 40, 40};
    int vtype = _i / 3 == 2 ? SPARCML_DOUBLE : SPARCML_FLOAT;
    qsgd_params p = {.bits = bit_settings[_i % 3], .bucket = buckets[_i / 3], .seed = 7};
    float v[N], q[N];
    double vd[N], qd[N], mean[N] = {0}, scale[N] = {0};
    unsigned s = qsgd_levels(p.bits);
    fixed_vector(v, N);
    for (int i = 0; i < N; i++) vd[i] = vtype == SPARCML_FLOAT ? v[i] : v[i] * (1 + i % 3 * 1e-9);
    for (int i = 0; i < N; i++) scale[i / p.bucket] = fmax(scale[i / p.bucket], fabs(vd[i]));
    for (uint64_t t = 0; t < T; t++) {
        if (vtype == SPARCML_FLOAT) encode_decode(v, q, N, &p, t);
        else encode_decode_as(SPARCML_DOUBLE, vd, qd, N, &p, t);
        for (int i = 0; i < N; i++) mean[i] += vtype == SPARCML_FLOAT ? q[i] : qd[i];
    }
    for (int i = 0; i < N; i++) {
        double sc = scale[i / p.bucket], tol = 5 * sc / (2.0 * s * sqrt((double)T)) + 1e-5 * sc;
        ck_assert_msg(fabs(mean[i] / T - vd[i]) <= tol, "bits %d, %s, B %u, element %d: mean %g, v %g, tol %g",
                      p.bits, vtype == SPARCML_FLOAT ? "float" : "double", p.bucket, i, mean[i] / T, vd[i], tol);
    }
}
END_TEST

/* The QSGD variance bound, per bucket: E||Q(v) - v||^2 <= min(B/s^2,
 * sqrt(B)/s) ||v||^2.  (With the max-norm scale the true variance is at most
 * min(B/(4 s^2), sqrt(B)/s) ||v||^2.)  The empirical mean over 2000 draws is
 * compared with the bound itself; we also check it is not zero, i.e. that
 * something is quantized at all. */
START_TEST(variance_within_bound)
{
    enum { N = 512, B = 128, T = 2000 };
    qsgd_params p = {.bits = bit_settings[_i], .bucket = B, .seed = 11};
    float v[N], q[N];
    double err[N / B] = {0}, norm2[N / B] = {0};
    unsigned s = qsgd_levels(p.bits);
    fixed_vector(v, N);
    for (int i = 0; i < N; i++) norm2[i / B] += (double)v[i] * v[i];
    for (uint64_t t = 0; t < T; t++) {
        encode_decode(v, q, N, &p, t);
        for (int i = 0; i < N; i++) err[i / B] += ((double)q[i] - v[i]) * ((double)q[i] - v[i]);
    }
    for (int b = 0; b < N / B; b++) {
        double e = err[b] / T, bound = fmin((double)B / (s * s), sqrt((double)B) / s) * norm2[b];
        ck_assert_msg(e <= bound, "bits %d bucket %d: variance %g > bound %g", p.bits, b, e, bound);
        ck_assert_msg(e <= fmin(B / (4.0 * s * s), sqrt((double)B) / s) * norm2[b] * 1.1,
                      "bits %d bucket %d: variance %g above the max-norm bound", p.bits, b, e);
        ck_assert(e > 0);
    }
}
END_TEST

/* Decoded values lie on the grid scale * l / s next to v, and the encoding
 * takes bits per value plus one scale per bucket. */
START_TEST(packing_round_trip)
{
    enum { N = 1000 };
    qsgd_params p = {.bits = bit_settings[_i], .bucket = 100, .seed = 1};
    float v[N], q[N];
    unsigned s = qsgd_levels(p.bits);
    uint64_t bytes;
    fixed_vector(v, N);
    bytes = encode_decode(v, q, N, &p, 0);
    ck_assert_uint_eq(bytes, sparcml_round8(10 * 4) + sparcml_round8((N * (uint64_t)p.bits + 7) / 8));
    for (int i = 0; i < N; i++) {
        double scale = 0;
        for (int j = i / 100 * 100; j < i / 100 * 100 + 100; j++) scale = fmax(scale, fabs(v[j]));
        double l = fabs(q[i]) / scale * s;
        ck_assert(fabs(l - round(l)) < 1e-4);             /* on the grid */
        ck_assert(fabs(q[i] - v[i]) <= scale / s * 1.0001); /* a neighbour of v */
        ck_assert(q[i] == 0 || signbit(q[i]) == signbit(v[i]));
    }
}
END_TEST

/* Every decoded value is sign * l * (scale / s) of its code in the value
 * type (level s: the scale), read from the block by the layout of qsgd.h
 * (scales, then codes in little-endian bit order), at every width, float
 * and double, by the AVX2 loops and the portable ones, buckets starting
 * inside a byte of codes and a group of 8; each bucket's largest |v| comes
 * back exactly. */
START_TEST(decode_follows_the_codes)
{
    enum { N = 1000, B = 301, NB = (N + B - 1) / B }; /* buckets start inside a byte and a group of 8 */
    static unsigned char block[1 << 16];
    qsgd_params p = {.bits = bit_settings[_i % 3], .bucket = B, .seed = 5};
    qsgd_key key = {.seed = 5, .rank = 1, .call = 2, .message = 3};
    unsigned s = qsgd_levels(p.bits), mask = (1u << p.bits) - 1, sign = 1u << (p.bits - 1);
    int vtype = _i / 6 ? SPARCML_DOUBLE : SPARCML_FLOAT;
    size_t vs = sparcml_value_size(vtype);
    double v[N], q[N], scales[NB];
    const unsigned char *codes = block + sparcml_round8(NB * vs);
    float vf[N];
    fixed_vector(vf, N);
    for (int i = 0; i < N; i++) v[i] = vf[i] * (1 + i % 3 * 1e-9); /* doubles off the float grid */
    qsgd_encode_block(vtype == SPARCML_FLOAT ? (const void *)vf : (const void *)v, N, vtype, &p, &key, block);
    stream_force_portable(_i / 3 % 2); /* both decoders */
    qsgd_decode_block(block, N, vtype, &p, q);
    stream_force_portable(0);
    for (int b = 0; b < NB; b++) {
        float f;
        if (vtype == SPARCML_DOUBLE) memcpy(&scales[b], block + b * vs, vs);
        else memcpy(&f, block + b * vs, vs), scales[b] = f;
    }
    for (int i = 0; i < N; i++) {
        unsigned code = (codes[(uint64_t)i * p.bits / 8] >> ((uint64_t)i * p.bits % 8)) & mask, l = code & (sign - 1);
        /* level l is l * (scale / s) in the value type, level s the scale */
        float scalef = (float)scales[i / B], mf = l == s ? scalef : (float)l * (scalef / (float)s), gotf;
        double m = l == s ? scales[i / B] : l * (scales[i / B] / s), want = code & sign ? -m : m, got;
        float wantf = code & sign ? -mf : mf;
        if (vtype == SPARCML_FLOAT) {
            memcpy(&gotf, (const char *)q + i * vs, vs);
            ck_assert_msg(memcmp(&gotf, &wantf, sizeof wantf) == 0, "bits %d value %d: %a, code %u gives %a",
                          p.bits, i, (double)gotf, code, (double)wantf);
            if (fabsf(vf[i]) == (float)scales[i / B]) ck_assert_msg(gotf == vf[i], "value %d: the maximum", i);
        } else {
            got = q[i];
            ck_assert_msg(memcmp(&got, &want, sizeof want) == 0, "bits %d double value %d: %a, code %u gives %a",
                          p.bits, i, got, code, want);
            if (fabs(v[i]) == scales[i / B]) ck_assert_msg(got == v[i], "double value %d: the maximum", i);
        }
    }
}
END_TEST

/* The encoder's AVX2 loop draws the codes its portable loop draws, bit for
 * bit, at every width, float and double: buckets starting inside a byte of
 * codes and a group of 8 (B = 301), buckets whose lanes end 24 values after the
 * last group of 32 (B = 283), a bucket of zeros and signed zeros, a
 * bucket's largest magnitude alone in a lane, another's at every lane (it
 * is level s exactly). */
START_TEST(encode_lanes_match_portable)
{
    enum { N = 1000 };
    static const uint32_t buckets[] = {301, 283};
    static unsigned char lanes[1 << 14], portable[1 << 14];
    int vtype = _i / 3 ? SPARCML_DOUBLE : SPARCML_FLOAT;
    for (int k = 0; k < 2; k++) {
        uint32_t B = buckets[k];
        qsgd_params p = {.bits = bit_settings[_i % 3], .bucket = B, .seed = 5};
        qsgd_key key = {.seed = 5, .rank = 1, .call = 2, .message = 3};
        double v[N];
        float vf[N];
        uint64_t n_lanes, n_portable;
        fixed_vector(vf, N);
        for (int i = 0; i < N; i++) v[i] = vf[i] * (1 + i % 3 * 1e-9); /* doubles off the float grid */
        v[40] = vf[40] = 7; /* the first bucket's maximum, alone in the first lane of a group */
        for (uint32_t i = 0; i < 8; i++) v[B + 5 * i] = vf[B + 5 * i] = 6; /* the second's, lane by lane */
        for (uint32_t i = 2 * B; i < 3 * B; i++) v[i] = vf[i] = i % 2 ? 0.0f : -0.0f; /* scale 0 */
        const void *in = vtype == SPARCML_FLOAT ? (const void *)vf : (const void *)v;
        n_lanes = qsgd_encode_block(in, N, vtype, &p, &key, lanes);
        stream_force_portable(1);
        n_portable = qsgd_encode_block(in, N, vtype, &p, &key, portable);
        stream_force_portable(0);
        ck_assert_uint_eq(n_lanes, n_portable);
        for (uint64_t i = 0; i < n_lanes; i++)
            ck_assert_msg(lanes[i] == portable[i], "bits %d, %s, B %u: byte %llu: %#x, portable %#x", p.bits,
                          vtype == SPARCML_FLOAT ? "float" : "double", B, (unsigned long long)i, lanes[i],
                          portable[i]);
    }
}
END_TEST

/* v[0 .. n) in the value type into in, encoded and decoded into q by the
 * portable loops or by lanes where they run. */
static void round_trip_as(int vtype, const double *v, int n, const qsgd_params *p, int portable, unsigned char *in,
                          unsigned char *q)
{
    static unsigned char block[4096];
    size_t vs = sparcml_value_size(vtype);
    qsgd_key key = {.seed = 1, .rank = 0, .call = 0, .message = 0};
    for (int i = 0; i < n; i++) {
        float f = (float)v[i];
        memcpy(in + i * vs, vtype == SPARCML_FLOAT ? (const void *)&f : (const void *)&v[i], vs);
    }
    stream_force_portable(portable);
    qsgd_encode_block(in, (uint64_t)n, vtype, p, &key, block);
    qsgd_decode_block(block, (uint64_t)n, vtype, p, q);
    stream_force_portable(0);
}

/* Non-finite and subnormal-scaled buckets travel raw, zeros as zeros,
 * float and double, the scale found by lanes (bucket 0's NaN, bucket 1's
 * infinity) or one by one (bucket 4, shorter than a group of lanes), with
 * both dispatches. */
START_TEST(special_values_travel_exactly)
{
    enum { N = 69 };
    qsgd_params p = {.bits = 2, .bucket = 16, .seed = 1};
    int vtype = _i / 2 ? SPARCML_DOUBLE : SPARCML_FLOAT;
    double tiny = vtype == SPARCML_FLOAT ? FLT_MIN : DBL_MIN, v[N];
    static unsigned char in[N * 8], q[N * 8];
    size_t vs = sparcml_value_size(vtype);
    for (int i = 0; i < N; i++) v[i] = 0.5 + i;
    v[3] = NAN;            /* bucket 0: raw */
    v[20] = INFINITY;      /* bucket 1: raw */
    for (int i = 32; i < 48; i++) v[i] = 0; /* bucket 2: zeros */
    for (int i = 48; i < 64; i++) v[i] = tiny / 64 * (i - 47); /* bucket 3: max tiny/4, subnormal: raw */
    v[68] = -INFINITY;     /* bucket 4: raw */
    round_trip_as(vtype, v, N, &p, _i % 2, in, q);
    for (int i = 0; i < N; i++)
        if (i < 32 || i >= 48) ck_assert_msg(memcmp(q + i * vs, in + i * vs, vs) == 0, "value %d", i);
        else ck_assert_msg(memcmp(q + i * vs, (const double[]){0}, vs) == 0, "value %d", i);
}
END_TEST

/* Tiny scales, 8 bits (s = 127), float and double, both dispatches: a
 * bucket whose scale lies just below the smallest quantized one (float
 * 2^-119, double 2^-1000; s / scale could overflow below them, or scale / s
 * be subnormal) travels raw, bit for bit; a bucket of exactly that scale
 * is quantized: each value decodes to one of the two levels around it. */
START_TEST(tiny_scales_travel_raw_or_quantized)
{
    enum { N = 32 };
    qsgd_params p = {.bits = 8, .bucket = 16, .seed = 1};
    int vtype = _i / 2 ? SPARCML_DOUBLE : SPARCML_FLOAT;
    double raw_scale = vtype == SPARCML_FLOAT ? 0x1.fffffep-120 : 0x1.fffffffffffffp-1001;
    double quantized_scale = vtype == SPARCML_FLOAT ? 0x1p-119 : 0x1p-1000, v[N];
    static unsigned char in[N * 8], q[N * 8];
    size_t vs = sparcml_value_size(vtype);
    for (int i = 0; i < N; i++) v[i] = (i < 16 ? raw_scale : quantized_scale) * (i % 16 + 1) / 16 * (i % 3 ? 1 : -1);
    round_trip_as(vtype, v, N, &p, _i % 2, in, q);
    for (int i = 0; i < 16; i++) ck_assert_msg(memcmp(q + i * vs, in + i * vs, vs) == 0, "raw value %d", i);
    for (int i = 16; i < N; i++) {
        float f;
        double d;
        memcpy(vtype == SPARCML_FLOAT ? (void *)&f : (void *)&d, q + i * vs, vs);
        double got = vtype == SPARCML_FLOAT ? f : d, step = quantized_scale / 127;
        ck_assert_msg(isfinite(got) && fabs(got - v[i]) <= step * (1 + 1e-6) && got * v[i] >= 0,
                      "value %d: %g from %g", i, got, v[i]);
    }
}
END_TEST

START_TEST(same_key_same_bits_other_key_other_bits)
{
    enum { N = 256 };
    qsgd_params p = {.bits = 4, .bucket = 64, .seed = 5};
    float v[N], a[N], b[N], c[N];
    fixed_vector(v, N);
    encode_decode(v, a, N, &p, 1);
    encode_decode(v, b, N, &p, 1);
    encode_decode(v, c, N, &p, 2);
    ck_assert(memcmp(a, b, sizeof a) == 0);
    ck_assert(memcmp(a, c, sizeof a) != 0);
}
END_TEST

/* Buckets draw unrelated numbers: a message of 8 identical buckets of 64
 * values (4 bits, levels with fractional parts) gets 8 different code
 * blocks, by lanes and by the portable loop. */
START_TEST(buckets_draw_their_own_numbers)
{
    enum { B = 64, NB = 8, N = B * NB };
    qsgd_params p = {.bits = 4, .bucket = B, .seed = 2};
    qsgd_key key = {.seed = 2, .rank = 1, .call = 7, .message = 0};
    static unsigned char block[1 << 14];
    float v[N];
    fixed_vector(v, B);
    for (int i = B; i < N; i++) v[i] = v[i % B];
    stream_force_portable(_i);
    qsgd_encode_block(v, N, SPARCML_FLOAT, &p, &key, block);
    stream_force_portable(0);
    const unsigned char *codes = block + sparcml_round8(NB * sizeof(float));
    for (int a = 0; a < NB; a++)
        for (int b = a + 1; b < NB; b++)
            ck_assert_msg(memcmp(codes + a * B / 2, codes + b * B / 2, B / 2) != 0, "buckets %d and %d: the same codes",
                          a, b);
}
END_TEST

START_TEST(message_round_trip)
{
    uint64_t idx[] = {2, 5, 11, 40};
    float vals[] = {1, -2, 3, -4}, back[64];
    char buf[256] __attribute__((aligned(8))), msg[512] __attribute__((aligned(8)));
    char out[512] __attribute__((aligned(8)));
    qsgd_params p = {.bits = 8, .bucket = 512, .seed = 3};
    qsgd_key key = {.seed = 3, .rank = 1, .call = 2, .message = 3};
    sv s, d;
    sparcml_stream_from_sorted(buf, 32, 64, SPARCML_FLOAT, 4, idx, vals);
    s = stream_view(buf);
    ck_assert_uint_le(qsgd_encode_message(&s, &p, &key, msg), qsgd_message_bound(&s, &p));
    ck_assert(qsgd_is_message(msg));
    ck_assert(!qsgd_is_message(buf));
    ck_assert_uint_eq(qsgd_decoded_bytes(msg), stream_bytes(&s));
    d = qsgd_decode_message(msg, out);
    ck_assert_uint_eq(d.nnz, 4);
    ck_assert_int_eq(d.dense, 0);
    ck_assert_int_eq(sparcml_stream_to_dense(out, back, 64), SPARCML_OK);
    ck_assert_float_eq(back[40], -4); /* the bucket maximum is exact */
    ck_assert(fabsf(back[2] - 1) <= 4.0f / 127);
    ck_assert(back[3] == 0);
}
END_TEST

/* A block quantized once, then cut into parts at every kind of boundary
 * (inside a bucket, on one, at the ends): each part's on-grid message
 * decodes to exactly the part's values, is smaller than the plain part,
 * and all of them fit qsgd_grid_bound.  A value off the grid refuses. */
START_TEST(parts_travel_on_the_grid)
{
    enum { N = 100, DIM = 1000 };
    static const uint64_t cuts[] = {0, 5, 16, 17, 40, 63, 64, 99, 100};
    enum { PARTS = sizeof cuts / sizeof cuts[0] - 1 };
    qsgd_params p = {.bits = bit_settings[_i], .bucket = 16, .seed = 11};
    qsgd_key key = {.seed = 11, .rank = 2, .call = 3, .message = 4};
    float v[N], q[N], back[N];
    static unsigned char block[1 << 14], msg[1 << 14], part[1 << 14], dec[1 << 14];
    uint64_t total = 0;
    fixed_vector(v, N);
    v[7] = -0.0f;
    v[70] = INFINITY; /* its bucket travels raw */
    qsgd_encode_block(v, N, SPARCML_FLOAT, &p, &key, block);
    qsgd_decode_block(block, N, SPARCML_FLOAT, &p, q);
    for (int c = 0; c < PARTS; c++) {
        uint64_t a = cuts[c], n = cuts[c + 1] - a, bytes;
        sv s = stream_init(part, DIM, SPARCML_FLOAT, n, 0), d;
        for (uint64_t j = 0; j < n; j++) sparcml_put_index(s.idx, s.iw, j, 3 * (a + j) + 1);
        memcpy(s.val, q + a, n * sizeof(float));
        bytes = qsgd_encode_on_grid(&s, &p, block, a, msg);
        ck_assert_uint_gt(bytes, 0);
        if (n >= 16) ck_assert_uint_lt(bytes, stream_bytes(&s)); /* a few values: scales and padding dominate */
        total += sparcml_round8(bytes);
        d = qsgd_decode_message(msg, dec);
        ck_assert_uint_eq(d.nnz, n);
        for (uint64_t j = 0; j < n; j++) ck_assert_uint_eq(sparcml_get_index(d.idx, d.iw, j), 3 * (a + j) + 1);
        memcpy(back, d.val, n * sizeof(float));
        ck_assert_mem_eq(back, q + a, n * sizeof(float));
    }
    ck_assert_uint_le(total, qsgd_grid_bound(N, sparcml_index_width(DIM), SPARCML_FLOAT, &p, PARTS));
    {
        sv s = stream_init(part, DIM, SPARCML_FLOAT, 20, 0);
        for (uint64_t j = 0; j < 20; j++) sparcml_put_index(s.idx, s.iw, j, j);
        memcpy(s.val, q + 20, 20 * sizeof(float));
        ((float *)s.val)[3] = nextafterf(q[23], INFINITY);
        ck_assert_uint_eq(qsgd_encode_on_grid(&s, &p, block, 20, msg), 0);
    }
}
END_TEST

Suite *qsgd_suite(void)
{
    Suite *s = suite_create("qsgd");
    TCase *tc = tcase_create("quantizer");
    tcase_add_loop_test(tc, unbiased, 0, 9);
    tcase_add_loop_test(tc, variance_within_bound, 0, 3);
    tcase_add_loop_test(tc, packing_round_trip, 0, 3);
    tcase_add_loop_test(tc, decode_follows_the_codes, 0, 12);
    tcase_add_loop_test(tc, encode_lanes_match_portable, 0, 6);
    tcase_add_loop_test(tc, special_values_travel_exactly, 0, 4);
    tcase_add_loop_test(tc, tiny_scales_travel_raw_or_quantized, 0, 4);
    tcase_add_test(tc, same_key_same_bits_other_key_other_bits);
    tcase_add_loop_test(tc, buckets_draw_their_own_numbers, 0, 2);
    tcase_add_test(tc, message_round_trip);
    tcase_add_loop_test(tc, parts_travel_on_the_grid, 0, 3);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}
