/* memory_peak.c -- peak memory a tagged allreduce adds per rank, against
 * the bound of docs/design.md ("Memory"): at most BOUND x D of scratch per
 * communicator, D being the dense result size (the forced algorithm's
 * memory_bound, from its row: tests/scripts/scale.sh).
 *
 * usage: memory_peak N DENSITY BOUND   (float values, random indices; the
 *        algorithm is the library's business: SPARCML_ALGORITHM)
 *
 * Every rank touches all of its buffers first, then for each measured call
 * resets its peak resident size (writing 5 to /proc/self/clear_refs, Linux
 * >= 4.0) and reads VmHWM - VmRSS afterwards: the peak the call added.
 *  1. the vendor's MPI_Allreduce of the same N floats (MPI_FLOAT): what MPI
 *     itself needs for a D-byte reduction (temporary buffers, shared-memory
 *     segments); the library calls the same MPI, so this much is allowed on
 *     top of the bound;
 *  2. the library's set-up: a tagged call on an empty stream of 64
 *     elements creates the private communicator and its first collectives
 *     (a few hundred kB inside MPI at P = 16, independent of D); reported,
 *     not bounded, so that the bound below measures the D-sized scratch;
 *  3. the first tagged call of N elements (grows the scratch pool);
 *  4. a second tagged call (the pool is reused, but it may touch pages of
 *     pool buffers the first call allocated and left untouched).
 * The tagged result must equal the dense one bit for bit (values are small
 * integers, so every order of addition gives the same floats).  Rank 0
 * prints the largest value over the ranks; the exit status is 1 when the
 * peak of either tagged call exceeds BOUND x D + the vendor's peak, or a
 * result is wrong. */
#include <string.h>

#include "testlib.h"

/* A "Vm...:  123 kB" field of /proc/self/status, in kB (-1 if absent). */
static long status_kb(const char *field)
{
    char line[256];
    long kb = -1;
    size_t n = strlen(field);
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0 && line[n] == ':') kb = atol(line + n + 1);
    fclose(f);
    return kb;
}

/* Make VmHWM the current resident size; -1 if the kernel cannot. */
static int reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    int ok = f && fputs("5", f) >= 0;
    if (f && fclose(f) != 0) ok = 0;
    return ok ? 0 : -1;
}

typedef int (*call_fn)(void *ctx);

/* Peak kB the call added on this rank (reset, call, read); *rc its code. */
static long peak_of(call_fn fn, void *ctx, int *rc)
{
    long rss0;
    int reset_rc;
    MPI_Barrier(MPI_COMM_WORLD);
    reset_rc = reset_peak();
    rss0 = status_kb("VmRSS");
    *rc = fn(ctx); /* called in any case: the other ranks are in it */
    return reset_rc != 0 || rss0 < 0 ? -1 : status_kb("VmHWM") - rss0;
}

typedef struct {
    uint64_t N;
    MPI_Count count;
    MPI_Datatype tagged;
    void *send, *recv, *tiny_send, *tiny_recv;
    MPI_Count tiny_count;
    float *dense_in, *dense_out, *tagged_dense;
} bufs;

static int dense_call(void *v)
{
    bufs *b = v;
    return MPI_Allreduce(b->dense_in, b->dense_out, (int)b->N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static int setup_call(void *v)
{
    bufs *b = v;
    return MPI_Allreduce(b->tiny_send, b->tiny_recv, (int)b->tiny_count, b->tagged, MPI_SUM, MPI_COMM_WORLD);
}

static int tagged_call(void *v)
{
    bufs *b = v;
    return MPI_Allreduce(b->send, b->recv, (int)b->count, b->tagged, MPI_SUM, MPI_COMM_WORLD);
}

/* Random indices of density d on this rank, values 1..8; also densified. */
static void build(bufs *b, double d, int rank)
{
    uint64_t *idx = malloc(b->N * sizeof *idx), k = 0;
    float *val = malloc(b->N * sizeof *val);
    if (!idx || !val) MPI_Abort(MPI_COMM_WORLD, 2);
    memset(b->dense_in, 0, b->N * 4);
    for (uint64_t i = 0; i < b->N; i++) {
        uint64_t x = t_rand(0x3e3 + (uint64_t)rank, i);
        if ((double)(x >> 11) / 9007199254740992.0 >= d) continue;
        idx[k] = i;
        val[k] = (float)(1 + (x & 7));
        b->dense_in[i] = val[k++];
    }
    if (sparcml_stream_from_sorted(b->send, b->count, b->N, SPARCML_FLOAT, k, idx, val) != SPARCML_OK)
        MPI_Abort(MPI_COMM_WORLD, 3);
    free(idx);
    free(val);
}

static long max_all(long x)
{
    long m;
    MPI_Allreduce(&x, &m, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

int main(int argc, char **argv)
{
    bufs b = {0};
    int rank, P, rc0 = MPI_ERR_OTHER, rc1 = MPI_ERR_OTHER, rc2 = MPI_ERR_OTHER, rc3 = MPI_ERR_OTHER, wrong;
    long vendor, setup, first, second, d_kb;
    double density, bound;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (argc != 4) {
        if (rank == 0) fprintf(stderr, "usage: memory_peak N DENSITY BOUND\n");
        MPI_Finalize();
        return 2;
    }
    b.N = strtoull(argv[1], NULL, 10);
    density = atof(argv[2]);
    bound = atof(argv[3]);
    b.count = sparcml_capacity(b.N, SPARCML_FLOAT);
    sparcml_type_create(SPARCML_FLOAT, &b.tagged);
    b.send = t_alloc_words(b.count);
    b.recv = t_alloc_words(b.count);
    b.dense_in = t_alloc_words((MPI_Count)(b.N + 1) / 2);
    b.dense_out = t_alloc_words((MPI_Count)(b.N + 1) / 2);
    b.tagged_dense = t_alloc_words((MPI_Count)(b.N + 1) / 2);
    b.tiny_count = sparcml_capacity(64, SPARCML_FLOAT);
    b.tiny_send = t_alloc_words(b.tiny_count);
    b.tiny_recv = t_alloc_words(b.tiny_count);
    if (sparcml_stream_from_sorted(b.tiny_send, b.tiny_count, 64, SPARCML_FLOAT, 0, NULL, NULL) != SPARCML_OK)
        MPI_Abort(MPI_COMM_WORLD, 3);
    memset(b.recv, 0, (size_t)b.count * 8); /* touch everything the application owns */
    memset(b.send, 0, (size_t)b.count * 8);
    memset(b.dense_out, 0, b.N * 4);
    memset(b.tagged_dense, 0, b.N * 4);
    build(&b, density, rank);

    vendor = max_all(peak_of(dense_call, &b, &rc1));
    setup = max_all(peak_of(setup_call, &b, &rc0));
    first = max_all(peak_of(tagged_call, &b, &rc2));
    second = max_all(peak_of(tagged_call, &b, &rc3));
    wrong = rc1 != MPI_SUCCESS || setup < 0 || rc0 != MPI_SUCCESS || rc2 != MPI_SUCCESS || rc3 != MPI_SUCCESS
            || sparcml_stream_to_dense(b.recv, b.tagged_dense, b.N) != SPARCML_OK
            || memcmp(b.tagged_dense, b.dense_out, b.N * 4) != 0;
    wrong = (int)max_all(wrong);
    d_kb = (long)(b.N * 4 / 1024);
    if (rank == 0) {
        long limit = (long)(bound * (double)d_kb) + vendor;
        int over = vendor < 0 || first < 0 || second < 0 || first > limit || second > limit;
        printf("memory_peak: P=%d N=%llu d=%g D=%ld kB: vendor dense allreduce %ld kB, set-up %ld kB, "
               "first tagged call %ld kB (%.2f D), second %ld kB (%.2f D); bound %.2f D + vendor = %ld kB: %s\n",
               P, (unsigned long long)b.N, density, d_kb, vendor, setup, first, (double)first / (double)d_kb,
               second, (double)second / (double)d_kb, bound, limit,
               wrong ? "WRONG RESULT" : over ? "OVER" : "ok");
        wrong |= over;
    }
    MPI_Bcast(&wrong, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Type_free(&b.tagged);
    free(b.send); free(b.recv); free(b.dense_in); free(b.dense_out); free(b.tagged_dense);
    free(b.tiny_send); free(b.tiny_recv);
    MPI_Finalize();
    return wrong ? 1 : 0;
}
