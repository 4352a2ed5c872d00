/* qsgd_impl.h -- what the QSGD quantizer (qsgd.c) shares with its AVX2
 * back end (qsgd_avx2.c): the constants of the per-value hash, and the
 * back end's loops, each the lanes version of a loop of qsgd.c. */
#ifndef SPARCML_QSGD_IMPL_H
#define SPARCML_QSGD_IMPL_H

#include <stdint.h>

#include "kernel/stream_impl.h"

#define WEYL32 0x9e3779b9u /* 2^32 / golden ratio, odd: i * WEYL32 is a bijection */
#define HASH32_M1 0x7feb352du
#define HASH32_M2 0x846ca68bu

#ifdef STREAM_X86
#define QSGD_X86 1
/* Codes of 2 or 4 bits of values [lo, hi) through the bucket's table of
 * 16 levels (decode_codes). */
KERNEL_HIDDEN void decode_lanes_f32(float *v, uint64_t lo, uint64_t hi, const float *level, int bits, uint64_t first,
                                    const unsigned char *codes);
KERNEL_HIDDEN void decode_lanes_f64(double *v, uint64_t lo, uint64_t hi, const double *level, int bits,
                                    uint64_t first, const unsigned char *codes);
/* 8-bit codes of values [lo, hi) (decode8_codes). */
KERNEL_HIDDEN void decode8_lanes_f32(float *v, uint64_t lo, uint64_t hi, float scale, float step, unsigned s,
                                     const unsigned char *c);
KERNEL_HIDDEN void decode8_lanes_f64(double *v, uint64_t lo, uint64_t hi, double scale, double step, unsigned s,
                                     const unsigned char *c);
/* The codes of values [lo, hi) of a bucket (encode_codes). */
KERNEL_HIDDEN void encode_lanes_f32(const float *v, uint64_t lo, uint64_t hi, float f, float scale, unsigned s,
                                    int bits, uint64_t first, uint64_t bk, unsigned char *codes);
KERNEL_HIDDEN void encode_lanes_f64(const double *v, uint64_t lo, uint64_t hi, double f, double scale, unsigned s,
                                    int bits, uint64_t first, uint64_t bk, unsigned char *codes);
/* The largest |v[i]| of n values, a multiple of 32 bytes, and whether all
 * are finite (bucket_scale). */
KERNEL_HIDDEN float magnitude_f32(const float *v, uint64_t n, int *finite);
KERNEL_HIDDEN double magnitude_f64(const double *v, uint64_t n, int *finite);
#endif

#endif
