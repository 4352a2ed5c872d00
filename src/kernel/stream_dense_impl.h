/* stream_dense_impl.h -- what the dense sweeps' files (stream_dense.c and
 * its AVX2 back end stream_dense_avx2.c) share: the element tests of the
 * gather, the gathers' and placements' signatures, and the AVX2 sweeps. */
#ifndef SPARCML_STREAM_DENSE_IMPL_H
#define SPARCML_STREAM_DENSE_IMPL_H

#include "kernel/stream_impl.h"

/* x[i] != 0 as C tests it: NaN and Inf are nonzeros, -0.0 is a zero. */
KERNEL_INLINE int value_nonzero(int vt, const void *x, uint64_t i)
{
    switch (vt) {
    case SPARCML_FLOAT: return ((const float *)x)[i] != 0;
    case SPARCML_DOUBLE: return ((const double *)x)[i] != 0;
    case SPARCML_INT32: return ((const uint32_t *)x)[i] != 0;
    default: return ((const uint64_t *)x)[i] != 0;
    }
}

/* y[i] = x[i] != 0 ? x[i] : 0 in the value type: -0.0 becomes +0.0. */
KERNEL_INLINE void value_copy_nonzero(int vt, void *y, const void *x, uint64_t i)
{
    switch (vt) {
    case SPARCML_FLOAT: ((float *)y)[i] = ((const float *)x)[i] != 0 ? ((const float *)x)[i] : 0; break;
    case SPARCML_DOUBLE: ((double *)y)[i] = ((const double *)x)[i] != 0 ? ((const double *)x)[i] : 0; break;
    case SPARCML_INT32: ((uint32_t *)y)[i] = ((const uint32_t *)x)[i]; break;
    default: ((uint64_t *)y)[i] = ((const uint64_t *)x)[i]; break;
    }
}

/* Where a gather is: the next element to read and the next entry to
 * write. */
typedef struct gather_cursor {
    uint64_t i, o;
} gather_cursor;

/* The nonzeros of x[c->i .. n) to (oi, ov) from entry c->o on, at most
 * cap entries in all; c moves on to where it stopped. */
typedef void gather_fn(const void *x, uint64_t n, uint64_t cap, void *oi, void *ov, gather_cursor *c);
#define STREAM_DECLARE_GATHER(NAME, VT, IW) KERNEL_HIDDEN gather_fn gather_##NAME;
STREAM_TYPES(STREAM_DECLARE_GATHER)

/* Store the values of entries k.. whose index is below end into blk, which
 * holds the elements from lo on, returning the first entry not stored;
 * unplace zeroes again what entries [k0, k) stored. */
typedef struct placement {
    uint64_t (*place)(void *blk, uint64_t lo, uint64_t end, const void *ix, const void *v, uint64_t k, uint64_t n);
    void (*unplace)(void *blk, uint64_t lo, const void *ix, uint64_t k0, uint64_t k);
} placement;

/* Bytes of the blocks a densify writes at a time (in L1). */
#define DENSIFY_BLOCK 4096

#ifdef STREAM_X86
/* The AVX2 sweeps (stream_dense_avx2.c): the gather for (vt, iw), and the
 * densify of n entries (ix, v) into dim values of vs bytes at d by
 * streaming stores. */
KERNEL_HIDDEN gather_fn *gather_avx2_for(int vt, unsigned iw);
KERNEL_HIDDEN void densify_streaming(char *d, uint64_t dim, unsigned vs, const placement *pl, const void *ix,
                                     const void *v, uint64_t n);
#endif

#endif
