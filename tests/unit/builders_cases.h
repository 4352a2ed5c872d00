/* builders_cases.h -- the builders of include/sparcml.h that have SIMD
 * loops, included by test_stream.c (those loops where the compiler targets
 * them) and by test_builders_portable.c (SPARCML_NO_SIMD: the portable
 * ones).  sparcml_stream_from_sorted on every length up to a few vector
 * blocks: each list is checked entry by entry against its input; every duplicate or
 * descending pair, every index of 2^56 or more (also a run of them that
 * climbs around 2^64 back to the next index) and a last index at dim are
 * refused at every position, leaving a buffer that holds no stream even
 * where it held one before. */
#ifndef SPARCML_TEST_BUILDERS_CASES_H
#define SPARCML_TEST_BUILDERS_CASES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sparcml.h"
#include "suites.h"

enum { BUILDER_CASES_MAX = 41 };

/* A refused list: the return code, and no stream left in buf. */
static void refused(void *buf, MPI_Count words, uint64_t dim, int vtype, uint64_t n, const uint64_t *idx,
                    const void *val)
{
    sparcml_header h;
    ck_assert_int_eq(sparcml_stream_from_sorted(buf, words, dim, vtype, n, idx, val), SPARCML_E_ARG);
    ck_assert_int_eq(sparcml_stream_header(buf, &h), SPARCML_E_FORMAT);
}

/* n indices 3i + 1 (i + 1 where dim is small: a dense stream from 25 of
 * 48), then each fault. */
static void from_sorted_case(uint64_t dim, int vtype, uint64_t n)
{
    uint64_t idx[BUILDER_CASES_MAX];
    double val[BUILDER_CASES_MAX];
    MPI_Count words = sparcml_capacity(dim < 4096 ? dim : 4096, vtype) + 64;
    void *buf = calloc((size_t)words, 8);
    size_t vs = sparcml_value_size(vtype);
    ck_assert_ptr_nonnull(buf);
    for (uint64_t i = 0; i < n; i++) {
        idx[i] = (dim > UINT32_MAX ? dim - 4 * BUILDER_CASES_MAX : 0) + (dim < 1024 ? 1 : 3) * i + 1;
        val[i] = (double)i + 0.5;
    }
    ck_assert_int_eq(sparcml_stream_from_sorted(buf, words, dim, vtype, n, idx, val), SPARCML_OK);
    if (sparcml_prefers_dense(dim, vtype, n)) {
        char *dense = calloc((size_t)dim, vs), *want = calloc((size_t)dim, vs);
        ck_assert(dense && want);
        for (uint64_t i = 0; i < n; i++) memcpy(want + idx[i] * vs, (const char *)val + i * vs, vs);
        ck_assert_int_eq(sparcml_stream_to_dense(buf, dense, dim), SPARCML_OK);
        ck_assert_int_eq(memcmp(dense, want, (size_t)dim * vs), 0);
        free(dense);
        free(want);
    }
    for (uint64_t i = 0; !sparcml_prefers_dense(dim, vtype, n) && i < n; i++) {
        uint64_t at;
        double v = 0;
        sparcml_stream_entry(buf, i, &at, &v);
        ck_assert_uint_eq(at, idx[i]);
        ck_assert_int_eq(memcmp(&v, (const char *)val + i * vs, vs), 0);
    }
    for (uint64_t j = 1; j < n; j++) { /* a duplicate, then a descent, at j */
        uint64_t keep = idx[j];
        idx[j] = idx[j - 1];
        refused(buf, words, dim, vtype, n, idx, val);
        idx[j] = idx[j - 1] - 1;
        refused(buf, words, dim, vtype, n, idx, val);
        idx[j] = keep;
        ck_assert_int_eq(sparcml_stream_from_sorted(buf, words, dim, vtype, n, idx, val), SPARCML_OK);
    }
    for (uint64_t j = 0; j < n; j++) { /* far beyond any dim, at j */
        uint64_t keep = idx[j];
        idx[j] = UINT64_C(1) << 60 | keep;
        refused(buf, words, dim, vtype, n, idx, val);
        idx[j] = keep;
    }
    for (int run = 2; run <= 3; run++) { /* around 2^64 in run + 1 steps below 2^63: each one up */
        uint64_t step = run == 2 ? (UINT64_C(1) << 63) - 1 : UINT64_C(1) << 62;
        for (uint64_t j = 1; j + (uint64_t)run < n; j++) {
            uint64_t keep[3] = {idx[j], idx[j + 1], idx[j + 2]};
            for (int k = 0; k < run; k++) idx[j + k] = idx[j - 1] + (uint64_t)(k + 1) * step;
            refused(buf, words, dim, vtype, n, idx, val);
            for (int k = 0; k < run; k++) idx[j + k] = keep[k];
        }
    }
    if (n > 0) {
        uint64_t keep = idx[n - 1];
        idx[n - 1] = dim;
        refused(buf, words, dim, vtype, n, idx, val);
        idx[n - 1] = keep;
    }
    free(buf);
}

/* Every length from 0 to BUILDER_CASES_MAX - 1, 4- and 8-byte indices
 * (sparse) and a small dense dimension, 4- and 8-byte values. */
static void from_sorted_cases(void)
{
    const uint64_t dims[] = {48, 1u << 20, UINT64_C(1) << 40};
    const int vtypes[] = {SPARCML_FLOAT, SPARCML_DOUBLE};
    for (int d = 0; d < 3; d++)
        for (int t = 0; t < 2; t++)
            for (uint64_t n = 0; n < BUILDER_CASES_MAX; n++) from_sorted_case(dims[d], vtypes[t], n);
}

/* Element i of d (vs bytes each) has no bit set. */
static int element_is_zero(const char *d, uint64_t i, uint64_t vs)
{
    int zero = 1;
    for (uint64_t b = 0; b < vs; b++) zero &= d[i * vs + b] == 0;
    return zero;
}

/* The stream sparcml_stream_from_dense writes from d into `words`,
 * checked against every element: the non-zero ones (any bit set, -0.0
 * too) in order, the index padding zeroed (the buffer is filled with other
 * bytes first), the format the smaller. */
static void check_dense_stream(int vtype, uint64_t dim, const char *d, MPI_Count words)
{
    uint64_t vs = sparcml_value_size(vtype), n = 0, w = sparcml_index_width(dim), idx;
    char *buf = malloc((size_t)words * 8 + 8), value[8];
    void *ip, *vp;
    sparcml_header h;
    memset(buf, 0xa5, (size_t)words * 8);
    ck_assert_int_eq(sparcml_stream_from_dense(buf, words, dim, vtype, d), SPARCML_OK);
    ck_assert_int_eq(sparcml_stream_header(buf, &h), SPARCML_OK);
    sparcml_stream_arrays(buf, &ip, &vp);
    if (h.format == SPARCML_DENSE) {
        ck_assert_int_eq(memcmp(vp, d, dim * vs), 0);
        free(buf);
        return;
    }
    for (uint64_t i = 0; i < dim; i++) {
        if (element_is_zero(d, i, vs)) continue;
        ck_assert_uint_lt(n, h.nnz);
        sparcml_stream_entry(buf, n++, &idx, value);
        ck_assert_uint_eq(idx, i);
        ck_assert_int_eq(memcmp(value, d + i * vs, vs), 0);
    }
    ck_assert_uint_eq(n, h.nnz);
    for (uint64_t b = n * w; b < sparcml_round8(n * w); b++) ck_assert_int_eq(((char *)ip)[b], 0);
    ck_assert_int_eq(sparcml_prefers_dense(dim, vtype, n), 0);
    free(buf);
}

/* From d with room for any stream (one read), with exactly the room its
 * stream needs (counted first where that is less), and with a word less:
 * SPARCML_E_CAPACITY, the buffer untouched. */
static void check_from_dense(int vtype, uint64_t dim, const char *d)
{
    uint64_t vs = sparcml_value_size(vtype), nnz = 0;
    MPI_Count exact;
    char *buf, *copy;
    for (uint64_t i = 0; i < dim; i++) nnz += !element_is_zero(d, i, vs);
    exact = sparcml_prefers_dense(dim, vtype, nnz) ? (MPI_Count)((sparcml_dense_bytes(dim, vtype) + 7) / 8)
                                                   : sparcml_sparse_capacity(dim, vtype, nnz);
    check_dense_stream(vtype, dim, d, sparcml_capacity(dim, vtype));
    check_dense_stream(vtype, dim, d, exact);
    buf = malloc((size_t)exact * 8);
    copy = malloc((size_t)exact * 8);
    for (size_t b = 0; b < (size_t)exact * 8; b++) buf[b] = copy[b] = (char)(b * 7 + 1);
    ck_assert_int_eq(sparcml_stream_from_dense(buf, exact - 1, dim, vtype, d), SPARCML_E_CAPACITY);
    ck_assert_int_eq(memcmp(buf, copy, (size_t)exact * 8), 0);
    free(buf);
    free(copy);
}

static uint64_t builder_rnd(uint64_t *state) /* splitmix64 */
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Every value type, lengths around the blocks of 8 and 16 and beyond the
 * SSE2 count's span of 65536 values, densities 0 to 30 %,
 * and shapes: random, the last element non-zero, one value with only its
 * top bit set (-0.0), zeros from the middle on, 8-byte values with only
 * their low or only their high half set. */
static void from_dense_cases(void)
{
    static const int vtypes[] = {SPARCML_FLOAT, SPARCML_DOUBLE, SPARCML_INT32, SPARCML_INT64};
    static const uint64_t dims[] = {1, 7, 8, 9, 16, 17, 63, 64, 65, 1000, 4099, 70001};
    static const unsigned percent[] = {0, 1, 5, 12, 30};
    uint64_t state = 42;
    for (int t = 0; t < 4; t++)
        for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
            for (size_t pi = 0; pi < sizeof percent / sizeof *percent; pi++)
                for (int shape = 0; shape < 6; shape++) {
                    uint64_t dim = dims[di], vs = sparcml_value_size(vtypes[t]);
                    char *d = calloc(dim, vs);
                    for (uint64_t i = 0; i < dim; i++)
                        if (builder_rnd(&state) % 100 < percent[pi]) {
                            uint64_t x = builder_rnd(&state) | 1;
                            if (shape == 4) x &= UINT32_MAX;
                            if (shape == 5) x = x << 32 | UINT64_C(1) << 32;
                            memcpy(d + i * vs, &x, vs);
                        }
                    if (shape == 1) d[(dim - 1) * vs] = 1;
                    if (shape == 2) d[builder_rnd(&state) % dim * vs + vs - 1] = (char)0x80;
                    if (shape == 3) memset(d + dim / 2 * vs, 0, (dim - dim / 2) * vs);
                    check_from_dense(vtypes[t], dim, d);
                    free(d);
                }
}

#endif
