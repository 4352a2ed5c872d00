/* stats_calls.c -- calls whose bytes every rank sends alike, for the
 * SPARCML_STATS / SPARCML_VERBOSE checks (tests/scripts/stats.sh).  Every
 * rank holds the same data, so every rank hands MPI the same bytes and the
 * report's sum over ranks is P times rank 0's, whose per-call lines
 * SPARCML_VERBOSE prints.
 *
 *   stats_calls tagged        tagged calls, sparse and dense streams
 *   stats_calls transparent   untagged float sums: mostly zeros (sparse
 *                             route), then dense (the vendor, chosen by the
 *                             model, then learnt)
 *
 * Prints "failures=N" on rank 0 (each result checked against the sum). */
#include "testlib.h"

enum { N = 1 << 16, TRANSPARENT_DENSE_CALLS = 20 };

static int failures;

static void check_rc(int rc, const char *what)
{
    if (rc != MPI_SUCCESS && rc != SPARCML_OK) {
        fprintf(stderr, "stats_calls: %s failed (%d)\n", what, rc);
        failures++;
    }
}

/* k entries at the same indices on every rank, values i + 1: the sum is
 * P (i + 1) at those indices. */
static void tagged_call(MPI_Datatype t, uint64_t k, int P, void *in, void *out, MPI_Count words, float *dense)
{
    uint64_t *idx = malloc(k * sizeof *idx);
    float *val = malloc(k * sizeof *val);
    if (!idx || !val) MPI_Abort(MPI_COMM_WORLD, 2);
    for (uint64_t j = 0; j < k; j++) {
        idx[j] = j * (N / k);
        val[j] = (float)(j + 1);
    }
    check_rc(sparcml_stream_from_pairs(in, words, N, SPARCML_FLOAT, k, idx, val), "from_pairs");
    check_rc(MPI_Allreduce(in, out, (int)words, t, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    check_rc(sparcml_stream_to_dense(out, dense, N), "to_dense");
    for (uint64_t j = 0; j < k; j++)
        if (dense[idx[j]] != (float)P * (float)(j + 1)) failures++;
    free(idx);
    free(val);
}

static void tagged(int P)
{
    MPI_Datatype t;
    MPI_Count words = sparcml_capacity(N, SPARCML_FLOAT);
    void *in = malloc((size_t)words * 8), *out = malloc((size_t)words * 8);
    float *dense = malloc(N * sizeof *dense);
    static const uint64_t ks[] = {16, 64, 256, 4096, N / 2, N};
    if (!in || !out || !dense) MPI_Abort(MPI_COMM_WORLD, 2);
    check_rc(sparcml_type_create(SPARCML_FLOAT, &t), "type_create");
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) tagged_call(t, ks[i], P, in, out, words, dense);
    check_rc(MPI_Type_free(&t), "MPI_Type_free");
    free(in);
    free(out);
    free(dense);
}

/* Every 1000th value 1 (sparse), then every value 1 (dense). */
static void transparent(int P)
{
    float *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
    if (!in || !out) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int call = 0; call < 3 + TRANSPARENT_DENSE_CALLS; call++) {
        for (int i = 0; i < N; i++) in[i] = call < 3 ? (float)(i % 1000 == 0) : 1.0f;
        check_rc(MPI_Allreduce(in, out, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
        for (int i = 0; i < N; i++)
            if (out[i] != (float)P * in[i]) {
                failures++;
                break;
            }
    }
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "tagged";
    int rank, P, all;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (strcmp(mode, "tagged") == 0) tagged(P);
    else if (strcmp(mode, "transparent") == 0) transparent(P);
    else {
        if (rank == 0) fprintf(stderr, "usage: stats_calls [tagged|transparent]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* An int sum of one value: below every mode's size, never counted. */
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("failures=%d\n", all);
    MPI_Finalize();
    return 0;
}
