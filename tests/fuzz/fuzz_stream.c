/* fuzz_stream.c -- fuzz target for the stream code of src/kernel/stream.c.
 *
 * One entry point, LLVMFuzzerTestOneInput, used two ways:
 *  - scripts/fuzz.sh links it with libFuzzer (clang -fsanitize=fuzzer,
 *    address,undefined) and explores;
 *  - tests/fuzz/replay.c (built by automake with the project's compiler,
 *    a check program) calls it on every file of tests/fuzz/corpus and
 *    tests/fuzz/regressions in `make check` (tests/scripts/fuzz_replay.sh),
 *    under ASan/UBSan in the sanitizer build.
 *
 * Input (an envelope around two candidate streams):
 *   byte  0      want: 0 = the value type in A's header, else (want-1)%4+1
 *   byte  1      number of parts for the slice/concat round trip (1 + b%8)
 *   bytes 2..3   length of A in bytes (little-endian; clamped)
 *   bytes 4..15  three 32-bit seeds: slice bounds and cut points
 *   bytes 16..   A (its length), then B (the rest)
 * A and B are copied to their own 8-aligned heap blocks of exactly their
 * length, so any read past what stream_parse was told is an ASan error.
 *
 * What is checked (any failure aborts with a message):
 *  1. stream_parse agrees with an independent validator written from
 *     sparcml-stream(7); on an error, `where` is within the stream.
 *  2. For each valid stream: slice [lo, hi) has exactly stream_slice_bytes
 *     bytes, parses, and holds the entries of [lo, hi); cutting [0, dim)
 *     into parts and stream_concat-ing them gives back the same values
 *     (and the same bytes when the input and every part are sparse).
 *  3. A + B (stream_merge_add, when both are valid with the same dim)
 *     fits stream_merge_bound, parses, is dense exactly when the contract
 *     says so, and equals a naive reference: element-wise (a + b) with a
 *     as the left operand, over a dense array when dim is small, else at
 *     every stored index of A, B and the result. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ENVELOPE 16
#define SMALL_DIM 4096 /* dense reference below this */
#define MAX_OUT (64u << 20)

static void fail(const char *what, uint64_t a, uint64_t b)
{
    fprintf(stderr, "fuzz_stream: check failed: %s (%llu, %llu)\n", what, (unsigned long long)a,
            (unsigned long long)b);
    abort();
}
#define REQUIRE(c, a, b) do { if (!(c)) fail(#c, (uint64_t)(a), (uint64_t)(b)); } while (0)

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) abort();
    return p;
}

/* ----------------------------------------------------------- the contract */

/* Independent validator, straight from sparcml-stream(7). */
static int naive_valid(const void *buf, uint64_t len, int want)
{
    sparcml_header h;
    uint64_t vs, iw, need;
    if (len < 32) return 0;
    memcpy(&h, buf, 32);
    if (h.magic != 0x4d435053u || h.version != 1 || h.reserved != 0) return 0;
    if (h.value_type < 1 || h.value_type > 4 || h.value_type != want) return 0;
    if (h.format != 0 && h.format != 1) return 0;
    if (h.dim > (UINT64_C(1) << 56)) return 0;
    iw = h.dim <= (UINT64_C(1) << 32) ? 4 : 8;
    if (h.index_width != iw || h.nnz > h.dim) return 0;
    vs = (h.value_type == 1 || h.value_type == 3) ? 4 : 8;
    if (h.format == 1) {
        if (h.nnz != h.dim) return 0;
        need = 32 + h.dim * vs;
        return need <= len;
    }
    need = 32 + (h.nnz * iw + 7) / 8 * 8 + h.nnz * vs;
    if (need > len) return 0;
    for (uint64_t i = 0; i < h.nnz; i++) {
        uint64_t x = 0, prev = 0;
        memcpy(&x, (const char *)buf + 32 + i * iw, iw); /* little-endian */
        if (x >= h.dim) return 0;
        if (i > 0) {
            memcpy(&prev, (const char *)buf + 32 + (i - 1) * iw, iw);
            if (x <= prev) return 0;
        }
    }
    return 1;
}

/* Values are handled as raw 64-bit patterns (low bytes = the value). */
static uint64_t ld(const sv *s, const void *vals, uint64_t i)
{
    uint64_t v = 0;
    memcpy(&v, (const char *)vals + i * s->vs, s->vs);
    return v;
}

static uint64_t add(int vtype, uint64_t a, uint64_t b)
{
    uint64_t r = 0;
    switch (vtype) {
    case SPARCML_FLOAT: { float x, y, z; memcpy(&x, &a, 4); memcpy(&y, &b, 4); z = x + y; memcpy(&r, &z, 4); break; }
    case SPARCML_DOUBLE: { double x, y, z; memcpy(&x, &a, 8); memcpy(&y, &b, 8); z = x + y; memcpy(&r, &z, 8); break; }
    case SPARCML_INT32: r = (uint32_t)((uint32_t)a + (uint32_t)b); break;
    default: r = a + b; break;
    }
    return r;
}

/* Same value: bitwise for integers; for floating point numerically equal
 * (0 + -0 is +0, which a copy would keep as -0) or both NaN. */
static int same(int vtype, uint64_t a, uint64_t b)
{
    if (vtype == SPARCML_FLOAT) {
        float x, y;
        memcpy(&x, &a, 4); memcpy(&y, &b, 4);
        return x == y || (isnan(x) && isnan(y));
    }
    if (vtype == SPARCML_DOUBLE) {
        double x, y;
        memcpy(&x, &a, 8); memcpy(&y, &b, 8);
        return x == y || (isnan(x) && isnan(y));
    }
    return a == b;
}

/* Value of s at index i (0 when not stored), by binary search. */
static uint64_t at(const sv *s, uint64_t i)
{
    uint64_t lo = 0, hi = s->nnz;
    if (i >= s->dim) fail("index beyond dim", i, s->dim);
    if (s->dense) return ld(s, s->val, i);
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2, x = sparcml_get_index(s->idx, s->iw, mid);
        if (x == i) return ld(s, s->val, mid);
        if (x < i) lo = mid + 1; else hi = mid;
    }
    return 0;
}

static uint64_t index_of(const sv *s, uint64_t k) { return s->dense ? k : sparcml_get_index(s->idx, s->iw, k); }

/* A stream the library wrote must be valid and exactly `bytes` long. */
static sv reparse(const void *buf, uint64_t bytes, int vtype)
{
    sv s;
    uint64_t where;
    int r = stream_parse(buf, bytes, vtype, &s, &where);
    REQUIRE(r == SPARCML_R_OK, r, where);
    REQUIRE(stream_bytes(&s) == bytes, stream_bytes(&s), bytes);
    return s;
}

/* ------------------------------------------------------------------ slice */

static void check_slice(const sv *s, uint64_t lo, uint64_t hi)
{
    uint64_t bytes = stream_slice_bytes(s, lo, hi);
    void *buf;
    sv out;
    if (bytes > MAX_OUT) return;
    buf = xmalloc(bytes);
    out = stream_slice(s, lo, hi, buf);
    REQUIRE(out.base == buf, 0, 0);
    out = reparse(buf, bytes, s->vtype);
    REQUIRE(out.dim == hi - lo, out.dim, hi - lo);
    if (s->dense) REQUIRE(out.dense, 0, 0);
    /* Every entry of the slice is the source's, and every stored source
     * entry in range is in the slice. */
    for (uint64_t k = 0; k < out.nnz; k++) {
        uint64_t i = index_of(&out, k);
        REQUIRE(ld(&out, out.val, k) == at(s, lo + i), lo + i, k);
    }
    if (!s->dense)
        for (uint64_t k = 0; k < s->nnz; k++) {
            uint64_t i = index_of(s, k);
            if (i >= lo && i < hi) REQUIRE(at(&out, i - lo) == ld(s, s->val, k), i, k);
        }
    free(buf);
}

static void check_concat(const sv *s, int nparts, uint32_t seed)
{
    sv parts[8];
    uint64_t lo[9];
    void *pbuf[8] = {0}, *buf;
    uint64_t bytes, nnz = 0;
    int dense = s->dense;
    /* Cut points: increasing, drawn from the seed. */
    lo[0] = 0;
    lo[nparts] = s->dim;
    for (int r = 1; r < nparts; r++) {
        uint64_t left = s->dim - lo[r - 1];
        seed = seed * 1103515245u + 12345u;
        lo[r] = lo[r - 1] + (left ? ((uint64_t)seed * 2654435761u) % (left + 1) : 0);
    }
    for (int r = 0; r < nparts; r++) {
        uint64_t b = stream_slice_bytes(s, lo[r], lo[r + 1]);
        if (b > MAX_OUT) goto out;
        pbuf[r] = xmalloc(b);
        parts[r] = stream_slice(s, lo[r], lo[r + 1], pbuf[r]);
        REQUIRE(parts[r].dense == s->dense, parts[r].dense, s->dense);
        nnz += parts[r].nnz;
    }
    bytes = dense ? sparcml_dense_bytes(s->dim, s->vtype) : sparcml_sparse_bytes(s->dim, s->vtype, nnz);
    if (bytes > MAX_OUT) goto out;
    buf = xmalloc(bytes);
    {
        sv c = stream_concat(parts, lo, nparts, s->dim, dense, buf);
        REQUIRE(c.base == buf, 0, 0);
        c = reparse(buf, bytes, s->vtype);
        REQUIRE(c.dim == s->dim, c.dim, s->dim);
        for (uint64_t k = 0; k < c.nnz; k++)
            REQUIRE(ld(&c, c.val, k) == at(s, index_of(&c, k)), index_of(&c, k), k);
        if (!s->dense)
            for (uint64_t k = 0; k < s->nnz; k++)
                REQUIRE(at(&c, index_of(s, k)) == ld(s, s->val, k), index_of(s, k), k);
        else
            for (uint64_t i = 0; i < s->dim; i++) REQUIRE(at(&c, i) == at(s, i), i, 0);
        if (!dense) {
            /* The same entries in the same layout (padding aside). */
            REQUIRE(c.nnz == s->nnz, c.nnz, s->nnz);
            REQUIRE(c.iw == s->iw, c.iw, s->iw);
            REQUIRE(memcmp(c.idx, s->idx, c.nnz * c.iw) == 0, 0, 0);
            REQUIRE(memcmp(c.val, s->val, c.nnz * c.vs) == 0, 0, 0);
        }
    }
    free(buf);
out:
    for (int r = 0; r < nparts; r++) free(pbuf[r]);
}

/* ------------------------------------------------------------------ merge */

static uint64_t union_count(const sv *a, const sv *b)
{
    uint64_t i = 0, j = 0, n = 0;
    if (a->dense || b->dense) return a->dim;
    while (i < a->nnz || j < b->nnz) {
        uint64_t x = i < a->nnz ? index_of(a, i) : UINT64_MAX;
        uint64_t y = j < b->nnz ? index_of(b, j) : UINT64_MAX;
        i += x <= y;
        j += y <= x;
        n++;
    }
    return n;
}

static void check_merge(const sv *a, const sv *b)
{
    uint64_t bound = stream_merge_bound(a, b), u = union_count(a, b), bytes;
    int vt = a->vtype, want_dense;
    void *buf;
    sv m;
    if (bound > MAX_OUT) return;
    buf = xmalloc(bound);
    m = stream_merge_add(a, b, buf);
    REQUIRE(m.base == buf, 0, 0);
    bytes = stream_bytes(&m);
    REQUIRE(bytes <= bound, bytes, bound);
    m = reparse(buf, bytes, vt);
    REQUIRE(m.dim == a->dim, m.dim, a->dim);
    want_dense = a->dense || b->dense || sparcml_prefers_dense(a->dim, vt, u);
    REQUIRE(m.dense == want_dense, m.dense, u);
    if (!m.dense) REQUIRE(m.nnz == u, m.nnz, u);
    if (a->dim <= SMALL_DIM) {
        /* Naive dense reference: scatter both inputs, add where both hold
         * an entry (a on the left), copy where one does, 0 elsewhere. */
        uint64_t *da = xmalloc(a->dim * 8), *db = xmalloc(a->dim * 8);
        unsigned char *ha = xmalloc(a->dim), *hb = xmalloc(a->dim);
        memset(ha, 0, a->dim);
        memset(hb, 0, a->dim);
        for (uint64_t k = 0; k < a->nnz; k++) { da[index_of(a, k)] = ld(a, a->val, k); ha[index_of(a, k)] = 1; }
        for (uint64_t k = 0; k < b->nnz; k++) { db[index_of(b, k)] = ld(b, b->val, k); hb[index_of(b, k)] = 1; }
        for (uint64_t i = 0; i < a->dim; i++) {
            uint64_t ref = ha[i] && hb[i] ? add(vt, da[i], db[i]) : ha[i] ? da[i] : hb[i] ? db[i] : 0;
            uint64_t got = at(&m, i);
            REQUIRE(same(vt, got, ref), i, got);
        }
        free(da); free(db); free(ha); free(hb);
    } else {
        for (uint64_t k = 0; k < m.nnz; k++) {
            uint64_t i = index_of(&m, k);
            REQUIRE(same(vt, ld(&m, m.val, k), add(vt, at(a, i), at(b, i))), i, k);
        }
        for (uint64_t k = 0; k < a->nnz; k++) {
            uint64_t i = index_of(a, k);
            REQUIRE(same(vt, at(&m, i), add(vt, at(a, i), at(b, i))), i, k);
        }
        for (uint64_t k = 0; k < b->nnz; k++) {
            uint64_t i = index_of(b, k);
            REQUIRE(same(vt, at(&m, i), add(vt, at(a, i), at(b, i))), i, k);
        }
    }
    /* Densify agrees with the lookups. */
    if (a->dim <= SMALL_DIM) {
        void *d = xmalloc(a->dim * m.vs + 1);
        stream_densify(&m, d);
        for (uint64_t i = 0; i < a->dim; i++) REQUIRE(ld(&m, d, i) == at(&m, i), i, 0);
        free(d);
    }
    free(buf);
}

/* ------------------------------------------------------------- the target */

static int parse_one(const void *buf, uint64_t len, int want, sv *s)
{
    uint64_t where = ~(uint64_t)0;
    int r = stream_parse(buf, len, want, s, &where);
    REQUIRE(r >= SPARCML_R_OK && r < SPARCML_R_COUNT_, r, 0);
    REQUIRE((r == SPARCML_R_OK) == naive_valid(buf, len, want), r, len);
    if (r == SPARCML_R_INDEX_GE_DIM || r == SPARCML_R_UNSORTED || r == SPARCML_R_DUPLICATE)
        REQUIRE(where < s->nnz, where, s->nnz);
    REQUIRE(sparcml_reason_text(r) != NULL, r, 0);
    return r == SPARCML_R_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t la, lb;
    void *a_buf, *b_buf;
    int want, ok_a, ok_b;
    sv a, b;
    if (size < ENVELOPE) return 0;
    la = (size_t)data[2] | (size_t)data[3] << 8;
    if (la > size - ENVELOPE) la = size - ENVELOPE;
    lb = size - ENVELOPE - la;
    a_buf = xmalloc(la);
    b_buf = xmalloc(lb);
    memcpy(a_buf, data + ENVELOPE, la);
    memcpy(b_buf, data + ENVELOPE + la, lb);
    want = data[0] ? (data[0] - 1) % 4 + 1 : (la > 5 ? data[ENVELOPE + 5] : 1);

    ok_a = parse_one(a_buf, la, want, &a);
    ok_b = parse_one(b_buf, lb, want, &b);
    if (ok_a) {
        uint32_t s1 = rd32(data + 4), s2 = rd32(data + 8);
        uint64_t lo = a.dim ? ((uint64_t)s1 * 0x9e3779b1u) % (a.dim + 1) : 0;
        uint64_t hi = lo + ((uint64_t)s2 * 0x85ebca6bu) % (a.dim - lo + 1);
        check_slice(&a, lo, hi);
        check_slice(&a, 0, a.dim);
        check_concat(&a, 1 + data[1] % 8, rd32(data + 12));
    }
    if (ok_b && lb <= MAX_OUT) {
        /* stream_copy and stream_view give the same stream. */
        void *c = xmalloc(stream_bytes(&b));
        sv cb = stream_copy(&b, c);
        REQUIRE(stream_bytes(&cb) == stream_bytes(&b), 0, 0);
        REQUIRE(memcmp(c, b_buf, stream_bytes(&b)) == 0, 0, 0);
        free(c);
    }
    if (ok_a && ok_b && a.dim == b.dim) {
        check_merge(&a, &b);
        check_merge(&b, &a);
        check_merge(&a, &a);
    }
    free(a_buf);
    free(b_buf);
    return 0;
}
