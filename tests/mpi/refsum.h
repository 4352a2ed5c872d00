/* refsum.h -- inputs whose sum every rank can compute on its own, for the
 * hardening tests (soak, threads, isolation).
 *
 * Rank r of P holds index i of a problem (seed, dim, density) when a
 * counter-based hash says so, with a small integer value in [-8, 8]; so the
 * exact sum over ranks is representable in every value type (float
 * included, P <= 2^20) and any rank can recompute it from (seed, r, i)
 * alone: the reference is exact and independent of the library. */
#ifndef SPARCML_REFSUM_H
#define SPARCML_REFSUM_H

#include <string.h>

#include "testlib.h"

typedef struct rs_problem {
    uint64_t seed, dim;
    int vtype;
    double density;
} rs_problem;

static inline int rs_holds(const rs_problem *p, int r, uint64_t i)
{
    if (p->density >= 1) return 1;
    return (double)(t_rand(p->seed ^ 0x5157, (uint64_t)r * p->dim + i) >> 11) / 9007199254740992.0
           < p->density;
}

static inline int64_t rs_value(const rs_problem *p, int r, uint64_t i)
{
    return (int64_t)(t_rand(p->seed ^ 0x7a11, (uint64_t)r * p->dim + i) % 17) - 8;
}

static inline void rs_store(int vtype, void *dst, int64_t v)
{
    switch (vtype) {
    case SPARCML_FLOAT: { float f = (float)v; memcpy(dst, &f, 4); break; }
    case SPARCML_DOUBLE: { double d = (double)v; memcpy(dst, &d, 8); break; }
    case SPARCML_INT32: { int32_t x = (int32_t)v; memcpy(dst, &x, 4); break; }
    default: memcpy(dst, &v, 8); break;
    }
}

static inline int64_t rs_load(int vtype, const void *src)
{
    switch (vtype) {
    case SPARCML_FLOAT: { float f; memcpy(&f, src, 4); return (int64_t)f; }
    case SPARCML_DOUBLE: { double d; memcpy(&d, src, 8); return (int64_t)d; }
    case SPARCML_INT32: { int32_t x; memcpy(&x, src, 4); return x; }
    default: { int64_t x; memcpy(&x, src, 8); return x; }
    }
}

/* Rank r's input stream into buf (capacity `count` words): sparse, or dense
 * when that is smaller.  scratch: dim * 16 bytes. */
static inline int rs_build(const rs_problem *p, int r, void *buf, MPI_Count count, void *scratch)
{
    size_t vs = sparcml_value_size(p->vtype);
    uint64_t nnz = 0, *idx = (uint64_t *)scratch;
    char *vals = (char *)scratch + p->dim * 8;
    for (uint64_t i = 0; i < p->dim; i++) {
        if (!rs_holds(p, r, i)) continue;
        idx[nnz] = i;
        rs_store(p->vtype, vals + nnz * vs, rs_value(p, r, i));
        nnz++;
    }
    if (sparcml_prefers_dense(p->dim, p->vtype, nnz)) {
        char *d = (char *)buf + SPARCML_HEADER_BYTES;
        if (sparcml_dense_bytes(p->dim, p->vtype) > (uint64_t)count * 8) return SPARCML_E_CAPACITY;
        sparcml_write_header(buf, p->dim, p->vtype, p->dim, SPARCML_DENSE);
        memset(d, 0, p->dim * vs);
        for (uint64_t j = 0; j < nnz; j++) memcpy(d + idx[j] * vs, vals + j * vs, vs);
        return SPARCML_OK;
    }
    return sparcml_stream_from_sorted(buf, count, p->dim, p->vtype, nnz, idx, vals);
}

/* Compare the result stream in recv with the exact sum over P ranks.
 * dense_scratch: dim * 8 bytes.  Returns the number of wrong entries
 * (a malformed result counts as dim + 1). */
static inline uint64_t rs_check(const rs_problem *p, int P, const void *recv, void *dense_scratch)
{
    size_t vs = sparcml_value_size(p->vtype);
    uint64_t bad = 0;
    sparcml_header h;
    if (sparcml_stream_header(recv, &h) != SPARCML_OK || h.dim != p->dim || h.value_type != p->vtype
        || sparcml_stream_to_dense(recv, dense_scratch, p->dim) != SPARCML_OK)
        return p->dim + 1;
    for (uint64_t i = 0; i < p->dim; i++) {
        int64_t ref = 0, got = rs_load(p->vtype, (char *)dense_scratch + i * vs);
        for (int r = 0; r < P; r++)
            if (rs_holds(p, r, i)) ref += rs_value(p, r, i);
        bad += got != ref;
    }
    return bad;
}

#endif
