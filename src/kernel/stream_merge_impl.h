/* stream_merge_impl.h -- what the merge-add's files (stream_merge.c and
 * its AVX2 back end stream_merge_avx2.c) share: the sums of one pair of
 * values, the merges' signature and the portable merges that the AVX2 one
 * falls back on. */
#ifndef SPARCML_STREAM_MERGE_IMPL_H
#define SPARCML_STREAM_MERGE_IMPL_H

#include "kernel/stream_impl.h"

/* Floating-point values (whose NaN sums need care). */
KERNEL_INLINE int value_is_fp(int vt) { return vt == SPARCML_FLOAT || vt == SPARCML_DOUBLE; }

/* d[k] = left ? v[i] + d[k] : d[k] + v[i], a C addition of the value type
 * (the dense sums: the compiler orders and vectorises it). */
KERNEL_INLINE void value_add_into(int vt, void *d, uint64_t k, const void *v, uint64_t i, int left)
{
    switch (vt) {
    case SPARCML_FLOAT: {
        float *x = d;
        const float *y = v;
        x[k] = left ? y[i] + x[k] : x[k] + y[i];
        break;
    }
    case SPARCML_DOUBLE: {
        double *x = d;
        const double *y = v;
        x[k] = left ? y[i] + x[k] : x[k] + y[i];
        break;
    }
    case SPARCML_INT32: {
        uint32_t *x = d;
        const uint32_t *y = v;
        x[k] = left ? (uint32_t)(y[i] + x[k]) : (uint32_t)(x[k] + y[i]);
        break;
    }
    default: {
        uint64_t *x = d;
        const uint64_t *y = v;
        x[k] = left ? y[i] + x[k] : x[k] + y[i];
        break;
    }
    }
}

/* a + b of one pair of values, a the first operand of the x86 addition:
 * where both are NaN it returns a's (quieted), so that the merge's sums
 * do not depend on which of its loops adds a pair.  Written in assembly
 * because the compiler may swap the operands of a C addition (it folds a
 * load into the second). */
KERNEL_INLINE float merge_add_f32(float a, float b)
{
#ifdef STREAM_X86
    __asm__("addss %1, %0" : "+x"(a) : "xm"(b));
    return a;
#else
    return a + b;
#endif
}

KERNEL_INLINE double merge_add_f64(double a, double b)
{
#ifdef STREAM_X86
    __asm__("addsd %1, %0" : "+x"(a) : "xm"(b));
    return a;
#else
    return a + b;
#endif
}

/* out[o] = a[i] + b[j], the merge's sum (merge_add_f32). */
KERNEL_INLINE void merge_add_to(int vt, void *out, uint64_t o, const void *a, uint64_t i, const void *b, uint64_t j)
{
    switch (vt) {
    case SPARCML_FLOAT: ((float *)out)[o] = merge_add_f32(((const float *)a)[i], ((const float *)b)[j]); break;
    case SPARCML_DOUBLE: ((double *)out)[o] = merge_add_f64(((const double *)a)[i], ((const double *)b)[j]); break;
    case SPARCML_INT32: ((uint32_t *)out)[o] = ((const uint32_t *)a)[i] + ((const uint32_t *)b)[j]; break;
    default: ((uint64_t *)out)[o] = ((const uint64_t *)a)[i] + ((const uint64_t *)b)[j]; break;
    }
}

/* The bits of a value, and of b, a or their sum as the masks ta, tb (all
 * ones or zero: a's index not above b's, b's not above a's) choose. */
KERNEL_INLINE uint64_t f32_bits(float x) { uint32_t u; return memcpy(&u, &x, 4), u; }
KERNEL_INLINE uint64_t f64_bits(double x) { uint64_t u; return memcpy(&u, &x, 8), u; }
KERNEL_INLINE uint64_t pick_bits(uint64_t ba, uint64_t bb, uint64_t bs, uint64_t ta, uint64_t tb)
{
    uint64_t pick = bb ^ ((ba ^ bb) & ta);
    return pick ^ ((bs ^ pick) & ta & tb);
}

/* The bits of b[j], a[i] or a[i] + b[j] (the merge's sum) as ta and tb
 * choose, the values read in their type: a float read as an integer would
 * reach the addition through memory. */
KERNEL_INLINE uint64_t merge_pick(int vt, const void *a, uint64_t i, const void *b, uint64_t j, uint64_t ta,
                                  uint64_t tb)
{
    float fa, fb;
    double da, db;
    uint64_t ua, ub;
    switch (vt) {
    case SPARCML_FLOAT:
        fa = ((const float *)a)[i], fb = ((const float *)b)[j];
        return pick_bits(f32_bits(fa), f32_bits(fb), f32_bits(merge_add_f32(fa, fb)), ta, tb);
    case SPARCML_DOUBLE:
        da = ((const double *)a)[i], db = ((const double *)b)[j];
        return pick_bits(f64_bits(da), f64_bits(db), f64_bits(merge_add_f64(da, db)), ta, tb);
    case SPARCML_INT32:
        ua = ((const uint32_t *)a)[i], ub = ((const uint32_t *)b)[j];
        return pick_bits(ua, ub, (uint32_t)(ua + ub), ta, tb);
    default:
        ua = ((const uint64_t *)a)[i], ub = ((const uint64_t *)b)[j];
        return pick_bits(ua, ub, ua + ub, ta, tb);
    }
}

/* ------------------------------------------------------------ the merges */

/* Sparse a + sparse b -> (oi, ov); returns the number of entries.  A
 * merge needs room for an + bn entries in oi and in ov (it may write
 * beyond the union before compacting); a scalar merge only for the union. */
#define MERGE_PARAMS                                                                                  \
    const void *ai, const void *av, uint64_t an, const void *bi, const void *bv, uint64_t bn, void *oi, \
        void *ov
#define MERGE_ARGS ai, av, an, bi, bv, bn, oi, ov
typedef uint64_t merge_fn(MERGE_PARAMS);

/* The portable merges (stream_merge.c), fallbacks of the AVX2 ones. */
#define STREAM_DECLARE_MERGE(NAME, VT, IW) KERNEL_HIDDEN merge_fn merge_##NAME, merge_scalar_##NAME;
STREAM_TYPES(STREAM_DECLARE_MERGE)

#ifdef STREAM_X86
/* The AVX2 merge for (vt, iw) (stream_merge_avx2.c): with `exact`, of the
 * scalar merge's room. */
KERNEL_HIDDEN merge_fn *vmerge_for(int vt, unsigned iw, int exact);
#endif

#endif
