/* stream_merge_avx2.c -- the AVX2 back end of the merge-add.
 *
 * vmerge_for gives, for a value type and index width, a merge with the
 * contract of the portable ones (stream_merge_impl.h's merge_fn) that
 * writes the same bytes: the sums are a + b with a's payload where both
 * are NaN, and an entry that a window cannot take to the bit goes to the
 * portable scalar merge.  It runs only where stream_avx2_runs says so;
 * every function here leaves the upper halves of the vector registers
 * clean (vzeroupper) before other code runs. */
#include "config.h"

#include "kernel/stream_merge_impl.h"

#ifdef STREAM_X86
/* merge_*_avx2: the merge advances by windows of 8 entries of each input.
 * With a7 and b7 the windows' last indices, the entries of the window of
 * a up to b7 and those of b up to a7 (na and nb, one of them 8) are the
 * next na + nb of the merge; counting them is all that one window waits
 * for from the one before, so windows overlap in the core where a
 * two-pointer merge waits on every entry.  A bitonic network sorts the 16
 * entries of both windows and the first na + nb go out.  Indices enter it
 * as 32-bit offsets from the windows' smallest index (as they are where
 * no index of either input reaches 2^28 and they have 4 bytes).  The
 * tagged network sorts 32-bit keys, offset << 4 | lane, and the values
 * follow the tags (vmerge_tagged, vmerge_follow8; offsets below 2^28);
 * windows spanning 2^28 or more take the keyed network, 64-bit keys with
 * 4-byte values in them and 8-byte ones beside them (vmerge_keyed);
 * windows spanning 2^32 or more take the scalar loop.
 * The choice is made once per merge where it can be (vmerge_mode).  An
 * index in both windows leaves the network in two adjacent lanes; with
 * 4-byte values the first gets the sum and the second is squeezed out
 * (vmerge_fold4), without a branch on whether a sum is due once sums are
 * frequent.  The tagged network puts a's entry first, so the sum is a + b
 * to the bit; the keyed one orders a pair by value, which decides the sum
 * only when both are NaN: such a window takes the scalar loop, as does one
 * of 8-byte values with a sum (folded in the tags, each value fetched for
 * both lanes of its pair, they measured slower than the portable merge:
 * 8-byte values move twice the dwords of 4-byte ones), and the rest of
 * the input the portable merge once such windows (or wide ones) are
 * frequent.  Two fast paths: windows with the same 8 indices are summed
 * lane by lane (identical indices), and a window that lies wholly below
 * the other is copied (long runs).  A window reads 8 entries of each input
 * and writes up to 16: VMERGE_ROOM entries left in each keep the stores
 * inside the union. */
#define VMERGE_ROOM 16
#define VMERGE_PROBE 64       /* windows between checks of the scalar share */
#define VMERGE_SCALAR_MAX 16  /* windows taking the scalar merge per probe before giving up */
/* Windows with a sum per probe that make the next fold always: with fewer,
 * a branch per window mispredicts less often than folding every window
 * costs (the threshold: bench/RESULTS.md, Kernels, the folding rows). */
#define VMERGE_FOLD_MIN 24
/* What a window did, as counts that add up in one word over a probe's
 * windows (fewer than 256). */
enum { VMERGE_SCALAR = 1, VMERGE_SUMMED = 1 << 8 };

/* 8 values of a window: 4-byte ones in x[0], 8-byte ones in x[0..2). */
typedef struct vmerge_vals {
    __m256i x[2];
} vmerge_vals;

/* Compare-exchange of keys: *x gets the smaller of each lane, *y the
 * larger; with carry, the 8-byte values *vx and *vy beside them move as
 * their keys do.  The compare is signed; the indices' top bit is flipped
 * in the keys, so that it orders them as unsigned. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_cex(__m256i *x, __m256i *y, __m256i *vx,
                                                                            __m256i *vy, int carry)
{
    __m256d m = _mm256_castsi256_pd(_mm256_cmpgt_epi64(*x, *y));
    __m256d a = _mm256_castsi256_pd(*x), b = _mm256_castsi256_pd(*y);
    *x = _mm256_castpd_si256(_mm256_blendv_pd(a, b, m));
    *y = _mm256_castpd_si256(_mm256_blendv_pd(b, a, m));
    if (carry) {
        __m256d c = _mm256_castsi256_pd(*vx), d = _mm256_castsi256_pd(*vy);
        *vx = _mm256_castpd_si256(_mm256_blendv_pd(c, d, m));
        *vy = _mm256_castpd_si256(_mm256_blendv_pd(d, c, m));
    }
}

/* The last two levels of the network, on *x and *y (each a bitonic 4)
 * and their carried values: out each sorted, as *x = [x0 x1 y0 y1] and
 * *y = [x2 x3 y2 y3], the order from which vmerge_keyed's shuffles take
 * indices and values. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_sort_halves(__m256i *x, __m256i *y,
                                                                                    __m256i *vx, __m256i *vy,
                                                                                    int carry)
{
    __m256i t0 = _mm256_permute2x128_si256(*x, *y, 0x20), t1 = _mm256_permute2x128_si256(*x, *y, 0x31);
    __m256i w0 = _mm256_permute2x128_si256(*vx, *vy, 0x20), w1 = _mm256_permute2x128_si256(*vx, *vy, 0x31);
    vmerge_cex(&t0, &t1, &w0, &w1, carry);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t1), u1 = _mm256_unpackhi_epi64(t0, t1);
    __m256i z0 = _mm256_unpacklo_epi64(w0, w1), z1 = _mm256_unpackhi_epi64(w0, w1);
    vmerge_cex(&u0, &u1, &z0, &z1, carry);
    *x = _mm256_unpacklo_epi64(u0, u1);
    *y = _mm256_unpackhi_epi64(u0, u1);
    *vx = _mm256_unpacklo_epi64(z0, z1);
    *vy = _mm256_unpackhi_epi64(z0, z1);
}

/* The 8 keys of (index ^ 2^31, rider) pairs k, r, in the order of the
 * dword permutation `order` then unpacked: lo and hi get 4 keys each. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_keys(__m256i k, __m256i r, __m256i order,
                                                                             __m256i *lo, __m256i *hi)
{
    k = _mm256_permutevar8x32_epi32(_mm256_xor_si256(k, _mm256_set1_epi32(INT32_MIN)), order);
    r = _mm256_permutevar8x32_epi32(r, order);
    *lo = _mm256_unpacklo_epi32(r, k);
    *hi = _mm256_unpackhi_epi32(r, k);
}

/* The keyed network: windows of 32-bit offsets ka and kb and their values
 * va and vb into 16 sorted offsets ko[0..2) and values vo.  Each offset
 * is a 64-bit key; 4-byte values ride in the keys, below the offset
 * (vo[0..2)); 8-byte ones (carry) travel beside them in registers of their
 * own, through the same compare-exchanges and shuffles (vo[0..4)).  Of two
 * equal offsets it orders the entries by value, not by input. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_keyed(__m256i ka, __m256i kb, vmerge_vals va,
                                                                                vmerge_vals vb, int carry, __m256i *ko,
                                                                                __m256i *vo)
{
    const __m256i sign = _mm256_set1_epi32(INT32_MIN);
    __m256i ra = carry ? _mm256_setzero_si256() : va.x[0], rb = carry ? _mm256_setzero_si256() : vb.x[0];
    /* a ascending (r0: 0-3, r1: 4-7), b descending (r2: 7-4, r3: 3-0): bitonic */
    __m256i r0, r1, r2, r3, s0 = va.x[0], s1 = va.x[1];
    __m256i s2 = _mm256_permute4x64_epi64(vb.x[1], 0x1B), s3 = _mm256_permute4x64_epi64(vb.x[0], 0x1B);
    vmerge_keys(ka, ra, _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7), &r0, &r1);
    vmerge_keys(kb, rb, _mm256_setr_epi32(7, 6, 3, 2, 5, 4, 1, 0), &r2, &r3);
    vmerge_cex(&r0, &r2, &s0, &s2, carry);
    vmerge_cex(&r1, &r3, &s1, &s3, carry);
    vmerge_cex(&r0, &r1, &s0, &s1, carry);
    vmerge_cex(&r2, &r3, &s2, &s3, carry);
    vmerge_sort_halves(&r0, &r1, &s0, &s1, carry);
    vmerge_sort_halves(&r2, &r3, &s2, &s3, carry);
    ko[0] = _mm256_xor_si256(_mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(r0), _mm256_castsi256_ps(r1), 0xDD)), sign);
    ko[1] = _mm256_xor_si256(_mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(r2), _mm256_castsi256_ps(r3), 0xDD)), sign);
    if (carry) {
        vo[0] = _mm256_permute2x128_si256(s0, s1, 0x20);
        vo[1] = _mm256_permute2x128_si256(s0, s1, 0x31);
        vo[2] = _mm256_permute2x128_si256(s2, s3, 0x20);
        vo[3] = _mm256_permute2x128_si256(s2, s3, 0x31);
    } else {
        vo[0] = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(r0), _mm256_castsi256_ps(r1), 0x88));
        vo[1] = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(r2), _mm256_castsi256_ps(r3), 0x88));
    }
}

/* Windows with 4-byte values sort 32-bit tagged keys, offset << 4 | lane
 * (a's lanes 0-7, b's 8-15): unsigned minima and maxima of 8 lanes a step,
 * and an index in both windows leaves with a's entry first.  The values
 * follow the sorted tags afterwards.  Offsets span less than 2^28; wider
 * windows take the keyed network, the values riding in its keys. */
#define VMERGE_TAG_BITS 4
#define VMERGE_SPAN_TAGGED ((UINT64_C(1) << (32 - VMERGE_TAG_BITS)) - 1)
#define VMERGE_SPAN_KEYED ((uint64_t)UINT32_MAX)

/* How the windows of a merge of n entries with indices from lo to hi
 * take them, chosen once per merge: 4-byte indices of which none exceeds
 * the tagged span as they are (no base, no check per window); all windows
 * by the keyed network where 16 entries span more than a quarter of the
 * tagged span on average (many windows would exceed it: a branch per
 * window that mispredicts); else tagged, from the windows' base. */
enum { VMERGE_RAW, VMERGE_BASED, VMERGE_KEYED };
static inline int vmerge_mode(uint64_t lo, uint64_t hi, uint64_t n, unsigned iw)
{
    if (iw == 4 && hi <= VMERGE_SPAN_TAGGED) return VMERGE_RAW;
    return (hi - lo) / n > VMERGE_SPAN_TAGGED / 64 ? VMERGE_KEYED : VMERGE_BASED;
}

/* Bitonic merge of the ascending 8-lane keys a and b into lo (the 8
 * smallest) and hi, each ascending. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_sort_tagged(__m256i a, __m256i b, __m256i *lo,
                                                                                    __m256i *hi)
{
    b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0));
    __m256i l = _mm256_min_epu32(a, b), h = _mm256_max_epu32(a, b); /* each bitonic, l below h */
    /* distance 4: [l0-3 h0-3] against [l4-7 h4-7] */
    __m256i x = _mm256_permute2x128_si256(l, h, 0x20), y = _mm256_permute2x128_si256(l, h, 0x31);
    __m256i m = _mm256_min_epu32(x, y), n = _mm256_max_epu32(x, y);
    /* distance 2: each 128-bit lane's groups of 4 (m's, n's) */
    x = _mm256_unpacklo_epi64(m, n);
    y = _mm256_unpackhi_epi64(m, n);
    m = _mm256_min_epu32(x, y);
    n = _mm256_max_epu32(x, y);
    /* distance 1 */
    x = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(m), _mm256_castsi256_ps(n), 0x88));
    y = _mm256_castps_si256(_mm256_shuffle_ps(_mm256_castsi256_ps(m), _mm256_castsi256_ps(n), 0xDD));
    m = _mm256_min_epu32(x, y);
    n = _mm256_max_epu32(x, y);
    /* back in order: lanes of l's 4 smallest, l's 4 largest, h's, h's */
    x = _mm256_unpacklo_epi32(m, n);
    y = _mm256_unpackhi_epi32(m, n);
    m = _mm256_unpacklo_epi64(x, y);
    n = _mm256_unpackhi_epi64(x, y);
    *lo = _mm256_permute2x128_si256(m, n, 0x20);
    *hi = _mm256_permute2x128_si256(m, n, 0x31);
}

/* The 16 tags of windows of offsets ka and kb (below 2^28), offset << 4
 * | a_tags (a's lanes; b's: the same plus 8), sorted into k[0..2) and
 * their offsets into ko[0..2); of an index in both windows, a's entry
 * comes first. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_sort_tags(__m256i ka, __m256i kb,
                                                                                  __m256i a_tags, __m256i *k,
                                                                                  __m256i *ko)
{
    ka = _mm256_or_si256(_mm256_slli_epi32(ka, VMERGE_TAG_BITS), a_tags);
    kb = _mm256_or_si256(_mm256_slli_epi32(kb, VMERGE_TAG_BITS), _mm256_add_epi32(a_tags, _mm256_set1_epi32(8)));
    vmerge_sort_tagged(ka, kb, &k[0], &k[1]);
    ko[0] = _mm256_srli_epi32(k[0], VMERGE_TAG_BITS);
    ko[1] = _mm256_srli_epi32(k[1], VMERGE_TAG_BITS);
}

/* The tagged network for 4-byte values: windows of 32-bit offsets ka and
 * kb (below 2^28) and their values va and vb into 16 sorted offsets
 * ko[0..2) and values vo[0..2). */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_tagged(__m256i ka, __m256i kb, vmerge_vals va,
                                                                                 vmerge_vals vb, __m256i *ko,
                                                                                 __m256i *vo)
{
    __m256i k[2];
    vmerge_sort_tags(ka, kb, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), k, ko);
    for (int h = 0; h < 2; h++) {
        /* the tag's low 3 bits pick the lane, its bit 3 (moved to the top) the window */
        __m256 from_a = _mm256_permutevar8x32_ps(_mm256_castsi256_ps(va.x[0]), k[h]);
        __m256 from_b = _mm256_permutevar8x32_ps(_mm256_castsi256_ps(vb.x[0]), k[h]);
        __m256 of_b = _mm256_castsi256_ps(_mm256_slli_epi32(k[h], 32 - VMERGE_TAG_BITS));
        vo[h] = _mm256_castps_si256(_mm256_blendv_ps(from_a, from_b, of_b));
    }
}

/* Row m: the lanes whose bit is set in m, in order, as nibbles from the
 * lowest (nibble k: the k-th lane kept), for _mm256_permutevar8x32_epi32,
 * which reads the low 3 bits of each lane's nibble shifted down. */
#define VMERGE_BITS_BELOW(m, i) (__builtin_popcount((unsigned)(m) & ((1u << (i)) - 1)))
#define VMERGE_LANE(m, i) (((m) >> (i) & 1) ? (uint32_t)(i) << (4 * VMERGE_BITS_BELOW(m, i)) : 0u)
#define VMERGE_PACK(m)                                                                                  \
    (VMERGE_LANE(m, 0) | VMERGE_LANE(m, 1) | VMERGE_LANE(m, 2) | VMERGE_LANE(m, 3) | VMERGE_LANE(m, 4) \
     | VMERGE_LANE(m, 5) | VMERGE_LANE(m, 6) | VMERGE_LANE(m, 7))
#define VMERGE_PACK4(m) VMERGE_PACK(m), VMERGE_PACK(m + 1), VMERGE_PACK(m + 2), VMERGE_PACK(m + 3)
#define VMERGE_PACK16(m) VMERGE_PACK4(m), VMERGE_PACK4(m + 4), VMERGE_PACK4(m + 8), VMERGE_PACK4(m + 12)
#define VMERGE_PACK64(m) VMERGE_PACK16(m), VMERGE_PACK16(m + 16), VMERGE_PACK16(m + 32), VMERGE_PACK16(m + 48)
const uint32_t vmerge_kept_lanes[256] = {VMERGE_PACK64(0), VMERGE_PACK64(64), VMERGE_PACK64(128),
                                                VMERGE_PACK64(192)};

/* Lane t of the result: lane t + 1 of the 16 in x[0..2) (lane 15: any). */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_next(const __m256i *x, __m256i *n)
{
    const __m256i next = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 7);
    n[0] = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(x[0], next),
                              _mm256_permutevar8x32_epi32(x[1], _mm256_setzero_si256()), 0x80);
    n[1] = _mm256_permutevar8x32_epi32(x[1], next);
}

/* All lanes whose bit is set in the 8-bit m. */
__attribute__((target("avx2"), always_inline)) static inline __m256i vmerge_lanes_of(unsigned m)
{
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)m), bit), bit);
}

static inline uint64_t vmerge_min(uint64_t x, uint64_t y) { return x < y ? x : y; }
static inline uint64_t vmerge_max(uint64_t x, uint64_t y) { return x > y ? x : y; }

/* Which of the 16 sorted entries a window keeps: all but lane t + 1 of
 * each pair of lanes t, t + 1 that hold one index (bit t of `pairs`). */
static inline unsigned vmerge_keep(unsigned pairs) { return ~(pairs << 1) & 0xffff; }

/* Bits of the lanes where x and y are both NaN. */
__attribute__((target("avx2"), always_inline)) static inline unsigned vmerge_nans(__m256i x, __m256i y)
{
    __m256 a = _mm256_castsi256_ps(x), b = _mm256_castsi256_ps(y);
    __m256 both = _mm256_and_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q), _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
    return (unsigned)_mm256_movemask_ps(both);
}

/* Whether a pair of the 16 values vo (bit t of `pairs`: lanes t and
 * t + 1) holds two NaNs (fp: floats): its sum would depend on which is
 * a's, which the keyed network does not keep. */
__attribute__((target("avx2"), always_inline)) static inline int vmerge_nan_pairs(const __m256i *vo, unsigned pairs,
                                                                                 int fp)
{
    __m256i nv[2];
    if (!fp) return 0;
    vmerge_next(vo, nv);
    return ((vmerge_nans(vo[0], nv[0]) | vmerge_nans(vo[1], nv[1]) << 8) & pairs) != 0;
}

/* One half of the 4-byte values v and the next lanes' n: the sums v + n
 * (v the first operand: see merge_add_f32) where `pairs` (8 bits) says,
 * then the lanes `keep` says to the front. */
__attribute__((target("avx2"), always_inline)) static inline __m256i vmerge_fold_lanes(__m256i v, __m256i n,
                                                                                      unsigned pairs, unsigned keep,
                                                                                      int fp)
{
    __m256i sum = v;
    if (fp) __asm__("vaddps %1, %0, %0" : "+x"(sum) : "x"(n));
    else sum = _mm256_add_epi32(v, n);
    return vmerge_compact(_mm256_blendv_epi8(v, sum, vmerge_lanes_of(pairs)), keep);
}

/* Sums of an index in both windows, for 4-byte values (fp: floats): the
 * 16 sorted entries (ko, vo) hold each such index in two adjacent lanes t
 * and t + 1 (bit t of `pairs`).  Lane t gets the sum and lane t + 1 goes:
 * the kept lanes (vmerge_keep) of each half move to its front, where
 * vmerge_put4 expects them; with no pairs, nothing moves.  From the tagged
 * network lane t is a's, so the sum is a + b as the scalar merge adds it,
 * to the bit (x86 keeps the first operand's payload of two NaNs); from the
 * keyed one it is too unless both are NaN (vmerge_nan_pairs). */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_fold4(__m256i *ko, __m256i *vo, unsigned pairs,
                                                                              int fp)
{
    __m256i nv[2];
    unsigned keep = vmerge_keep(pairs);
    vmerge_next(vo, nv);
    vo[0] = vmerge_fold_lanes(vo[0], nv[0], pairs & 0xff, keep & 0xff, fp);
    vo[1] = vmerge_fold_lanes(vo[1], nv[1], pairs >> 8, keep >> 8, fp);
    ko[0] = vmerge_compact(ko[0], keep & 0xff);
    ko[1] = vmerge_compact(ko[1], keep >> 8);
}

/* 8-byte values in the tagged network.  A window's 8 values split into
 * a plane of their low dwords and one of their high dwords (one shuffle
 * each, which puts value d at dword d with its bits 1 and 2 swapped: those
 * are a's tags, VMERGE_TAGS8, so a tag's low 3 bits pick its dword); a
 * tag's value is then two dword permutations and a blend per plane, as a
 * 4-byte value's, interleaved back. */
#define VMERGE_TAGS8 _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7)

/* planes[0..4): a's low and high dwords, b's low and high dwords. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_planes8(vmerge_vals va, vmerge_vals vb,
                                                                                __m256 *planes)
{
    __m256 a0 = _mm256_castsi256_ps(va.x[0]), a1 = _mm256_castsi256_ps(va.x[1]);
    __m256 b0 = _mm256_castsi256_ps(vb.x[0]), b1 = _mm256_castsi256_ps(vb.x[1]);
    planes[0] = _mm256_shuffle_ps(a0, a1, 0x88);
    planes[1] = _mm256_shuffle_ps(a0, a1, 0xDD);
    planes[2] = _mm256_shuffle_ps(b0, b1, 0x88);
    planes[3] = _mm256_shuffle_ps(b0, b1, 0xDD);
}

/* The values of the 8 tags t, in order, to out[0..2).  The tags are taken
 * in the order in which unpacking the planes' picks puts values back. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_follow8(__m256i t, const __m256 *planes,
                                                                                __m256i *out)
{
    __m256i u = _mm256_permutevar8x32_epi32(t, VMERGE_TAGS8);
    __m256 of_b = _mm256_castsi256_ps(_mm256_slli_epi32(u, 32 - VMERGE_TAG_BITS));
    __m256 lo = _mm256_blendv_ps(_mm256_permutevar8x32_ps(planes[0], u), _mm256_permutevar8x32_ps(planes[2], u), of_b);
    __m256 hi = _mm256_blendv_ps(_mm256_permutevar8x32_ps(planes[1], u), _mm256_permutevar8x32_ps(planes[3], u), of_b);
    out[0] = _mm256_castps_si256(_mm256_unpacklo_ps(lo, hi));
    out[1] = _mm256_castps_si256(_mm256_unpackhi_ps(lo, hi));
}

/* Bit t: lane t of the 16 sorted indices equals lane t + 1, both among
 * the first `count` (the entries the window takes). */
__attribute__((target("avx2"))) static inline unsigned vmerge_repeats(const __m256i *ko, uint64_t count)
{
    __m256i n[2];
    vmerge_next(ko, n);
    unsigned e0 = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(ko[0], n[0])));
    unsigned e1 = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(ko[1], n[1])));
    return (e0 | (e1 & 0x7f) << 8) & ((1u << (count - 1)) - 1);
}

__attribute__((target("avx2"), always_inline)) static inline vmerge_vals vmerge_load4(const void *p)
{
    vmerge_vals v = {{_mm256_loadu_si256((const __m256i *)p), _mm256_setzero_si256()}};
    return v;
}

__attribute__((target("avx2"), always_inline)) static inline vmerge_vals vmerge_load8(const void *p)
{
    vmerge_vals v = {{_mm256_loadu_si256((const __m256i *)p), _mm256_loadu_si256((const __m256i *)p + 1)}};
    return v;
}

__attribute__((target("avx2"), always_inline)) static inline void vmerge_store4(void *out, vmerge_vals v)
{
    _mm256_storeu_si256((__m256i *)out, v.x[0]);
}

__attribute__((target("avx2"), always_inline)) static inline void vmerge_store8(void *out, vmerge_vals v)
{
    _mm256_storeu_si256((__m256i *)out, v.x[0]);
    _mm256_storeu_si256((__m256i *)out + 1, v.x[1]);
}

/* a + b lane by lane, a the first operand (written in assembly: the
 * compiler may swap the operands of an addition, and x86 returns the first
 * operand's NaN when both are NaN). */
__attribute__((target("avx2"), always_inline)) static inline vmerge_vals vmerge_add_f32(vmerge_vals a, vmerge_vals b)
{
    __asm__("vaddps %1, %0, %0" : "+x"(a.x[0]) : "x"(b.x[0]));
    return a;
}

__attribute__((target("avx2"), always_inline)) static inline vmerge_vals vmerge_add_f64(vmerge_vals a, vmerge_vals b)
{
    __asm__("vaddpd %1, %0, %0" : "+x"(a.x[0]) : "x"(b.x[0]));
    __asm__("vaddpd %1, %0, %0" : "+x"(a.x[1]) : "x"(b.x[1]));
    return a;
}

__attribute__((target("avx2"), always_inline)) static inline vmerge_vals vmerge_add_u32(vmerge_vals a, vmerge_vals b)
{
    a.x[0] = _mm256_add_epi32(a.x[0], b.x[0]);
    return a;
}

__attribute__((target("avx2"), always_inline)) static inline vmerge_vals vmerge_add_u64(vmerge_vals a, vmerge_vals b)
{
    a.x[0] = _mm256_add_epi64(a.x[0], b.x[0]);
    a.x[1] = _mm256_add_epi64(a.x[1], b.x[1]);
    return a;
}

/* The indices of a window: 4-byte ones in x[0], 8-byte ones in
 * x[0..2) (vmerge_vals, loaded and stored by the same functions). */

/* Number of the 8 indices in k that are <= *bound. */
__attribute__((target("avx2"), always_inline)) static inline uint64_t vmerge_count_le4(vmerge_vals k, const void *bound)
{
    __m256i b = _mm256_castps_si256(_mm256_broadcast_ss((const float *)bound));
    __m256i le = _mm256_cmpeq_epi32(_mm256_max_epu32(k.x[0], b), b);
    return (uint64_t)__builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(le)));
}

/* 8-byte indices stay below SPARCML_MAX_DIM (2^56): signed compares order them. */
__attribute__((target("avx2"), always_inline)) static inline uint64_t vmerge_count_le8(vmerge_vals k, const void *bound)
{
    _Static_assert(SPARCML_MAX_DIM <= (UINT64_C(1) << 63), "8-byte indices compare as signed");
    uint64_t u;
    memcpy(&u, bound, 8);
    __m256i b = _mm256_set1_epi64x((long long)u);
    __m256i g0 = _mm256_cmpgt_epi64(k.x[0], b);
    __m256i g1 = _mm256_cmpgt_epi64(k.x[1], b);
    unsigned gt = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(g0))
                  | (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(g1)) << 4;
    return 8 - (uint64_t)__builtin_popcount(gt);
}

/* Whether the windows hold the same 8 indices. */
__attribute__((target("avx2"), always_inline)) static inline int vmerge_same4(vmerge_vals a, vmerge_vals b)
{
    return _mm256_movemask_epi8(_mm256_cmpeq_epi32(a.x[0], b.x[0])) == -1;
}

__attribute__((target("avx2"), always_inline)) static inline int vmerge_same8(vmerge_vals a, vmerge_vals b)
{
    __m256i e = _mm256_and_si256(_mm256_cmpeq_epi64(a.x[0], b.x[0]), _mm256_cmpeq_epi64(a.x[1], b.x[1]));
    return _mm256_movemask_epi8(e) == -1;
}

/* The windows' indices as 32-bit offsets from *base, the smaller of their
 * first indices, for the network; false when the largest offset exceeds
 * `span` (VMERGE_SPAN_TAGGED or VMERGE_SPAN_KEYED, the network's). */
__attribute__((target("avx2"), always_inline)) static inline int vmerge_offsets4(const void *ai_, const void *bi_,
                                                                                vmerge_vals ka, vmerge_vals kb,
                                                                                uint64_t span, __m256i *ra,
                                                                                __m256i *rb, uint64_t *base)
{
    const uint32_t *ai = ai_, *bi = bi_;
    if (span >= UINT32_MAX) { /* any two 32-bit indices fit: no base */
        *ra = ka.x[0];
        *rb = kb.x[0];
        *base = 0;
        return 1;
    }
    uint32_t lo = ai[0] < bi[0] ? ai[0] : bi[0], hi = ai[7] > bi[7] ? ai[7] : bi[7];
    if (hi - lo > span) return 0;
    __m256i b = _mm256_set1_epi32((int)lo);
    *ra = _mm256_sub_epi32(ka.x[0], b);
    *rb = _mm256_sub_epi32(kb.x[0], b);
    *base = lo;
    return 1;
}

__attribute__((target("avx2"), always_inline)) static inline __m256i vmerge_low_halves(vmerge_vals k, __m256i base)
{
    const __m256i low = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    __m256i x = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(k.x[0], low),
                                   _mm256_permutevar8x32_epi32(k.x[1], low), 0xF0);
    return _mm256_sub_epi32(x, base);
}

__attribute__((target("avx2"), always_inline)) static inline int vmerge_offsets8(const void *ai_, const void *bi_,
                                                                                vmerge_vals ka, vmerge_vals kb,
                                                                                uint64_t span, __m256i *ra,
                                                                                __m256i *rb, uint64_t *base)
{
    const uint64_t *ai = ai_, *bi = bi_;
    uint64_t lo = ai[0] < bi[0] ? ai[0] : bi[0], hi = ai[7] > bi[7] ? ai[7] : bi[7];
    if (hi - lo > span) return 0;
    __m256i b = _mm256_set1_epi32((int)(uint32_t)lo);
    *ra = vmerge_low_halves(ka, b);
    *rb = vmerge_low_halves(kb, b);
    *base = lo;
    return 1;
}


/* The 16 sorted values vo to out, the lanes of each half that `keep`
 * (vmerge_keep) has at its front, in order: a store of a whole register
 * each, the second overwriting what lies beyond the first's kept lanes. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_put4(void *out, const __m256i *vo,
                                                                             unsigned keep)
{
    _mm256_storeu_si256((__m256i *)out, vo[0]);
    _mm256_storeu_si256((__m256i *)((uint32_t *)out + __builtin_popcount(keep & 0xff)), vo[1]);
}

/* 8-byte values are never folded: keep is 0xffff.  Four stores written
 * out: GCC keeps vo on the stack for a loop over it. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_put8(void *out, const __m256i *vo,
                                                                             unsigned keep)
{
    (void)keep;
    _mm256_storeu_si256((__m256i *)out, vo[0]);
    _mm256_storeu_si256((__m256i *)out + 1, vo[1]);
    _mm256_storeu_si256((__m256i *)out + 2, vo[2]);
    _mm256_storeu_si256((__m256i *)out + 3, vo[3]);
}

/* The 16 sorted offsets ko[0..2) plus base as indices to out, as
 * vmerge_put4. */
__attribute__((target("avx2"), always_inline)) static inline void vmerge_put_indices4(void *out, const __m256i *ko,
                                                                                     uint64_t base, unsigned keep)
{
    __m256i b = _mm256_set1_epi32((int)(uint32_t)base), x[2] = {_mm256_add_epi32(ko[0], b), _mm256_add_epi32(ko[1], b)};
    vmerge_put4(out, x, keep);
}

__attribute__((target("avx2"), always_inline)) static inline void vmerge_put_indices8(void *out, const __m256i *ko,
                                                                                     uint64_t base, unsigned keep)
{
    __m256i b = _mm256_set1_epi64x((long long)base);
    __m256i *first = out, *second = (__m256i *)((uint64_t *)out + __builtin_popcount(keep & 0xff));
    _mm256_storeu_si256(first, _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm256_castsi256_si128(ko[0])), b));
    _mm256_storeu_si256(first + 1, _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm256_extracti128_si256(ko[0], 1)), b));
    _mm256_storeu_si256(second, _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm256_castsi256_si128(ko[1])), b));
    _mm256_storeu_si256(second + 1, _mm256_add_epi64(_mm256_cvtepu32_epi64(_mm256_extracti128_si256(ko[1], 1)), b));
}

/* ---------------------------------------------- the per-width helpers */

/* The helpers above for a width w (4 or 8 bytes), a constant where they
 * are inlined. */
KERNEL_INLINE_AVX2 vmerge_vals vmerge_load(unsigned w, const void *p) { return w == 4 ? vmerge_load4(p) : vmerge_load8(p); }

KERNEL_INLINE_AVX2 void vmerge_store(unsigned w, void *out, vmerge_vals v)
{
    if (w == 4) vmerge_store4(out, v);
    else vmerge_store8(out, v);
}

KERNEL_INLINE_AVX2 uint64_t vmerge_count_le(unsigned w, vmerge_vals k, const void *bound)
{
    return w == 4 ? vmerge_count_le4(k, bound) : vmerge_count_le8(k, bound);
}

KERNEL_INLINE_AVX2 int vmerge_same(unsigned w, vmerge_vals a, vmerge_vals b)
{
    return w == 4 ? vmerge_same4(a, b) : vmerge_same8(a, b);
}

KERNEL_INLINE_AVX2 int vmerge_offsets(unsigned w, const void *ai, const void *bi, vmerge_vals ka, vmerge_vals kb,
                                      uint64_t span, __m256i *ra, __m256i *rb, uint64_t *base)
{
    return w == 4 ? vmerge_offsets4(ai, bi, ka, kb, span, ra, rb, base)
                  : vmerge_offsets8(ai, bi, ka, kb, span, ra, rb, base);
}

KERNEL_INLINE_AVX2 void vmerge_put_indices(unsigned w, void *out, const __m256i *ko, uint64_t base, unsigned keep)
{
    if (w == 4) vmerge_put_indices4(out, ko, base, keep);
    else vmerge_put_indices8(out, ko, base, keep);
}

KERNEL_INLINE_AVX2 void vmerge_put(unsigned w, void *out, const __m256i *vo, unsigned keep)
{
    if (w == 4) vmerge_put4(out, vo, keep);
    else vmerge_put8(out, vo, keep);
}

KERNEL_INLINE_AVX2 vmerge_vals vmerge_add(int vt, vmerge_vals a, vmerge_vals b)
{
    switch (vt) {
    case SPARCML_FLOAT: return vmerge_add_f32(a, b);
    case SPARCML_DOUBLE: return vmerge_add_f64(a, b);
    case SPARCML_INT32: return vmerge_add_u32(a, b);
    default: return vmerge_add_u64(a, b);
    }
}

/* ----------------------------------------------------------- the windows */

/* Where a window merge stands: the next entries of a, b and out. */
typedef struct vmerge_cursor {
    const char *ai, *bi, *av, *bv;
    char *oi, *ov;
} vmerge_cursor;

/* c took na entries of a and nb of b, and wrote n. */
KERNEL_INLINE void vmerge_took(vmerge_cursor *c, int vt, unsigned iw, uint64_t na, uint64_t nb)
{
    c->ai += na * iw;
    c->av += na * value_size(vt);
    c->bi += nb * iw;
    c->bv += nb * value_size(vt);
}

KERNEL_INLINE void vmerge_wrote(vmerge_cursor *c, int vt, unsigned iw, uint64_t n)
{
    c->oi += n * iw;
    c->ov += n * value_size(vt);
}

/* The next na and nb entries at c by the scalar merge. */
KERNEL_INLINE_AVX2 unsigned vmerge_scalar(int vt, unsigned iw, vmerge_cursor *c, uint64_t na, uint64_t nb,
                                          merge_fn *scalar)
{
    _mm256_zeroupper(); /* see stream_lines */
    vmerge_wrote(c, vt, iw, scalar(c->ai, c->av, na, c->bi, c->bv, nb, c->oi, c->ov));
    return VMERGE_SCALAR;
}

/* The windows at c by the tagged network for 8-byte values, their offsets
 * ra and rb from base: as vmerge_mixed. */
KERNEL_INLINE_AVX2 unsigned vmerge_tagged8(int vt, unsigned iw, vmerge_cursor *c, __m256i ra, __m256i rb,
                                           vmerge_vals va, vmerge_vals vb, uint64_t na, uint64_t nb, uint64_t base,
                                           merge_fn *scalar)
{
    __m256i k[2], ko[2], vo[4];
    __m256 planes[4];
    vmerge_sort_tags(ra, rb, VMERGE_TAGS8, k, ko);
    if (vmerge_repeats(ko, na + nb)) return vmerge_scalar(vt, iw, c, na, nb, scalar);
    vmerge_planes8(va, vb, planes);
    vmerge_follow8(k[0], planes, vo);
    vmerge_follow8(k[1], planes, vo + 2);
    vmerge_put_indices(iw, c->oi, ko, base, 0xffff);
    vmerge_put8(c->ov, vo, 0xffff);
    vmerge_wrote(c, vt, iw, na + nb);
    return 0;
}

/* The windows at c when neither lies below the other: the network, or the
 * scalar merge when a sum is not folded (vmerge_fold4) or the indices span
 * more than 32 bits.  With `fold`, vmerge_fold4 runs whether or not a sum
 * is due (no branch on it).  Returns VMERGE_SCALAR, VMERGE_SUMMED or 0. */
KERNEL_INLINE_AVX2 unsigned vmerge_mixed(int vt, unsigned iw, vmerge_cursor *c, vmerge_vals ka, vmerge_vals va,
                                         vmerge_vals kb, vmerge_vals vb, uint64_t na, uint64_t nb, int fold,
                                         int mode, merge_fn *scalar)
{
    const unsigned vw = value_size(vt);
    __m256i ra, rb, ko[2], vo[4];
    uint64_t base;
    /* The tagged network unless the offsets span too much for the tags
     * (vmerge_mode).  Raw windows ask for the keyed span: 32-bit indices
     * take it as they are, and the merge has seen that all are below 2^28. */
    int keyed = mode == VMERGE_KEYED
                || !vmerge_offsets(iw, c->ai, c->bi, ka, kb,
                                   mode == VMERGE_RAW ? VMERGE_SPAN_KEYED : VMERGE_SPAN_TAGGED, &ra, &rb, &base);
    if (keyed && !vmerge_offsets(iw, c->ai, c->bi, ka, kb, VMERGE_SPAN_KEYED, &ra, &rb, &base))
        return vmerge_scalar(vt, iw, c, na, nb, scalar);
    if (vw == 8 && !keyed) return vmerge_tagged8(vt, iw, c, ra, rb, va, vb, na, nb, base, scalar);
    if (keyed) vmerge_keyed(ra, rb, va, vb, vw == 8, ko, vo);
    else vmerge_tagged(ra, rb, va, vb, ko, vo);
    unsigned pairs = vmerge_repeats(ko, na + nb);
    if (vw == 4 && (fold || pairs) && !(keyed && vmerge_nan_pairs(vo, pairs, value_is_fp(vt)))) {
        vmerge_fold4(ko, vo, pairs, value_is_fp(vt));
        vmerge_put_indices(iw, c->oi, ko, base, vmerge_keep(pairs));
        vmerge_put(vw, c->ov, vo, vmerge_keep(pairs));
    } else if (!pairs) { /* the stores' offsets are constants */
        vmerge_put_indices(iw, c->oi, ko, base, 0xffff);
        vmerge_put(vw, c->ov, vo, 0xffff);
    } else { /* a sum keyed: of 8-byte values, or of two NaNs */
        return vmerge_scalar(vt, iw, c, na, nb, scalar);
    }
    vmerge_wrote(c, vt, iw, na + nb - (uint64_t)__builtin_popcount(pairs));
    return pairs ? VMERGE_SUMMED : 0;
}

/* A window's 8 entries, keys k and values v, out as they are. */
KERNEL_INLINE_AVX2 void vmerge_copy8(int vt, unsigned iw, vmerge_cursor *c, vmerge_vals k, vmerge_vals v)
{
    vmerge_store(iw, c->oi, k);
    vmerge_store(value_size(vt), c->ov, v);
    vmerge_wrote(c, vt, iw, 8);
}

/* One window at c, folding as vmerge_mixed; returns what it did.  The fast
 * paths (the same 8 indices, a window wholly below the other) advance by
 * constants: no wait for the counts. */
KERNEL_INLINE_AVX2 unsigned vmerge_window(int vt, unsigned iw, vmerge_cursor *c, int fold, int mode,
                                          merge_fn *scalar)
{
    const unsigned vw = value_size(vt);
    vmerge_vals ka = vmerge_load(iw, c->ai), kb = vmerge_load(iw, c->bi);
    vmerge_vals va = vmerge_load(vw, c->av), vb = vmerge_load(vw, c->bv);
    uint64_t na = vmerge_count_le(iw, ka, c->bi + 7 * iw);
    uint64_t nb = vmerge_count_le(iw, kb, c->ai + 7 * iw);
    unsigned did = 0;
    if (vmerge_same(iw, ka, kb)) {
        vmerge_copy8(vt, iw, c, ka, vmerge_add(vt, va, vb));
        na = nb = 8;
    } else if (nb == 0) {
        vmerge_copy8(vt, iw, c, ka, va);
        na = 8;
    } else if (na == 0) {
        vmerge_copy8(vt, iw, c, kb, vb);
        nb = 8;
    } else {
        did = vmerge_mixed(vt, iw, c, ka, va, kb, vb, na, nb, fold, mode, scalar);
    }
    vmerge_took(c, vt, iw, na, nb);
    return did;
}

/* Windows at c while there is room before aend and bend and the scalar
 * merge is rarely due.  Each probe decides whether the next windows fold
 * without a branch (sums frequent: the branch would mispredict). */
KERNEL_INLINE_AVX2 void vmerge_windows(int vt, unsigned iw, vmerge_cursor *cp, const char *aend, const char *bend,
                                       int mode, merge_fn *scalar)
{
    vmerge_cursor c = *cp; /* in registers */
    unsigned tally = 0, windows = 0;
    int fold = 0;
    for (;;) {
        /* windows that each take at most 8 of an input and leave it
         * VMERGE_ROOM, up to the next probe: no checks between them */
        uint64_t left = vmerge_min((uint64_t)(aend - c.ai) / iw, (uint64_t)(bend - c.bi) / iw);
        if (left < VMERGE_ROOM) break;
        unsigned n = (unsigned)vmerge_min((left - VMERGE_ROOM) / 8 + 1, VMERGE_PROBE - windows);
        windows += n;
        while (n--) tally += vmerge_window(vt, iw, &c, fold, mode, scalar);
        if (windows < VMERGE_PROBE) continue;
        if ((tally & 0xff) > VMERGE_SCALAR_MAX) break;
        fold = tally >> 8 > VMERGE_FOLD_MIN;
        tally = windows = 0;
    }
    *cp = c;
}

/* The windows, each mode of vmerge_mode a loop of its own, the rest by
 * `rest`; a window the network cannot take by `scalar`. */
KERNEL_INLINE_AVX2 uint64_t vmerge_body(int vt, unsigned iw, MERGE_PARAMS, merge_fn *rest, merge_fn *scalar)
{
    vmerge_cursor c = {.ai = ai, .bi = bi, .av = av, .bv = bv, .oi = oi, .ov = ov};
    const char *aend = c.ai + an * iw, *bend = c.bi + bn * iw;
    int mode = an && bn ? vmerge_mode(vmerge_min(index_at(ai, iw, 0), index_at(bi, iw, 0)),
                                      vmerge_max(index_at(ai, iw, an - 1), index_at(bi, iw, bn - 1)), an + bn, iw)
                        : VMERGE_KEYED; /* no windows run */
    if (mode == VMERGE_RAW)
        vmerge_windows(vt, iw, &c, aend, bend, VMERGE_RAW, scalar);
    else if (mode == VMERGE_BASED)
        vmerge_windows(vt, iw, &c, aend, bend, VMERGE_BASED, scalar);
    else
        vmerge_windows(vt, iw, &c, aend, bend, VMERGE_KEYED, scalar);
    _mm256_zeroupper(); /* see stream_lines */
    return (uint64_t)(c.oi - (char *)oi) / iw
           + rest(c.ai, c.av, (uint64_t)(aend - c.ai) / iw, c.bi, c.bv, (uint64_t)(bend - c.bi) / iw, c.oi, c.ov);
}

/* Per pair: the windows' function, then the merge (its rest by the
 * portable merge) and the exact merge (by the scalar one). */
#define VMERGE_KERNELS(NAME, VT, IW)                                                                      \
    __attribute__((target("avx2"))) static uint64_t vmerge_##NAME(MERGE_PARAMS, merge_fn *rest)          \
    { return vmerge_body(VT, IW, MERGE_ARGS, rest, merge_scalar_##NAME); }                                \
    static uint64_t merge_##NAME##_avx2(MERGE_PARAMS) { return vmerge_##NAME(MERGE_ARGS, merge_##NAME); } \
    static uint64_t merge_exact_##NAME##_avx2(MERGE_PARAMS) { return vmerge_##NAME(MERGE_ARGS, merge_scalar_##NAME); }
STREAM_TYPES(VMERGE_KERNELS)

typedef struct vmerge {
    merge_fn *merge, *merge_exact;
} vmerge;

#define VMERGE_ROW(NAME, VT, IW) STREAM_SLOT(VT, IW) = {merge_##NAME##_avx2, merge_exact_##NAME##_avx2},
static const vmerge vmerge_table[5][2] = {STREAM_TYPES(VMERGE_ROW)};

merge_fn *vmerge_for(int vt, unsigned iw, int exact)
{
    const vmerge *v = &vmerge_table[vt][iw == 8];
    return exact ? v->merge_exact : v->merge;
}
#endif
