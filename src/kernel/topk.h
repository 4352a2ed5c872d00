/* topk.h -- the k entries of largest magnitude of a dense float or double
 * vector, in O(n): the selection of a top-k sparsified allreduce (error
 * feedback keeps what is not sent).
 *
 * Order: an entry's magnitude is |v| compared on its bits (the value bits
 * without the sign, which order as |v| does); every NaN, whatever its sign
 * and payload, ranks above +-Inf and all NaNs rank equal.  Zeros (+0.0 and
 * -0.0) are never selected.  Among equal magnitudes the lower index comes
 * first, so the result is a pure function of (vals, n, k).
 *
 * Cost: one pass over the n values (a vectorised compare against a
 * threshold estimated from a fixed sample of at most 16384 values),
 * plus O(k) work on the entries that pass it; a second pass only when the
 * estimate proves too high (fewer than k entries passed).  Memory: the
 * caller's scratch of topk_scratch_bytes, O(k), never O(n). */
#ifndef SPARCML_TOPK_H
#define SPARCML_TOPK_H

#include <stdint.h>

#include "sparcml.h"

/* Bytes of scratch topk_select needs for n values of vtype and k entries
 * (0 when it needs none: k == 0 or k >= n). */
uint64_t topk_scratch_bytes(uint64_t n, uint64_t k, int vtype);

/* The min(k, nonzeros) entries of largest magnitude among vals[0..n)
 * (vtype SPARCML_FLOAT or SPARCML_DOUBLE): their indices, strictly
 * ascending, to idx (iw bytes each, 4 or 8; 4 needs n <= 2^32) and their
 * values, bit for bit, to out_vals, both in the order of the indices.
 * Returns how many.  scratch holds topk_scratch_bytes(n, k, vtype) bytes,
 * 8-byte aligned (NULL when that is 0); idx and out_vals need room for
 * min(k, n) entries. */
uint64_t topk_select(const void *vals, uint64_t n, int vtype, uint64_t k, void *scratch,
                     void *idx, unsigned iw, void *out_vals);

/* Error feedback's acc = eps + g: eps[i] += g[i] over n values of vtype
 * (float or double), in the type's arithmetic; returns the sum of the
 * squares of the sums, in double (four partial sums by index mod 4, the
 * last n mod 4 in the first, added as (s0 + s1) + (s2 + s3)). */
double topk_accumulate(void *eps, const void *g, uint64_t n, int vtype);

/* Both in one pass over eps and g: topk_accumulate(eps, g, n, vtype)
 * (into *norm2), then topk_select of the sums, bit for bit, except that
 * the sums are formed a block at a time in the selection's threshold
 * pass, which reads each block of them from the cache. */
uint64_t topk_select_sum(void *eps, const void *g, uint64_t n, int vtype, uint64_t k, void *scratch, void *idx,
                         unsigned iw, void *out_vals, double *norm2);

/* Tests (not thread-safe; the result is the same whatever it says):
 * topk_force_start(key) starts the first pass at threshold `key` (the bits
 * of a magnitude, as in the order above) instead of the sample's estimate,
 * 0 restores the estimate.  The portable pass runs where the AVX2 one
 * would with stream_force_portable (kernel/stream.h). */
void topk_force_start(uint64_t key);

#endif
