/* stats.c -- per-call verbose lines and the finalize report. */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>

#include "errors.h"
#include "stats.h"

static struct {
    atomic_uint_fast64_t calls, bytes, dense_bytes, nanoseconds;
} per_alg[SPARCML_ALG_COUNT_];
static atomic_uint_fast64_t errors[SPARCML_R_COUNT_];

/* What a bandwidth-optimal dense allreduce of the same vector sends. */
static uint64_t dense_equivalent(const sparcml_call *c)
{
    uint64_t P = (uint64_t)c->ctx->size;
    return 2 * (P - 1) * c->dim * sparcml_value_size(c->vtype) / P;
}

void stats_record(const sparcml_settings *s, const sparcml_call *c, sparcml_algorithm alg,
                  double seconds)
{
    uint64_t dense = dense_equivalent(c);
    atomic_fetch_add(&per_alg[alg].calls, 1);
    atomic_fetch_add(&per_alg[alg].bytes, c->bytes_sent);
    atomic_fetch_add(&per_alg[alg].dense_bytes, dense);
    atomic_fetch_add(&per_alg[alg].nanoseconds, (uint64_t)(seconds * 1e9));
    if (s->verbose && c->ctx->rank == 0) {
        printf("sparcml: allreduce algorithm=%s P=%d N=%llu type=%s max_k=%llu result_nnz=%llu "
               "result=%s bytes_sent=%llu dense_bytes=%llu time_us=%.1f\n",
               sparcml_algorithm_name(alg), c->ctx->size, (unsigned long long)c->dim,
               sparcml_value_type_name(c->vtype), (unsigned long long)c->k_max,
               (unsigned long long)c->result_nnz, c->result_dense ? "dense" : "sparse",
               (unsigned long long)c->bytes_sent, (unsigned long long)dense, seconds * 1e6);
        fflush(stdout);
    }
}

void stats_record_error(int reason)
{
    if (reason > 0 && reason < SPARCML_R_COUNT_) atomic_fetch_add(&errors[reason], 1);
}

/* Calls and time: the maximum over ranks (a call is collective, so every
 * member counts it once); bytes: the sum over ranks. */
void stats_report(void)
{
    enum { N = SPARCML_ALG_COUNT_ };
    MPI_Comm world;
    int rank, size;
    uint64_t mx[N * 2 + SPARCML_R_COUNT_], mxr[N * 2 + SPARCML_R_COUNT_], sm[N * 2], smr[N * 2];
    uint64_t *errs = mx + 2 * N, *errsr = mxr + 2 * N;
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &world) != MPI_SUCCESS) return;
    PMPI_Comm_rank(world, &rank);
    PMPI_Comm_size(world, &size);
    for (int a = 0; a < N; a++) {
        mx[a] = atomic_load(&per_alg[a].calls);
        mx[N + a] = atomic_load(&per_alg[a].nanoseconds);
        sm[a] = atomic_load(&per_alg[a].bytes);
        sm[N + a] = atomic_load(&per_alg[a].dense_bytes);
    }
    for (int r = 0; r < SPARCML_R_COUNT_; r++) errs[r] = atomic_load(&errors[r]);
    PMPI_Reduce(mx, mxr, 2 * N + SPARCML_R_COUNT_, MPI_UINT64_T, MPI_MAX, 0, world);
    PMPI_Reduce(sm, smr, 2 * N, MPI_UINT64_T, MPI_SUM, 0, world);
    PMPI_Comm_free(&world);
    if (rank != 0) return;
    printf("sparcml: ---- SPARCML_STATS report, %d ranks ----\n", size);
    printf("sparcml: %-22s %10s %16s %16s %8s %12s\n", "algorithm", "calls", "bytes_sent",
           "dense_equiv", "ratio", "time_max_s");
    for (int a = 1; a < N; a++) {
        if (mxr[a] == 0) continue;
        printf("sparcml: %-22s %10llu %16llu %16llu %8.4f %12.6f\n", sparcml_algorithm_name(a),
               (unsigned long long)mxr[a], (unsigned long long)smr[a],
               (unsigned long long)smr[N + a], smr[N + a] ? (double)smr[a] / (double)smr[N + a] : 0.0,
               (double)mxr[N + a] * 1e-9);
    }
    for (int r = 1; r < SPARCML_R_COUNT_; r++)
        if (errsr[r])
            printf("sparcml: errors: %-40s %llu (max over ranks)\n", sparcml_reason_text(r),
                   (unsigned long long)errsr[r]);
    fflush(stdout);
}
