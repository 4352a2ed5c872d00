/*
 * sparcml.h -- the tagged sparse-stream contract of libsparcml.
 *
 * libsparcml is a PMPI interposition library: preload it (LD_PRELOAD) into an
 * unmodified MPI program and MPI_Allreduce on a *tagged sparse-stream
 * datatype* runs one of the SparCML sparse allreduce algorithms.  Nothing
 * links against libsparcml: a program tags a datatype with plain standard MPI
 *
 *     MPI_Type_contiguous(8, MPI_BYTE, &t);      (any type of size 8, extent 8)
 *     MPI_Type_commit(&t);
 *     MPI_Type_set_name(t, "sparcml:v1:float");  (or double, int32, int64)
 *
 * and calls MPI_Allreduce(sendbuf, recvbuf, count, t, MPI_SUM, comm) where
 * both buffers hold `count` 8-byte words and sendbuf holds a stream laid out
 * as below.  Without the shim the same call fails with an MPI error (MPI_SUM
 * is undefined on derived datatypes), it never computes garbage.
 *
 * This header is optional: it only adds static inline helpers to create the
 * type and to build and read streams.  See sparcml-stream(7).
 *
 * Wire format (native byte order; buffers must be 8-byte aligned):
 *
 *   offset 0   sparcml_header (32 bytes)
 *   sparse:    offset 32: nnz indices of index_width bytes, strictly increasing,
 *                         each < dim; padded with zeros to a multiple of 8
 *              then:      nnz values of the value type
 *   dense:     offset 32: dim values (nnz == dim)
 *
 * index_width is 4 when dim <= 2^32 and 8 otherwise (no other choice is
 * valid).  Duplicate or unsorted indices are rejected with MPI_ERR_ARG; the
 * helper sparcml_stream_from_pairs() sorts and sums duplicates for you.
 */
#ifndef SPARCML_H
#define SPARCML_H

#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
/* The builders use SSE2 where the compiler targets it (every x86-64
 * compiler does); define SPARCML_NO_SIMD before including this header for
 * the portable loops only. */
#if defined(__SSE2__) && !defined(SPARCML_NO_SIMD)
#define SPARCML_SSE2_ 1
#include <emmintrin.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define SPARCML_MAGIC 0x4d435053u /* "SPCM" in little-endian memory order */
#define SPARCML_VERSION 1
#define SPARCML_HEADER_BYTES 32
#define SPARCML_WORD_BYTES 8
#define SPARCML_NAME_PREFIX "sparcml:v1:"
/* dim is limited so that every byte count below fits in 64 bits. */
#define SPARCML_MAX_DIM (UINT64_C(1) << 56)

enum sparcml_value_type {
    SPARCML_FLOAT = 1,
    SPARCML_DOUBLE = 2,
    SPARCML_INT32 = 3,
    SPARCML_INT64 = 4
};

enum sparcml_format { SPARCML_SPARSE = 0, SPARCML_DENSE = 1 };

/* Helper return codes (the library itself reports MPI error codes). */
enum sparcml_status {
    SPARCML_OK = 0,
    SPARCML_E_ARG = -1,      /* bad argument (value type, dim, index) */
    SPARCML_E_CAPACITY = -2, /* the stream does not fit the buffer */
    SPARCML_E_FORMAT = -3,   /* the buffer does not hold a valid stream */
    SPARCML_E_NOMEM = -4
};

typedef struct sparcml_header {
    uint32_t magic;      /* SPARCML_MAGIC */
    uint8_t version;     /* SPARCML_VERSION */
    uint8_t value_type;  /* enum sparcml_value_type */
    uint8_t index_width; /* 4 or 8, see sparcml_index_width() */
    uint8_t format;      /* enum sparcml_format */
    uint64_t dim;        /* N: the logical vector length */
    uint64_t nnz;        /* stored entries; == dim when dense */
    uint64_t reserved;   /* must be 0 */
} sparcml_header;

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(sparcml_header) == SPARCML_HEADER_BYTES, "header layout");
#endif

static inline size_t sparcml_value_size(int value_type)
{
    switch (value_type) {
    case SPARCML_FLOAT: case SPARCML_INT32: return 4;
    case SPARCML_DOUBLE: case SPARCML_INT64: return 8;
    default: return 0;
    }
}

static inline const char *sparcml_value_type_name(int value_type)
{
    switch (value_type) {
    case SPARCML_FLOAT: return "float";
    case SPARCML_DOUBLE: return "double";
    case SPARCML_INT32: return "int32";
    case SPARCML_INT64: return "int64";
    default: return NULL;
    }
}

static inline unsigned sparcml_index_width(uint64_t dim)
{
    return dim <= (UINT64_C(1) << 32) ? 4u : 8u;
}

static inline uint64_t sparcml_round8(uint64_t bytes) { return (bytes + 7) & ~(uint64_t)7; }

/* Bytes of a sparse stream with nnz entries (header, padded indices, values). */
static inline uint64_t sparcml_sparse_bytes(uint64_t dim, int value_type, uint64_t nnz)
{
    return SPARCML_HEADER_BYTES + sparcml_round8(nnz * sparcml_index_width(dim))
           + nnz * sparcml_value_size(value_type);
}

static inline uint64_t sparcml_dense_bytes(uint64_t dim, int value_type)
{
    return SPARCML_HEADER_BYTES + dim * sparcml_value_size(value_type);
}

/* The library stores a result sparsely only while that is smaller than dense:
 * nnz * (index_width + value_size) < dim * value_size. */
static inline int sparcml_prefers_dense(uint64_t dim, int value_type, uint64_t nnz)
{
    uint64_t vs = sparcml_value_size(value_type);
    return nnz * (sparcml_index_width(dim) + vs) >= dim * vs;
}

/* The `count` (8-byte words) that always suffices for any result of
 * dimension dim: the dense size, plus room for index padding. */
static inline MPI_Count sparcml_capacity(uint64_t dim, int value_type)
{
    return (MPI_Count)((sparcml_dense_bytes(dim, value_type) + 8 + 7) / 8);
}

/* Words needed to hold a sparse input stream with nnz entries. */
static inline MPI_Count sparcml_sparse_capacity(uint64_t dim, int value_type, uint64_t nnz)
{
    return (MPI_Count)((sparcml_sparse_bytes(dim, value_type, nnz) + 7) / 8);
}

/* Create, commit and tag an 8-byte datatype for streams of value_type.
 * On failure nothing is left behind: *newtype is MPI_DATATYPE_NULL.
 * (A duplicate made with MPI_Type_dup is not tagged: MPI gives it no
 * name; tag it again with MPI_Type_set_name.) */
static inline int sparcml_type_create(int value_type, MPI_Datatype *newtype)
{
    char name[64];
    const char *vt = sparcml_value_type_name(value_type);
    int rc;
    *newtype = MPI_DATATYPE_NULL;
    if (!vt) return MPI_ERR_ARG;
    rc = MPI_Type_contiguous(SPARCML_WORD_BYTES, MPI_BYTE, newtype);
    if (rc != MPI_SUCCESS) return rc;
    rc = MPI_Type_commit(newtype);
    if (rc == MPI_SUCCESS) {
        strcpy(name, SPARCML_NAME_PREFIX);
        strcat(name, vt);
        rc = MPI_Type_set_name(*newtype, name);
    }
    if (rc != MPI_SUCCESS) {
        MPI_Type_free(newtype);
        *newtype = MPI_DATATYPE_NULL;
    }
    return rc;
}

/* --- writing streams ---------------------------------------------------- */

static inline void sparcml_write_header(void *buf, uint64_t dim, int value_type,
                                        uint64_t nnz, int format)
{
    sparcml_header h;
    h.magic = SPARCML_MAGIC;
    h.version = SPARCML_VERSION;
    h.value_type = (uint8_t)value_type;
    h.index_width = (uint8_t)sparcml_index_width(dim);
    h.format = (uint8_t)format;
    h.dim = dim;
    h.nnz = format == SPARCML_DENSE ? dim : nnz;
    h.reserved = 0;
    memcpy(buf, &h, sizeof h);
}

/* Pointers into a stream buffer (sparse: indices and values; dense: values,
 * *indices set to NULL).  The header must already be written. */
static inline void sparcml_stream_arrays(const void *buf, void **indices, void **values)
{
    sparcml_header h;
    char *p = (char *)buf + SPARCML_HEADER_BYTES;
    memcpy(&h, buf, sizeof h);
    if (h.format == SPARCML_DENSE) {
        *indices = NULL;
        *values = p;
    } else {
        *indices = p;
        *values = p + sparcml_round8(h.nnz * h.index_width);
    }
}

static inline void sparcml_put_index(void *indices, unsigned width, uint64_t i, uint64_t v)
{
    if (width == 4) {
        uint32_t v32 = (uint32_t)v;
        memcpy((char *)indices + 4 * i, &v32, 4);
    } else {
        memcpy((char *)indices + 8 * i, &v, 8);
    }
}

static inline uint64_t sparcml_get_index(const void *indices, unsigned width, uint64_t i)
{
    if (width == 4) {
        uint32_t v32;
        memcpy(&v32, (const char *)indices + 4 * i, 4);
        return v32;
    } else {
        uint64_t v;
        memcpy(&v, (const char *)indices + 8 * i, 8);
        return v;
    }
}

static inline int sparcml_check_dims(uint64_t dim, int value_type)
{
    return sparcml_value_size(value_type) != 0 && dim <= SPARCML_MAX_DIM ? SPARCML_OK
                                                                         : SPARCML_E_ARG;
}

#ifdef SPARCML_SSE2_
/* The blocks of 4 indices from i on (returned: where they end): the
 * differences and bits of sparcml_copy_sorted_ ORed into *down and *high,
 * stored at 4 bytes each if narrow (a constant where inlined). */
static inline uint64_t sparcml_sorted_blocks_(void *out, int narrow, const uint64_t *indices, uint64_t i,
                                               uint64_t nnz, uint64_t *down, uint64_t *high)
{
    __m128i vdown = _mm_setzero_si128(), vhigh = _mm_setzero_si128(), one = _mm_set1_epi64x(1);
    uint64_t lanes[2];
    for (; i + 4 <= nnz; i += 4) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(indices + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(indices + i + 2));
        __m128i pa = _mm_loadu_si128((const __m128i *)(const void *)(indices + i - 1));
        __m128i pb = _mm_loadu_si128((const __m128i *)(const void *)(indices + i + 1));
        vdown = _mm_or_si128(vdown, _mm_sub_epi64(_mm_sub_epi64(a, pa), one));
        vdown = _mm_or_si128(vdown, _mm_sub_epi64(_mm_sub_epi64(b, pb), one));
        vhigh = _mm_or_si128(vhigh, _mm_or_si128(a, b));
        if (narrow) {
            __m128 low = _mm_shuffle_ps(_mm_castsi128_ps(a), _mm_castsi128_ps(b), _MM_SHUFFLE(2, 0, 2, 0));
            _mm_storeu_si128((__m128i *)(void *)((char *)out + 4 * i), _mm_castps_si128(low));
        }
    }
    _mm_storeu_si128((__m128i *)(void *)lanes, vdown);
    *down |= lanes[0] | lanes[1];
    _mm_storeu_si128((__m128i *)(void *)lanes, vhigh);
    *high |= lanes[0] | lanes[1];
    return i;
}
#endif

/* Whether indices[0 .. nnz) are strictly increasing and below 2^56 (0 or
 * 1), copying them to out at width 4 or 8 (0: only the check), 4-byte
 * ones in the same pass.  No branch per index: for values below 2^56
 * (which `high` checks), x - prev - 1 has its top bit set exactly where
 * x <= prev. */
static inline int sparcml_copy_sorted_(void *out, unsigned width, const uint64_t *indices, uint64_t nnz)
{
    uint64_t down = 0, high, i = 1;
    if (nnz == 0) return 1;
    high = indices[0];
    if (width == 4) {
#ifdef SPARCML_SSE2_
        i = sparcml_sorted_blocks_(out, 1, indices, i, nnz, &down, &high);
#endif
        sparcml_put_index(out, 4, 0, indices[0]);
        for (; i < nnz; i++) {
            down |= indices[i] - indices[i - 1] - 1;
            high |= indices[i];
            sparcml_put_index(out, 4, i, indices[i]);
        }
    } else {
#ifdef SPARCML_SSE2_
        i = sparcml_sorted_blocks_(NULL, 0, indices, i, nnz, &down, &high);
#endif
        for (; i < nnz; i++) {
            down |= indices[i] - indices[i - 1] - 1;
            high |= indices[i];
        }
        if (width == 8) memcpy(out, indices, nnz * 8);
    }
    return ((down >> 63) | (high >> 56)) == 0;
}

/* The n values (vs bytes each) at vp to their indices at ip (width w) in
 * dense; an index not below dim is a malformed stream.  Called with a
 * constant w, so each width compiles to its own loop; the value size is a
 * branch per entry, always the same way (a copy of constant size each:
 * one of variable size is a call). */
static inline int sparcml_scatter_(unsigned w, size_t vs, const char *ip, const char *vp, uint64_t n, char *dense,
                                   uint64_t dim)
{
    uint64_t i;
    for (i = 0; i < n; i++) {
        uint64_t j;
        if (w == 4) { uint32_t j32; memcpy(&j32, ip + i * 4, 4); j = j32; }
        else memcpy(&j, ip + i * 8, 8);
        if (j >= dim) return SPARCML_E_FORMAT;
        if (vs == 4) memcpy(dense + j * 4, vp + i * 4, 4);
        else memcpy(dense + j * 8, vp + i * 8, 8);
    }
    return SPARCML_OK;
}

/* Stream from strictly increasing indices (each < dim) and values: sparse
 * while that is smaller, else dense with zeros at the other indices (the
 * library's own size rule), so sparcml_capacity(dim, value_type) words
 * always suffice.  Refused indices (SPARCML_E_ARG) leave a buffer that
 * holds no stream: its magic is cleared. */
static inline int sparcml_stream_from_sorted(void *buf, MPI_Count capacity_words, uint64_t dim,
                                             int value_type, uint64_t nnz,
                                             const uint64_t *indices, const void *values)
{
    char *ip = (char *)buf + SPARCML_HEADER_BYTES, *vp;
    uint64_t w = sparcml_index_width(dim), pad;
    size_t vs = sparcml_value_size(value_type);
    if (sparcml_check_dims(dim, value_type) != SPARCML_OK || nnz > dim) return SPARCML_E_ARG;
    if (sparcml_prefers_dense(dim, value_type, nnz)) {
        if (sparcml_dense_bytes(dim, value_type) > (uint64_t)capacity_words * 8) return SPARCML_E_CAPACITY;
        /* checked before the scatter: an index past dim must not be written */
        memset(buf, 0, sizeof(uint32_t));
        if (!sparcml_copy_sorted_(NULL, 0, indices, nnz) || (nnz > 0 && indices[nnz - 1] >= dim))
            return SPARCML_E_ARG;
        sparcml_write_header(buf, dim, value_type, dim, SPARCML_DENSE);
        memset(ip, 0, dim * vs);
        return sparcml_scatter_(8, vs, (const char *)indices, (const char *)values, nnz, ip, dim);
    }
    if (sparcml_sparse_bytes(dim, value_type, nnz) > (uint64_t)capacity_words * 8)
        return SPARCML_E_CAPACITY;
    /* The indices are copied as they are checked: a header left from an
     * earlier stream would make a refused list look like one. */
    memset(buf, 0, sizeof(uint32_t));
    if (!sparcml_copy_sorted_(ip, (unsigned)w, indices, nnz) || (nnz > 0 && indices[nnz - 1] >= dim))
        return SPARCML_E_ARG;
    pad = sparcml_round8(nnz * w) - nnz * w;
    memset(ip + nnz * w, 0, pad);
    vp = ip + nnz * w + pad;
    if (nnz) memcpy(vp, values, nnz * vs);
    sparcml_write_header(buf, dim, value_type, nnz, SPARCML_SPARSE);
    return SPARCML_OK;
}

static inline uint64_t sparcml_load_u64_(const char *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

/* The bits of x: 0 for 0. */
static inline unsigned sparcml_bit_count_(uint64_t x)
{
    unsigned b = 0;
    while (b < 64 && x >> b) b++;
    return b;
}

/* Whether more than a quarter of the 256 places a pass of from_pairs' sort
 * writes start in one cache set (a 64-byte line's offset modulo 4 KiB): a
 * byte every index takes equally often puts them exactly n / 256 elements
 * apart, and as they advance together every store misses L1 (random
 * indices put a few in each set).  Below 256 KiB an array stays in L2,
 * where the misses cost less than gathering in lines does. */
static inline int sparcml_places_collide_(size_t es, const uint64_t *count, uint64_t n)
{
    unsigned char in_set[64] = {0};
    uint64_t i, at = 0;
    if (n * es < 256 * 1024) return 0;
    for (i = 0; i < 256; i++) {
        if (count[i] && ++in_set[at * es / 64 % 64] > 64) return 1;
        at += count[i];
    }
    return 0;
}

/* One stable counting pass of from_pairs' sort: the n elements of es bytes
 * (8 or 16: a constant where inlined) at src to dst by the byte of their
 * first word at shift; count holds that byte's histogram.  Where the
 * places collide (above), each byte's elements gather in its line of 64
 * bytes in wc (256 lines, in L1), at their places in a line of dst, which
 * is written whole once its last place is taken.  Such a line holds, below
 * the byte's first place, what its line in wc held: the places of bytes
 * before it, whose elements there never fill a line; those are written
 * last, the last byte's first, each from the start of its line. */
static inline void sparcml_radix_pass_(size_t es, const char *src, char *dst, uint64_t n, unsigned shift,
                                       uint64_t *count, char *wc)
{
    const uint64_t per_line = 64 / es;
    uint64_t i, sum = 0;
    int lines = sparcml_places_collide_(es, count, n), b;
    for (i = 0; i < 256; i++) {
        uint64_t c = count[i];
        count[i] = sum;
        sum += c;
    }
    if (!lines) {
        for (i = 0; i < n; i++) {
            const char *e = src + i * es;
            char *d = dst + count[sparcml_load_u64_(e) >> shift & 255]++ * es;
            if (es == 8) memcpy(d, e, 8);
            else memcpy(d, e, 16);
        }
        return;
    }
    for (i = 0; i < n; i++) {
        const char *e = src + i * es;
        uint64_t digit = sparcml_load_u64_(e) >> shift & 255, at = count[digit]++;
        char *line = wc + digit * 64, *place = line + at % per_line * es;
        if (es == 8) memcpy(place, e, 8);
        else memcpy(place, e, 16);
        if ((at + 1) % per_line == 0) memcpy(dst + (at + 1 - per_line) * es, line, 64);
    }
    for (b = 255; b >= 0; b--) {
        uint64_t in_line = count[b] % per_line;
        memcpy(dst + (count[b] - in_line) * es, wc + b * 64, in_line * es);
    }
}

/* from_pairs' elements: an index and its position in the input, sorted by
 * index and stably (equal indices keep their input order), least
 * significant byte first, between a and b.  An element is one word,
 * index << low | position, where both fit in 64 bits (half the bytes each
 * pass moves), else two (low = 0: the index, then the position).  count[j]
 * is the histogram of byte j of the indices; a byte every index shares is
 * skipped.  Returns the array that holds the result. */
static inline char *sparcml_sort_pairs_(size_t es, char *a, char *b, uint64_t n, unsigned low, unsigned bytes,
                                        uint64_t (*count)[256], char *wc)
{
    unsigned j;
    for (j = 0; n > 1 && j < bytes; j++) {
        unsigned shift = low + 8 * j;
        char *t;
        if (count[j][sparcml_load_u64_(a) >> shift & 255] == n) continue;
        sparcml_radix_pass_(es, a, b, n, shift, count[j], wc);
        t = a, a = b, b = t;
    }
    return a;
}

/* from_pairs' elements of es bytes at a, each byte of each index counted;
 * 0, or SPARCML_E_ARG for an index not below dim. */
static inline int sparcml_fill_pairs_(size_t es, char *a, const uint64_t *indices, uint64_t n, uint64_t dim,
                                      unsigned low, unsigned bytes, uint64_t (*count)[256])
{
    uint64_t i;
    unsigned j;
    for (i = 0; i < n; i++) {
        uint64_t x = indices[i], w[2] = {es == 8 ? x << low | i : x, i};
        if (x >= dim) return SPARCML_E_ARG;
        memcpy(a + i * es, w, es == 8 ? 8 : 16);
        for (j = 0; j < bytes; j++) count[j][x >> 8 * j & 255]++;
    }
    return SPARCML_OK;
}

static inline void sparcml_value_add_(int value_type, void *acc, const void *v)
{
    switch (value_type) {
    case SPARCML_FLOAT: { float a, b; memcpy(&a, acc, 4); memcpy(&b, v, 4); a += b; memcpy(acc, &a, 4); break; }
    case SPARCML_DOUBLE: { double a, b; memcpy(&a, acc, 8); memcpy(&b, v, 8); a += b; memcpy(acc, &a, 8); break; }
    case SPARCML_INT32: { uint32_t a, b; memcpy(&a, acc, 4); memcpy(&b, v, 4); a += b; memcpy(acc, &a, 4); break; }
    default: { uint64_t a, b; memcpy(&a, acc, 8); memcpy(&b, v, 8); a += b; memcpy(acc, &a, 8); break; }
    }
}

/* Stream from (index, value) pairs in any order: sorts them and sums the
 * values of duplicate indices in their input order; sparse or dense as
 * sparcml_stream_from_sorted.  One allocation holds the histograms, the
 * sort's lines and two arrays of elements (sparcml_sort_pairs_), each from
 * a line of 64 bytes; the sorted one then holds the distinct indices, the
 * other their summed values. */
static inline int sparcml_stream_from_pairs(void *buf, MPI_Count capacity_words, uint64_t dim,
                                            int value_type, uint64_t n, const uint64_t *indices,
                                            const void *values)
{
    size_t vs = sparcml_value_size(value_type), es;
    unsigned low = n > 1 ? sparcml_bit_count_(n - 1) : 0, index_bits, bytes;
    uint64_t (*count)[256], i, m = 0, prev = 0, mask;
    size_t total, span;
    char *wc, *a, *sorted, *vals;
    int rc;
    if (sparcml_check_dims(dim, value_type) != SPARCML_OK) return SPARCML_E_ARG;
    index_bits = sparcml_bit_count_(dim - 1);
    bytes = (index_bits + 7) / 8;
    es = index_bits + low <= 64 ? 8 : 16;
    if (es == 16) low = 0;
    if (n > (SIZE_MAX - sizeof *count * 8 - 64 - 256 * 64) / (2 * es) - 64) return SPARCML_E_NOMEM;
    mask = (UINT64_C(1) << low) - 1; /* low < 64 where n is not refused */
    span = (n * es + 63) / 64 * 64;
    total = sizeof *count * bytes + 64 + 256 * 64 + 2 * span;
    count = (uint64_t(*)[256])malloc(total);
    if (!count) return SPARCML_E_NOMEM;
    memset(count, 0, sizeof *count * bytes);
    wc = (char *)count + sizeof *count * bytes + 64 - (uintptr_t)(count + bytes) % 64;
    a = wc + 256 * 64;
    rc = es == 8 ? sparcml_fill_pairs_(8, a, indices, n, dim, low, bytes, count)
                 : sparcml_fill_pairs_(16, a, indices, n, dim, low, bytes, count);
    if (rc != SPARCML_OK) { free(count); return rc; }
    sorted = es == 8 ? sparcml_sort_pairs_(8, a, a + span, n, low, bytes, count, wc)
                     : sparcml_sort_pairs_(16, a, a + span, n, low, bytes, count, wc);
    vals = sorted == a ? a + span : a;
    for (i = 0; i < n; i++) {
        /* index m goes to word m of sorted: never past element i, read already */
        uint64_t w = sparcml_load_u64_(sorted + i * es), index = w >> low;
        const char *v = (const char *)values + (es == 8 ? w & mask : sparcml_load_u64_(sorted + i * es + 8)) * vs;
        if (m > 0 && index == prev) {
            sparcml_value_add_(value_type, vals + (m - 1) * vs, v);
        } else {
            memcpy(sorted + m * 8, &index, 8);
            prev = index;
            if (vs == 4) memcpy(vals + m * 4, v, 4); /* copies of constant size: no call */
            else memcpy(vals + m * 8, v, 8);
            m++;
        }
    }
    rc = sparcml_stream_from_sorted(buf, capacity_words, dim, value_type, m, (const uint64_t *)(void *)sorted, vals);
    free(count);
    return rc;
}

/* Bitwise zero (a 4- or 8-byte value): -0.0 is kept as an entry, so the
 * round trip is exact.  An integer load the compiler inlines (a memcmp per
 * element costs ~10 ns). */
static inline int sparcml_value_is_zero_(size_t value_size, const void *v)
{
    if (value_size == 4) {
        uint32_t x;
        memcpy(&x, v, 4);
        return x == 0;
    } else {
        uint64_t x;
        memcpy(&x, v, 8);
        return x == 0;
    }
}

#ifdef SPARCML_SSE2_
/* -1 in 32-bit lane j where value j of the 4 at p (of vs bytes) is zero:
 * an 8-byte value is where the OR of its halves is. */
static inline __m128i sparcml_zeros4_(size_t vs, const char *p)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    if (vs == 8) {
        __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
        __m128 lo = _mm_castsi128_ps(x), hi = _mm_castsi128_ps(y);
        x = _mm_or_si128(_mm_castps_si128(_mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0))),
                         _mm_castps_si128(_mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1))));
    }
    return _mm_cmpeq_epi32(x, _mm_setzero_si128());
}

/* Bit j set: value j of the 16 at p has a non-zero bit. */
static inline unsigned sparcml_nonzero_mask16_(size_t vs, const char *p)
{
    __m128i lo = _mm_packs_epi32(sparcml_zeros4_(vs, p), sparcml_zeros4_(vs, p + 4 * vs));
    __m128i hi = _mm_packs_epi32(sparcml_zeros4_(vs, p + 8 * vs), sparcml_zeros4_(vs, p + 12 * vs));
    return ~(unsigned)_mm_movemask_epi8(_mm_packs_epi16(lo, hi)) & 0xffffu;
}

/* Zeros among the 4 * quads values at d: counted in the 32-bit lanes of
 * two registers (a zero's lane is -1, which they subtract), emptied every
 * SPARCML_COUNT_SPAN_ quads, before a lane can wrap. */
#define SPARCML_COUNT_SPAN_ 16384
static inline uint64_t sparcml_count_zeros_(size_t vs, const char *d, uint64_t quads)
{
    uint64_t zeros = 0;
    while (quads > 0) {
        uint64_t span = quads < SPARCML_COUNT_SPAN_ ? quads : SPARCML_COUNT_SPAN_, q = 0;
        __m128i c0 = _mm_setzero_si128(), c1 = _mm_setzero_si128();
        uint32_t sum[4];
        for (; q + 2 <= span; q += 2) {
            c0 = _mm_sub_epi32(c0, sparcml_zeros4_(vs, d + 4 * vs * q));
            c1 = _mm_sub_epi32(c1, sparcml_zeros4_(vs, d + 4 * vs * (q + 1)));
        }
        if (q < span) c0 = _mm_sub_epi32(c0, sparcml_zeros4_(vs, d + 4 * vs * q));
        _mm_storeu_si128((__m128i *)(void *)sum, _mm_add_epi32(c0, c1));
        zeros += (uint64_t)sum[0] + sum[1] + sum[2] + sum[3];
        d += 4 * vs * span;
        quads -= span;
    }
    return zeros;
}
#endif

/* The non-zero elements of d[0, n): SSE2 counts the zeros of each 4 in
 * vector lanes, the portable loop tests blocks of 8; the rest one by one. */
static inline uint64_t sparcml_count_nonzero_(size_t vs, const char *d, uint64_t n)
{
    uint64_t i, nnz = 0;
#ifdef SPARCML_SSE2_
    i = n / 4 * 4;
    nnz = i - sparcml_count_zeros_(vs, d, n / 4);
#else
    for (i = 0; i + 8 <= n; i += 8) {
        const char *block = d + i * vs;
        unsigned c = 0, j;
        for (j = 0; j < 8; j++) c += !sparcml_value_is_zero_(vs, block + j * vs);
        nnz += c;
    }
#endif
    for (; i < n; i++) nnz += !sparcml_value_is_zero_(vs, d + i * vs);
    return nnz;
}

/* Index (width w) and value (size vs) of the non-zero elements of d[0, n),
 * in order, into ip and vp: all of them, returning their count, or the
 * first `most` and most + 1 as soon as there are more.  SSE2: blocks of
 * 16, one entry per set bit of the block's mask.  Portable: blocks of 8, a
 * block of zeros skipped, else branch-free while 8 slots are left: every
 * element is written to the next free slot, which only a non-zero one
 * then claims (so up to 7 slots past the last entry are written).  Called
 * with constant vs and w, so each use compiles to its own loop. */
static inline uint64_t sparcml_gather_nonzero_(size_t vs, unsigned w, const char *d, uint64_t n, uint64_t most,
                                               char *ip, char *vp)
{
    uint64_t i = 0, k = 0;
#ifdef SPARCML_SSE2_
    for (; i + 16 <= n; i += 16) {
        unsigned m = sparcml_nonzero_mask16_(vs, d + i * vs);
        for (; m; m &= m - 1, k++) {
            uint64_t at = i + (unsigned)__builtin_ctz(m);
            if (k == most) return most + 1;
            if (w == 4) { uint32_t a32 = (uint32_t)at; memcpy(ip + k * 4, &a32, 4); }
            else memcpy(ip + k * 8, &at, 8);
            memcpy(vp + k * vs, d + at * vs, vs);
        }
    }
#else
    for (; i + 8 <= n && most - k >= 8; i += 8) {
        uint64_t any = 0, x, j;
        for (j = 0; j < 8; j++) {
            x = 0;
            memcpy(&x, d + (i + j) * vs, vs);
            any |= x;
        }
        if (any == 0) continue;
        for (j = 0; j < 8; j++) {
            uint64_t at = i + j;
            x = 0;
            memcpy(&x, d + at * vs, vs);
            if (w == 4) { uint32_t a32 = (uint32_t)at; memcpy(ip + k * 4, &a32, 4); }
            else memcpy(ip + k * 8, &at, 8);
            memcpy(vp + k * vs, &x, vs); /* the bytes memcpy put into x */
            k += x != 0;
        }
    }
#endif
    for (; i < n; i++) {
        if (sparcml_value_is_zero_(vs, d + i * vs)) continue;
        if (k == most) return most + 1;
        sparcml_put_index(ip, w, k, i);
        memcpy(vp + k * vs, d + i * vs, vs);
        k++;
    }
    return k;
}

/* sparcml_gather_nonzero_ with vs and w as constants. */
static inline uint64_t sparcml_gather_any_(size_t vs, unsigned w, const char *d, uint64_t n, uint64_t most,
                                           char *ip, char *vp)
{
    if (vs == 4 && w == 4) return sparcml_gather_nonzero_(4, 4, d, n, most, ip, vp);
    if (vs == 4) return sparcml_gather_nonzero_(4, 8, d, n, most, ip, vp);
    if (w == 4) return sparcml_gather_nonzero_(8, 4, d, n, most, ip, vp);
    return sparcml_gather_nonzero_(8, 8, d, n, most, ip, vp);
}

/* Stream from a dense array of dim values: sparse (the non-zero entries) when
 * that is smaller, dense otherwise.  Where the buffer holds any stream of
 * dim (as sparcml_capacity words do), one read: the values are gathered
 * where the largest sparse stream's would lie and move down once their
 * count is known (a copy of the entries only), and more nonzeros than a
 * sparse stream may have stop the gather.  Else the nonzeros are counted
 * first, so a buffer too small is left as it was. */
static inline int sparcml_stream_from_dense(void *buf, MPI_Count capacity_words, uint64_t dim,
                                            int value_type, const void *dense)
{
    size_t vs = sparcml_value_size(value_type);
    unsigned w = sparcml_index_width(dim);
    uint64_t room = (uint64_t)capacity_words * 8, most, nnz;
    char *ip = (char *)buf + SPARCML_HEADER_BYTES;
    if (sparcml_check_dims(dim, value_type) != SPARCML_OK) return SPARCML_E_ARG;
    most = dim > 0 ? (dim * vs - 1) / (w + vs) : 0; /* the most entries still sparse */
    if (dim == 0) {
        nnz = 1; /* dense: zero entries are no smaller */
    } else if (sparcml_sparse_bytes(dim, value_type, most) <= room && sparcml_dense_bytes(dim, value_type) <= room) {
        char *vp = ip + sparcml_round8(most * w);
        nnz = sparcml_gather_any_(vs, w, (const char *)dense, dim, most, ip, vp);
        if (nnz <= most) memmove(ip + sparcml_round8(nnz * w), vp, nnz * vs);
    } else {
        nnz = sparcml_count_nonzero_(vs, (const char *)dense, dim);
        if (nnz <= most && sparcml_sparse_bytes(dim, value_type, nnz) > room) return SPARCML_E_CAPACITY;
        if (nnz <= most)
            sparcml_gather_any_(vs, w, (const char *)dense, dim, nnz, ip, ip + sparcml_round8(nnz * w));
    }
    if (nnz > most) {
        if (sparcml_dense_bytes(dim, value_type) > room) return SPARCML_E_CAPACITY;
        sparcml_write_header(buf, dim, value_type, dim, SPARCML_DENSE);
        memcpy(ip, dense, dim * vs);
        return SPARCML_OK;
    }
    sparcml_write_header(buf, dim, value_type, nnz, SPARCML_SPARSE);
    memset(ip + nnz * w, 0, sparcml_round8(nnz * w) - nnz * w);
    return SPARCML_OK;
}

/* --- reading streams ---------------------------------------------------- */

/* Header of a stream, with a basic sanity check (not a full validation). */
static inline int sparcml_stream_header(const void *buf, sparcml_header *h)
{
    memcpy(h, buf, sizeof *h);
    if (h->magic != SPARCML_MAGIC || h->version != SPARCML_VERSION
        || sparcml_value_size(h->value_type) == 0 || h->dim > SPARCML_MAX_DIM
        || h->index_width != sparcml_index_width(h->dim) || h->nnz > h->dim
        || (h->format == SPARCML_DENSE && h->nnz != h->dim) || h->format > SPARCML_DENSE)
        return SPARCML_E_FORMAT;
    return SPARCML_OK;
}

/* Entry i of a stream (0 <= i < nnz): its index and a copy of its value. */
static inline void sparcml_stream_entry(const void *buf, uint64_t i, uint64_t *index, void *value)
{
    sparcml_header h;
    void *ip, *vp;
    size_t vs;
    memcpy(&h, buf, sizeof h);
    vs = sparcml_value_size(h.value_type);
    sparcml_stream_arrays(buf, &ip, &vp);
    *index = ip ? sparcml_get_index(ip, h.index_width, i) : i;
    memcpy(value, (const char *)vp + i * vs, vs);
}

/* Expand a stream into dense[0 .. dim) (zeros where no entry is stored). */
static inline int sparcml_stream_to_dense(const void *buf, void *dense, uint64_t dim)
{
    sparcml_header h;
    void *ip, *vp;
    size_t vs;
    const char *ix, *v;
    if (sparcml_stream_header(buf, &h) != SPARCML_OK) return SPARCML_E_FORMAT;
    if (h.dim != dim) return SPARCML_E_ARG;
    vs = sparcml_value_size(h.value_type);
    sparcml_stream_arrays(buf, &ip, &vp);
    if (!ip) {
        memcpy(dense, vp, dim * vs);
        return SPARCML_OK;
    }
    memset(dense, 0, dim * vs);
    ix = (const char *)ip;
    v = (const char *)vp;
    return h.index_width == 4 ? sparcml_scatter_(4, vs, ix, v, h.nnz, (char *)dense, dim)
                              : sparcml_scatter_(8, vs, ix, v, h.nnz, (char *)dense, dim);
}

/* Compression (SPARCML_COMPRESS, sparcml(7)): what this rank holds back of
 * a gradient buffer -- the buffer's count values of its datatype, copied to
 * out -- for checkpoints and tests.  libsparcml.so exports it; a program,
 * never linked to the library, looks it up:
 *     sparcml_compress_residual_fn *f =
 *         (sparcml_compress_residual_fn *)dlsym(RTLD_DEFAULT, "sparcml_compress_residual");
 * (NULL: the library is not loaded).  Returns MPI_SUCCESS, or MPI_ERR_ARG
 * when nothing is held for that buffer on comm. */
typedef int sparcml_compress_residual_fn(MPI_Comm comm, const void *recvbuf, MPI_Count count,
                                         MPI_Datatype datatype, void *out);

#ifdef __cplusplus
}
#endif
#endif /* SPARCML_H */
