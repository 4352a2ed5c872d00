/* topk_impl.h -- what the top-k selection (topk.c) shares with its AVX2
 * back end (topk_avx2.c): the filters of one block of values, the
 * portable ones of topk.c and their lanes versions. */
#ifndef SPARCML_TOPK_IMPL_H
#define SPARCML_TOPK_IMPL_H

#include <stdint.h>

#include "kernel/stream_impl.h"

/* Candidates of one block: indices base + i of x[0..len) whose bits
 * without the sign are at least t (1 <= t <= the NaN key), appended in
 * order at ci and cv (the value's bits); returns how many. */
typedef uint64_t filter_fn(const void *x, uint64_t base, uint64_t len, uint64_t t, uint64_t *ci, void *cv);

/* The portable filters, of float and double values (topk.c). */
KERNEL_HIDDEN filter_fn filter_f32, filter_f64;

#ifdef STREAM_X86
#define TOPK_X86 1
/* The same candidates, 128 bytes of values a step, the block's last ones
 * by the portable filter (topk_avx2.c). */
KERNEL_HIDDEN filter_fn filter_f32_avx2, filter_f64_avx2;
#endif

#endif
