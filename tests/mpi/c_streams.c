/* c_streams.c -- test support: writes one stream with the C builders of
 * include/sparcml.h, so that tests/python/test_c_builders.py can compare
 * python/sparcml/ with them byte for byte.  It calls no MPI function
 * (the header needs mpi.h for MPI_Count, hence an MPI compiler).
 *
 * usage: c_streams pairs|sorted|dense VALUE_TYPE DIM CAPACITY_WORDS < input
 *   input (text): N; then N indices (not for dense, where N is DIM); then N
 *   values as hexadecimal bit patterns (exact for every value type).
 *   output: the CAPACITY_WORDS words of the buffer (zeroed before the
 *   builder runs), binary, on stdout.
 *   exit status: 0; 10 - code for a builder's SPARCML_E_* code (11 E_ARG,
 *   12 E_CAPACITY, 14 E_NOMEM); 2 for bad usage or input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparcml.h"

/* Reads n (or expects dim of them when dense), the indices and the values. */
static int read_input(int dense, uint64_t dim, size_t vs, uint64_t *n, uint64_t **idx, char **vals)
{
    unsigned long long count, x;
    if (scanf("%llu", &count) != 1 || (dense && count != dim)) return -1;
    *n = count;
    *idx = calloc(count ? count : 1, sizeof **idx);
    *vals = calloc(count ? count : 1, vs);
    if (!*idx || !*vals) return -1;
    for (uint64_t i = 0; !dense && i < count; i++) {
        if (scanf("%llu", &x) != 1) return -1;
        (*idx)[i] = x;
    }
    for (uint64_t i = 0; i < count; i++) {
        uint32_t x32;
        if (scanf("%llx", &x) != 1) return -1;
        x32 = (uint32_t)x;
        memcpy(*vals + i * vs, vs == 4 ? (void *)&x32 : (void *)&x, vs);
    }
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t n = 0, dim, cap, *idx = NULL, *buf;
    char *vals = NULL;
    int vt, rc, status;
    size_t vs;
    if (argc != 5) return 2;
    vt = atoi(argv[2]);
    vs = sparcml_value_size(vt);
    dim = strtoull(argv[3], NULL, 10);
    cap = strtoull(argv[4], NULL, 10);
    if (vs == 0 || read_input(strcmp(argv[1], "dense") == 0, dim, vs, &n, &idx, &vals) != 0) return 2;
    buf = calloc(cap ? cap : 1, 8);
    if (!buf) return 2;
    if (strcmp(argv[1], "pairs") == 0)
        rc = sparcml_stream_from_pairs(buf, (MPI_Count)cap, dim, vt, n, idx, vals);
    else if (strcmp(argv[1], "sorted") == 0)
        rc = sparcml_stream_from_sorted(buf, (MPI_Count)cap, dim, vt, n, idx, vals);
    else if (strcmp(argv[1], "dense") == 0)
        rc = sparcml_stream_from_dense(buf, (MPI_Count)cap, dim, vt, vals);
    else
        return 2;
    status = rc != SPARCML_OK ? 10 - rc : fwrite(buf, 8, cap, stdout) == cap ? 0 : 2;
    free(buf);
    free(idx);
    free(vals);
    return status;
}
