/* stream_dense_avx2.c -- the AVX2 back end of the dense sweeps.
 *
 * gather_avx2_for gives the gather of stream_dense.c (its contract,
 * stream_dense_impl.h's gather_fn) testing 128 bytes a step;
 * densify_streaming writes a large dense result with streaming stores.  Both compute the
 * bytes of the portable loops, run only where stream_avx2_runs says so,
 * and leave the upper halves of the vector registers clean (vzeroupper)
 * before other code runs. */
#include "config.h"

#include "kernel/stream_dense_impl.h"

#ifdef STREAM_X86
/* Bit j of the result says whether element j of the 128 bytes at p is
 * nonzero: 32 floats, 16 doubles, 32 or 16 integers.  Floats compare
 * "not equal, or unordered" to zero, C's x != 0. */
KERNEL_INLINE_AVX2 uint32_t nonzero_bits_f32(const float *p)
{
    const __m256 z = _mm256_setzero_ps();
    uint32_t m = 0;
    for (int q = 0; q < 4; q++)
        m |= (uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p + 8 * q), z, _CMP_NEQ_UQ)) << 8 * q;
    return m;
}

KERNEL_INLINE_AVX2 uint32_t nonzero_bits_f64(const double *p)
{
    const __m256d z = _mm256_setzero_pd();
    uint32_t m = 0;
    for (int q = 0; q < 4; q++)
        m |= (uint32_t)_mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(p + 4 * q), z, _CMP_NEQ_UQ)) << 4 * q;
    return m;
}

KERNEL_INLINE_AVX2 uint32_t nonzero_bits_u32(const uint32_t *p)
{
    const __m256i z = _mm256_setzero_si256();
    uint32_t m = 0;
    for (int q = 0; q < 4; q++) {
        __m256i eq = _mm256_cmpeq_epi32(_mm256_loadu_si256((const __m256i *)(p + 8 * q)), z);
        m |= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(eq)) << 8 * q;
    }
    return ~m;
}

KERNEL_INLINE_AVX2 uint32_t nonzero_bits_u64(const uint64_t *p)
{
    const __m256i z = _mm256_setzero_si256();
    uint32_t m = 0;
    for (int q = 0; q < 4; q++) {
        __m256i eq = _mm256_cmpeq_epi64(_mm256_loadu_si256((const __m256i *)(p + 4 * q)), z);
        m |= (uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(eq)) << 4 * q;
    }
    return ~m & 0xffff;
}

/* The entries of the nonzeros among the 32 elements at x + i (bit j of m:
 * element i + j) to oi and ov from o on; return the next o.  gather_bits:
 * one by one.  gather_lanes, for 4-byte values and indices: 8 elements a
 * store, the merge's table of kept lanes (vmerge_compact) moving a group's
 * nonzeros to the front, with their indices; the next group's store
 * overwrites what lies beyond them (room below cap: the step's condition). */
__attribute__((target("avx2"), always_inline)) static inline uint64_t gather_lanes(const void *x, uint64_t i,
                                                                                  uint32_t m, uint32_t *oi,
                                                                                  void *ov, uint64_t o)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int q = 0; q < 4; q++) {
        unsigned kept = m >> 8 * q & 0xff;
        __m256i v = _mm256_loadu_si256((const __m256i *)((const uint32_t *)x + i) + q);
        __m256i at = _mm256_add_epi32(lane, _mm256_set1_epi32((int)(uint32_t)(i + 8 * (uint64_t)q)));
        _mm256_storeu_si256((__m256i *)((uint32_t *)ov + o), vmerge_compact(v, kept));
        _mm256_storeu_si256((__m256i *)(oi + o), vmerge_compact(at, kept));
        o += (uint64_t)__builtin_popcount(kept);
    }
    return o;
}

/* nonzero_bits of the value type vt. */
KERNEL_INLINE_AVX2 uint32_t nonzero_bits(int vt, const void *p)
{
    switch (vt) {
    case SPARCML_FLOAT: return nonzero_bits_f32(p);
    case SPARCML_DOUBLE: return nonzero_bits_f64(p);
    case SPARCML_INT32: return nonzero_bits_u32(p);
    default: return nonzero_bits_u64(p);
    }
}

KERNEL_INLINE_AVX2 uint64_t gather_bits(int vt, unsigned iw, const void *x, uint64_t i, uint32_t m, void *oi,
                                        void *ov, uint64_t o)
{
    for (; m; m &= m - 1) {
        uint64_t j = i + (uint64_t)__builtin_ctz(m);
        index_put(oi, iw, o, j);
        value_copy(vt, ov, o++, x, j);
    }
    return o;
}

/* 128 bytes a step (b elements): one test skips them when all are zero,
 * a run of nonzeros is copied whole, else the set bits say where the
 * nonzeros are: gather_bits, or for 4-byte values and indices
 * gather_lanes once the last GATHER_PROBE steps with a nonzero held more
 * than GATHER_LANES_MIN (gather_lanes costs the same at any count,
 * gather_bits a branch per nonzero, mispredicted on data it has not seen:
 * lanes win from a density of a few percent on, bench/RESULTS.md,
 * Transparent mode).  The portable gather does the last elements and
 * those past the room for a whole step. */
#define GATHER_PROBE 64
#define GATHER_LANES_MIN 96

KERNEL_INLINE_AVX2 void gather_avx2_body(int vt, unsigned iw, const void *x, uint64_t n, uint64_t cap, void *oi,
                                         void *ov, gather_cursor *c, gather_fn *portable)
{
    const unsigned vs = value_size(vt), b = 128 / vs;
    uint64_t i = c->i, o = c->o;
    unsigned steps = 0, seen = 0;
    int lanes = 0;
    for (; n - i >= b && cap - o >= b; i += b) {
        uint32_t m = nonzero_bits(vt, (const char *)x + i * vs);
        if (m == (uint32_t)((UINT64_C(1) << b) - 1)) { /* a run */
            for (uint64_t j = 0; j < b; j++) index_put(oi, iw, o + j, i + j);
            memcpy((char *)ov + o * vs, (const char *)x + i * vs, b * vs);
            o += b;
        } else if (m) {
            seen += (unsigned)__builtin_popcount(m);
            o = lanes && vs == 4 && iw == 4 ? gather_lanes(x, i, m, oi, ov, o) : gather_bits(vt, iw, x, i, m, oi, ov, o);
            if (++steps < GATHER_PROBE) continue;
            lanes = seen > GATHER_LANES_MIN;
            steps = seen = 0;
        }
    }
    c->i = i;
    c->o = o;
    _mm256_zeroupper(); /* see stream_lines */
    portable(x, n, cap, oi, ov, c);
}

#define GATHER_AVX2(NAME, VT, IW)                                                                              \
    __attribute__((target("avx2"))) static void gather_##NAME##_avx2(const void *x, uint64_t n, uint64_t cap, \
                                                                      void *oi, void *ov, gather_cursor *c)   \
    { gather_avx2_body(VT, IW, x, n, cap, oi, ov, c, gather_##NAME); }
STREAM_TYPES(GATHER_AVX2)

#define GATHER_AVX2_ROW(NAME, VT, IW) STREAM_SLOT(VT, IW) = gather_##NAME##_avx2,
static gather_fn *const gather_avx2[5][2] = {STREAM_TYPES(GATHER_AVX2_ROW)};

gather_fn *gather_avx2_for(int vt, unsigned iw) { return gather_avx2[vt][iw == 8]; }

/* bytes (a multiple of 64) from the 64-byte aligned blk to the 64-byte
 * aligned dst, by streaming stores.  Every AVX2 loop of the kernel ends
 * with vzeroupper before other code runs: the compiler leaves it out
 * before a tail call, and upper halves left dirty slowed the process's
 * later vendor allreduces (transparent_bench, dense data, P = 2). */
__attribute__((target("avx2"))) static void stream_lines(char *dst, const char *blk, uint64_t bytes)
{
    for (uint64_t o = 0; o < bytes; o += 64) {
        _mm256_stream_si256((__m256i *)(dst + o), _mm256_load_si256((const __m256i *)(blk + o)));
        _mm256_stream_si256((__m256i *)(dst + o + 32), _mm256_load_si256((const __m256i *)(blk + o + 32)));
    }
    _mm256_zeroupper();
}

/* The block is assembled in a zeroed buffer on the stack and written with
 * streaming stores, each element once, and no line of the result is read
 * before it is written (a plain store reads it first); a result that
 * large is not in cache when the program reads it again anyway.  The
 * whole 64-byte lines of d go through the staging block; the elements
 * before the first and after the last are written in place.  After the
 * copy, the block is zeroed again where values went (or whole, when that
 * is cheaper: more than one value in 16 elements). */
__attribute__((target("avx2"))) void densify_streaming(char *d, uint64_t dim, unsigned vs, const placement *pl, const void *ix,
                              const void *v, uint64_t n)
{
    _Alignas(64) char blk[DENSIFY_BLOCK];
    uint64_t per = DENSIFY_BLOCK / vs, line = 64 / vs;
    uint64_t head = (64 - (uintptr_t)d % 64) % 64 / vs, end = head + (dim - head) / line * line, k;
    memset(d, 0, head * vs);
    k = pl->place(d, 0, head, ix, v, 0, n);
    memset(blk, 0, sizeof blk);
    for (uint64_t lo = head; lo < end; lo += per) {
        uint64_t hi = end - lo < per ? end : lo + per, k0 = k;
        k = pl->place(blk, lo, hi, ix, v, k, n);
        stream_lines(d + lo * vs, blk, (hi - lo) * vs);
        if ((k - k0) * 16 > hi - lo) memset(blk, 0, (hi - lo) * vs);
        else pl->unplace(blk, lo, ix, k0, k);
    }
    memset(d + end * vs, 0, (dim - end) * vs);
    pl->place(d + end * vs, end, dim, ix, v, k, n);
    _mm_sfence(); /* streaming stores are weakly ordered: ordered before what follows */
}
#endif
