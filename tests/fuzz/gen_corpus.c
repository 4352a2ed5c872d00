/* gen_corpus.c -- writes the seed corpus of the stream fuzz target
 * (tests/fuzz/fuzz_stream.c explains the input envelope) into a directory:
 * a few valid stream pairs of every value type, index width and format,
 * and a few malformed ones.  `scripts/fuzz.sh --seed` rebuilds
 * tests/fuzz/corpus with it; the files are committed, so nothing needs
 * this program to run the tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparcml.h"

#define MAXB 4096
static unsigned char a[MAXB], b[MAXB];
static const char *outdir;

static size_t sparse(unsigned char *buf, uint64_t dim, int vt, uint64_t n, const uint64_t *idx,
                     const void *vals)
{
    if (sparcml_stream_from_sorted(buf, MAXB / 8, dim, vt, n, idx, vals) != SPARCML_OK) {
        fprintf(stderr, "gen_corpus: bad seed\n");
        exit(1);
    }
    return (size_t)sparcml_sparse_bytes(dim, vt, n);
}

static size_t dense(unsigned char *buf, uint64_t dim, int vt, const void *vals)
{
    sparcml_write_header(buf, dim, vt, dim, SPARCML_DENSE);
    memcpy(buf + 32, vals, dim * sparcml_value_size(vt));
    return (size_t)sparcml_dense_bytes(dim, vt);
}

static void emit(const char *name, size_t la, size_t lb, int parts, uint32_t seed)
{
    unsigned char env[16] = {0};
    char path[4096];
    FILE *f;
    env[0] = 0; /* want = A's value type */
    env[1] = (unsigned char)parts;
    env[2] = (unsigned char)la;
    env[3] = (unsigned char)(la >> 8);
    for (int i = 0; i < 12; i++) env[4 + i] = (unsigned char)(seed >> (8 * (i % 4))) + (unsigned char)i;
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(env, 1, 16, f) != 16 || fwrite(a, 1, la, f) != la || fwrite(b, 1, lb, f) != lb
        || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    uint64_t i3[] = {1, 10, 40}, j3[] = {0, 10, 63}, big[] = {0, 5, UINT64_C(1) << 33, (UINT64_C(1) << 40) + 7};
    uint64_t all8[] = {0, 1, 2, 3, 4, 5, 6, 7}, odd[] = {1, 3, 5, 7, 9, 11, 13, 15}, even[] = {0, 2, 4, 6, 8, 10, 12, 14};
    float f3[] = {1.5f, -2, 3}, g3[] = {4, 2, -0.0f}, fbig[] = {1, 2, 3, 4};
    float fnan[3];
    double d8[] = {1, 0, -1, 0.5, 0, 0, 7, -0.0}, e3[] = {1e300, -1e300, 2};
    int32_t i16[16], ia[] = {INT32_MAX, -5, 7};
    int64_t l8[8];
    size_t la, lb;
    if (argc != 2) { fprintf(stderr, "usage: gen_corpus DIR\n"); return 2; }
    outdir = argv[1];
    for (int i = 0; i < 16; i++) i16[i] = i % 3 ? i * 1000 : 0;
    for (int i = 0; i < 8; i++) l8[i] = INT64_MAX - i;
    fnan[0] = __builtin_nanf(""); fnan[1] = -0.0f; fnan[2] = __builtin_inff();

    /* valid pairs */
    la = sparse(a, 64, SPARCML_FLOAT, 3, i3, f3); lb = sparse(b, 64, SPARCML_FLOAT, 3, j3, g3);
    emit("valid-float-sparse-sparse", la, lb, 3, 1);
    la = dense(a, 8, SPARCML_DOUBLE, d8); lb = sparse(b, 8, SPARCML_DOUBLE, 3, (uint64_t[]){0, 3, 7}, e3);
    emit("valid-double-dense-sparse", la, lb, 2, 2);
    la = sparse(a, 16, SPARCML_INT32, 3, (uint64_t[]){2, 9, 15}, ia); lb = dense(b, 16, SPARCML_INT32, i16);
    emit("valid-int32-sparse-dense", la, lb, 4, 3);
    la = sparse(a, 16, SPARCML_INT64, 8, odd, l8); lb = sparse(b, 16, SPARCML_INT64, 8, even, l8);
    emit("valid-int64-union-goes-dense", la, lb, 5, 4);
    la = sparse(a, (UINT64_C(1) << 41), SPARCML_FLOAT, 4, big, fbig);
    lb = sparse(b, (UINT64_C(1) << 41), SPARCML_FLOAT, 3, (uint64_t[]){5, 6, UINT64_C(1) << 33}, f3);
    emit("valid-float-index-width-8", la, lb, 8, 5);
    la = dense(a, 0, SPARCML_DOUBLE, d8); lb = sparse(b, 0, SPARCML_DOUBLE, 0, NULL, NULL);
    emit("valid-double-dim-0", la, lb, 2, 6);
    la = sparse(a, 8, SPARCML_FLOAT, 8, all8, (float[]){1, 2, 3, 4, 5, 6, 7, 8});
    lb = sparse(b, 8, SPARCML_FLOAT, 3, (uint64_t[]){0, 4, 7}, fnan);
    emit("valid-float-full-sparse-nan", la, lb, 3, 7);
    la = sparse(a, 100, SPARCML_DOUBLE, 0, NULL, NULL); lb = sparse(b, 100, SPARCML_DOUBLE, 1, (uint64_t[]){99}, e3);
    emit("valid-double-empty", la, lb, 6, 8);

    /* malformed A (B valid) */
    la = sparse(a, 64, SPARCML_FLOAT, 3, i3, f3); lb = sparse(b, 64, SPARCML_FLOAT, 3, j3, g3);
    a[0] ^= 1;
    emit("bad-magic", la, lb, 1, 9);
    la = sparse(a, 64, SPARCML_FLOAT, 3, i3, f3);
    memcpy(a + 32, &(uint32_t){50}, 4);
    emit("bad-unsorted", la, lb, 1, 10);
    la = sparse(a, 64, SPARCML_FLOAT, 3, i3, f3);
    memcpy(a + 36, &(uint32_t){1}, 4);
    emit("bad-duplicate", la, lb, 1, 11);
    la = sparse(a, 64, SPARCML_FLOAT, 3, i3, f3);
    memcpy(a + 40, &(uint32_t){64}, 4);
    emit("bad-index-ge-dim", la, lb, 1, 12);
    la = sparse(a, 64, SPARCML_FLOAT, 3, i3, f3);
    emit("bad-truncated", la - 4, 0, 1, 13);
    la = dense(a, 8, SPARCML_DOUBLE, d8);
    memcpy(a + 16, &(uint64_t){7}, 8);
    emit("bad-dense-nnz", la, 0, 1, 14);
    la = sparse(a, 64, SPARCML_FLOAT, 3, i3, f3);
    memcpy(a + 24, &(uint64_t){1}, 8);
    emit("bad-reserved", la, 0, 1, 15);
    la = sparse(a, 64, SPARCML_FLOAT, 3, i3, f3);
    a[6] = 8;
    emit("bad-index-width", la, 0, 1, 16);
    return 0;
}
