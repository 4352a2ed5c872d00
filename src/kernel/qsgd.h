/* qsgd.h -- QSGD stochastic quantization (Alistarh et al., NeurIPS'17) of
 * the messages of the sparse algorithms (SparCML, SC'19, section 6).
 *
 * Values are cut into buckets of B; each bucket travels as one scale (its
 * largest |v|, in the value type) and one code of `bits` bits per value:
 * 1 sign bit and bits-1 bits of level l in [0, s], s = 2^(bits-1) - 1
 * (bits 2 -> s = 1, 4 -> 7, 8 -> 127).  A value decodes to
 * sign * scale * l / s (l * (scale / s) in the value type; level s is the
 * scale exactly), where l is floor(|v| / scale * s) or one more, the latter
 * with probability equal to the fractional part: E[Q(v)] = v.
 *
 * Float buckets compute the level in float, doubles in double; the random
 * number a value is compared with lies on a grid of 2^-24 (float) or 2^-32
 * (double), so E[Q(v)] = v to within that and the value type's rounding.
 *
 * Exact buckets: a bucket holding a NaN or an infinity, or whose scale is
 * below 2^-119 (float) or 2^-1000 (double), travels raw (bit for bit).  An
 * all-zero bucket has scale 0 and decodes to zeros.  Random numbers come
 * from a counter-based hash of (seed, rank, call number, message, bucket,
 * element position): reproducible, and no generator state is shared
 * between threads.
 *
 * Message layout (an internal stream whose header format has QSGD_FLAG set
 * and whose reserved field holds bits | bucket << 8 | phase << 40): the
 * header and, for a sparse message, its indices as usual, then the
 * quantized value block (with a phase, its first bucket holds bucket -
 * phase values: see qsgd_encode_on_grid):
 *   scales[nb] (value type; -1 marks a raw bucket), padded to 8 bytes
 *   codes: n * bits bits, little-endian bit order, padded to 8 bytes
 *   the values of the raw buckets, in bucket order. */
#ifndef SPARCML_QSGD_H
#define SPARCML_QSGD_H

#include <stdint.h>

#include "kernel/stream.h"

#define QSGD_FLAG 0x80

typedef struct qsgd_params {
    int bits;        /* 2, 4 or 8 (0: off) */
    uint32_t bucket; /* values per bucket */
    uint64_t seed;
} qsgd_params;

/* Where the random numbers of one message come from. */
typedef struct qsgd_key {
    uint64_t seed, rank, call, message;
} qsgd_key;

/* Levels s for a bit width. */
static inline unsigned qsgd_levels(int bits) { return (1u << (bits - 1)) - 1; }

/* Bytes of the value block for n values: an upper bound (every bucket raw)
 * and the size without raw buckets. */
uint64_t qsgd_block_bound(uint64_t n, int vtype, const qsgd_params *p);

/* Quantize n values (float or double) into out; returns the bytes written. */
uint64_t qsgd_encode_block(const void *vals, uint64_t n, int vtype, const qsgd_params *p,
                           const qsgd_key *key, void *out);

/* Decode a block written by qsgd_encode_block into n values. */
void qsgd_decode_block(const void *block, uint64_t n, int vtype, const qsgd_params *p,
                       void *vals);

/* Whole messages. */
uint64_t qsgd_message_bound(const sv *s, const qsgd_params *p);
/* Encode stream s as a quantized message at out; returns its bytes. */
uint64_t qsgd_encode_message(const sv *s, const qsgd_params *p, const qsgd_key *key, void *out);

/* Values a rank quantized as one block (qsgd_encode_block, then decoded)
 * travel in parts without further loss: s holds the decoded values of
 * entries [first, first + s->nnz) of that block, whose scales start the
 * encoded block at `block`; s is encoded on the block's grid (the same
 * buckets, through the message's phase) so that it decodes to exactly its
 * values.  Returns the message's bytes, or 0 when a value of s is not on
 * the grid (or s is empty): then s travels as it is. */
uint64_t qsgd_encode_on_grid(const sv *s, const qsgd_params *p, const void *block, uint64_t first,
                             void *out);
/* Bytes of `parts` such messages together holding n values with indices of
 * at most iw bytes, each rounded up to 8: an upper bound. */
uint64_t qsgd_grid_bound(uint64_t n, unsigned iw, int vtype, const qsgd_params *p, uint64_t parts);

int qsgd_is_message(const void *buf);
/* Bytes of the plain stream a quantized message decodes to. */
uint64_t qsgd_decoded_bytes(const void *msg);
/* Decode a quantized message into a plain stream at out. */
sv qsgd_decode_message(const void *msg, void *out);

#endif
