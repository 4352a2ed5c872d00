/* stats.c -- per-call verbose lines and the finalize report. */
#include "config.h"

#include <stdatomic.h>
#include <stdio.h>

#include "base/errors.h"
#include "core/stats.h"

/* The table's rows are the routes (alg/cost_model.h): the algorithms,
 * then the vendor's allreduce of the application's own buffers
 * (transparent calls routed to it, compressed calls summed exactly). */
static struct {
    atomic_uint_fast64_t calls, bytes, dense_bytes, nanoseconds;
} per_alg[COST_ROUTES];
static atomic_uint_fast64_t errors[SPARCML_R_COUNT_];
/* Tagged calls handed to the vendor's dense allreduce, by why. */
enum { FALLBACK_MODEL, FALLBACK_FORCED, FALLBACK_COUNT_ };
static atomic_uint_fast64_t fallbacks[FALLBACK_COUNT_];
/* Calls whose data travelled with the agreement records (on an
 * algorithm's whole exchange, on its first phase: its row's alg_ride),
 * those of them that failed, and calls run pipelined. */
enum { PIGGYBACK_EXCHANGE, PIGGYBACK_PHASE, PIGGYBACK_FAILED, PIPELINED, PIGGYBACK_COUNTS_ };
static atomic_uint_fast64_t piggybacks[PIGGYBACK_COUNTS_];
/* Transparent calls by route, and the scans' time. */
static atomic_uint_fast64_t routes[ROUTE_COUNT_], scan_nanoseconds;

/* Compressed calls (rank 0 of each call's communicator counts calls) and
 * their bytes, the held-back fractions (in 1e-9) with how many there are,
 * resets and full-memory events (every rank counts its own). */
static atomic_uint_fast64_t compressed_routes[COMPRESS_ROUTES_];
static atomic_uint_fast64_t compressed_bytes, compressed_dense, held_back_nano, held_back_n, feedback_resets,
    feedback_full;

/* By alg_gather, and by select_basis. */
static const char *const gather_names[] = {"none", "vendor", "doubling", "ring"};
static const char *const basis_names[] = {"forced", "model", "calibrated", "timed", "trial"};

/* What a bandwidth-optimal dense allreduce of the same vector sends. */
static uint64_t dense_equivalent(const sparcml_call *c)
{
    uint64_t P = (uint64_t)c->ctx->size;
    return 2 * (P - 1) * c->dim * sparcml_value_size(c->vtype) / P;
}

/* A route's name: its algorithm's, or "vendor" (the MPI library on the
 * application's buffers). */
static const char *route_name(cost_route r)
{
    return r == COST_VENDOR ? "vendor" : sparcml_algorithm_name((sparcml_algorithm)r);
}

/* "vendor:7.21,ssar_recursive_double:0.42": each route's agreed timed
 * multiple, "-" where none was timed. */
static void timed_text(const double timed_over[COST_ROUTES], char *text, size_t len)
{
    size_t used = 0;
    snprintf(text, len, "-");
    for (int a = SPARCML_ALG_AUTO + 1; a < COST_ROUTES && used < len; a++)
        if (timed_over[a] > 0)
            used += (size_t)snprintf(text + used, len - used, "%s%s:%.3g", used ? "," : "", route_name(a),
                                     timed_over[a]);
}

/* One call in a row of the table: bytes by every rank, the call by rank 0
 * of its communicator. */
static void count_row(int row, const sparcml_call *c, double seconds)
{
    atomic_fetch_add(&per_alg[row].bytes, c->bytes_sent);
    atomic_fetch_add(&per_alg[row].dense_bytes, dense_equivalent(c));
    atomic_fetch_add(&per_alg[row].nanoseconds, (uint64_t)(seconds * 1e9));
    if (c->ctx->rank == 0) atomic_fetch_add(&per_alg[row].calls, 1);
}

/* A measured figure as "%.*f" of value * scale, or "-" where it was never
 * measured (negative: not measured; zero counts as not measured where
 * `zero_unmeasured`). */
static const char *measured(char *text, size_t len, double value, double scale, int digits, int zero_unmeasured)
{
    if (value < 0 || (zero_unmeasured && value == 0)) snprintf(text, len, "-");
    else snprintf(text, len, "%.*f", digits, value * scale);
    return text;
}

int stats_verbose(const sparcml_settings *s, const sparcml_ctx *ctx)
{
    return s->verbose && ctx->rank == 0;
}

void stats_record(const sparcml_settings *s, const sparcml_call *c, const stats_ride *ride, sparcml_algorithm alg,
                  double seconds, const double timed_over[COST_ROUTES])
{
    uint64_t dense = dense_equivalent(c);
    int chunks = c->plan->chunks_run > 1 ? c->plan->chunks_run : 1;
    count_row(alg, c, seconds);
    if (c->ctx->rank == 0) {
        if (ride->piggybacked)
            atomic_fetch_add(&piggybacks[sparcml_algorithms[ride->carrier]->ride == ALG_RIDES_PHASE
                                             ? PIGGYBACK_PHASE : PIGGYBACK_EXCHANGE], 1);
        if (chunks > 1) atomic_fetch_add(&piggybacks[PIPELINED], 1);
        if (!sparcml_algorithms[alg]->sparse)
            atomic_fetch_add(&fallbacks[s->algorithm == alg ? FALLBACK_FORCED : FALLBACK_MODEL], 1);
    }
    if (stats_verbose(s, c->ctx)) {
        char timed[160];
        timed_text(timed_over, timed, sizeof timed);
        printf("sparcml: allreduce algorithm=%s P=%d N=%llu type=%s max_k=%llu result_nnz=%llu "
               "result=%s bytes_sent=%llu dense_bytes=%llu time_us=%.1f agreement=%s exchange=%s selector=%s "
               "ranks_per_core=%g pipeline_chunks=%d gather=%s timed_over=%s chosen_by=%s\n",
               sparcml_algorithm_name(alg), c->ctx->size, (unsigned long long)c->dim,
               sparcml_value_type_name(c->vtype), (unsigned long long)c->k_max,
               (unsigned long long)c->result_nnz, c->result_dense ? "dense" : "sparse",
               (unsigned long long)c->bytes_sent, (unsigned long long)dense, seconds * 1e6,
               ride->piggybacked ? "piggybacked" : ride->declined ? "declined" : "separate",
               sparcml_algorithm_name(ride->carrier), route_name(ride->selected),
               settings_ranks_per_core(s, c->ctx->ranks_per_core), chunks, gather_names[c->plan->gather_run], timed,
               basis_names[ride->chosen_by]);
        fflush(stdout);
    }
}

void stats_record_transparent(const sparcml_settings *s, const sparcml_call *c, stats_route route, uint64_t k_max,
                              double scan_seconds, const stats_choice *choice, double vendor_run_seconds)
{
    static const char *const names[ROUTE_COUNT_] = {"sparse", "vendor", "vendor_learnt"};
    int scanned = route != ROUTE_VENDOR_LEARNT;
    if (c->ctx->rank == 0) atomic_fetch_add(&routes[route], 1);
    if (scanned) atomic_fetch_add(&scan_nanoseconds, (uint64_t)(scan_seconds * 1e9));
    /* A sparse route's bytes are its algorithm's row (stats_record). */
    if (route != ROUTE_SPARSE) count_row(COST_VENDOR, c, vendor_run_seconds);
    if (stats_verbose(s, c->ctx)) {
        char nonzeros[24] = "-", scan[32], vendor[32];
        if (scanned) snprintf(nonzeros, sizeof nonzeros, "%llu", (unsigned long long)k_max);
        printf("sparcml: transparent allreduce P=%d N=%llu type=%s route=%s max_nonzeros=%s "
               "scan_us=%s vendor_ms=%s chosen_by=%s bytes_sent=%llu\n",
               c->ctx->size, (unsigned long long)c->dim, sparcml_value_type_name(c->vtype), names[route], nonzeros,
               measured(scan, sizeof scan, scanned ? scan_seconds : -1, 1e6, 1, 0),
               measured(vendor, sizeof vendor, choice->vendor_seconds, 1e3, 3, 1),
               choice->chosen_by < 0 ? "-" : basis_names[choice->chosen_by], (unsigned long long)c->bytes_sent);
        fflush(stdout);
    }
}

void stats_record_compressed(const sparcml_settings *s, const sparcml_call *c, stats_compress_route route,
                             double held_back, double vendor_run_seconds)
{
    static const char *const names[COMPRESS_ROUTES_] = {"selected", "vendor", "vendor_learnt", "exact"};
    int exact = route != COMPRESS_ROUTE_SELECTED;
    if (c->ctx->rank == 0) atomic_fetch_add(&compressed_routes[route], 1);
    if (exact) count_row(COST_VENDOR, c, vendor_run_seconds);
    else {
        atomic_fetch_add(&compressed_bytes, c->bytes_sent);
        atomic_fetch_add(&compressed_dense, dense_equivalent(c));
    }
    if (!exact && held_back >= 0) {
        atomic_fetch_add(&held_back_nano, (uint64_t)(held_back * 1e9));
        atomic_fetch_add(&held_back_n, 1);
    }
    if (stats_verbose(s, c->ctx)) {
        char held[32];
        printf("sparcml: compressed allreduce mode=%s P=%d N=%llu type=%s k=%llu route=%s held_back=%s "
               "bytes_sent=%llu\n",
               s->compress == COMPRESS_CLTK ? "cltk" : "topk", c->ctx->size, (unsigned long long)c->dim,
               sparcml_value_type_name(c->vtype), (unsigned long long)c->k_max, names[route],
               measured(held, sizeof held, exact ? -1 : held_back, 1, 4, 0), (unsigned long long)c->bytes_sent);
        fflush(stdout);
    }
}

void stats_record_feedback_reset(const sparcml_settings *s, int rank, const void *buf, MPI_Count count)
{
    atomic_fetch_add(&feedback_resets, 1);
    if (!s->verbose) return;
    printf("sparcml: rank %d: error feedback of the buffer at %p (%lld values) dropped: its calls came at "
           "another rhythm\n", rank, buf, (long long)count);
    fflush(stdout);
}

void stats_record_feedback_full(const sparcml_settings *s, int rank, const void *buf, MPI_Count count, int tell)
{
    atomic_fetch_add(&feedback_full, 1);
    if (!s->verbose || !tell) return;
    printf("sparcml: rank %d: no error feedback for the buffer at %p (%lld values): SPARCML_COMPRESS_MAX_BYTES "
           "reached; calls without it are summed exactly\n", rank, buf, (long long)count);
    fflush(stdout);
}

void stats_record_piggybacked_failure(int rank)
{
    if (rank == 0) atomic_fetch_add(&piggybacks[PIGGYBACK_FAILED], 1);
}

void stats_record_error(int rank, int reason)
{
    if (rank != 0 || reason <= 0 || reason >= SPARCML_R_COUNT_) return;
    atomic_fetch_add(&errors[reason], 1);
    if (settings_get()->verbose) { /* the per-call line of a failed call */
        printf("sparcml: allreduce failed: %s\n", sparcml_reason_text(reason));
        fflush(stdout);
    }
}

/* Counts (calls, fallbacks, failures, routes), counted by rank 0 of each
 * call's communicator, and bytes: the sum over ranks; times: the maximum
 * over ranks. */
enum { N = COST_ROUTES, COUNTS = N + SPARCML_R_COUNT_ + FALLBACK_COUNT_ + PIGGYBACK_COUNTS_ + ROUTE_COUNT_ };

static void gather_counts(uint64_t c[COUNTS])
{
    uint64_t *errs = c + N, *fb = errs + SPARCML_R_COUNT_, *pig = fb + FALLBACK_COUNT_, *route = pig + PIGGYBACK_COUNTS_;
    for (int a = 0; a < N; a++) c[a] = atomic_load(&per_alg[a].calls);
    for (int r = 0; r < SPARCML_R_COUNT_; r++) errs[r] = atomic_load(&errors[r]);
    for (int f = 0; f < FALLBACK_COUNT_; f++) fb[f] = atomic_load(&fallbacks[f]);
    for (int i = 0; i < PIGGYBACK_COUNTS_; i++) pig[i] = atomic_load(&piggybacks[i]);
    for (int r = 0; r < ROUTE_COUNT_; r++) route[r] = atomic_load(&routes[r]);
}

/* The report's lines (rank 0): calls and bytes per route, then the
 * lines of what happened at all. */
static void print_report(int size, const uint64_t *calls, const uint64_t *bysum, const uint64_t *nsr)
{
    const uint64_t *bytes = bysum, *dense = bysum + N, *errs = calls + N, *fb = errs + SPARCML_R_COUNT_;
    const uint64_t *pig = fb + FALLBACK_COUNT_, *route = pig + PIGGYBACK_COUNTS_;
    printf("sparcml: ---- SPARCML_STATS report, %d ranks (calls: each collective call once; bytes: sum over ranks) ----\n",
           size);
    printf("sparcml: %-22s %10s %16s %16s %8s %12s\n", "algorithm", "calls", "bytes_sent",
           "dense_equiv", "ratio", "time_max_s");
    for (int a = 1; a < N; a++) {
        if (calls[a] == 0) continue;
        printf("sparcml: %-22s %10llu %16llu %16llu %8.4f %12.6f\n", route_name(a),
               (unsigned long long)calls[a], (unsigned long long)bytes[a],
               (unsigned long long)dense[a], dense[a] ? (double)bytes[a] / (double)dense[a] : 0.0,
               (double)nsr[a] * 1e-9);
    }
    if (fb[FALLBACK_MODEL] || fb[FALLBACK_FORCED])
        printf("sparcml: fallbacks to the vendor's dense allreduce: %llu (cost model chose dense: %llu, "
               "forced by SPARCML_ALGORITHM: %llu)\n",
               (unsigned long long)(fb[FALLBACK_MODEL] + fb[FALLBACK_FORCED]),
               (unsigned long long)fb[FALLBACK_MODEL], (unsigned long long)fb[FALLBACK_FORCED]);
    if (pig[PIGGYBACK_EXCHANGE])
        printf("sparcml: calls whose whole exchange ran within the agreement step: %llu\n",
               (unsigned long long)pig[PIGGYBACK_EXCHANGE]);
    if (pig[PIGGYBACK_PHASE])
        printf("sparcml: calls whose first phase ran within the agreement step: %llu\n",
               (unsigned long long)pig[PIGGYBACK_PHASE]);
    if (pig[PIGGYBACK_FAILED])
        printf("sparcml: failed calls whose data travelled with the agreement records: %llu\n",
               (unsigned long long)pig[PIGGYBACK_FAILED]);
    if (pig[PIPELINED])
        printf("sparcml: calls pipelined: %llu\n", (unsigned long long)pig[PIPELINED]);
    if (route[ROUTE_SPARSE] + route[ROUTE_VENDOR_MODEL] + route[ROUTE_VENDOR_LEARNT])
        printf("sparcml: transparent calls: %llu sparse (in the table above), %llu to the vendor "
               "(the table's vendor row; cost model: %llu, learnt: %llu); scan time %.6f s (max over ranks)\n",
               (unsigned long long)route[ROUTE_SPARSE],
               (unsigned long long)(route[ROUTE_VENDOR_MODEL] + route[ROUTE_VENDOR_LEARNT]),
               (unsigned long long)route[ROUTE_VENDOR_MODEL], (unsigned long long)route[ROUTE_VENDOR_LEARNT],
               (double)nsr[N] * 1e-9);
    for (int r = 1; r < SPARCML_R_COUNT_; r++)
        if (errs[r])
            printf("sparcml: failed calls: %-40s %llu\n", sparcml_reason_text(r),
                   (unsigned long long)errs[r]);
}

/* Compression's counters, in the order of print_compressed: the routes
 * (stats_compress_route's order), then the rest. */
enum { COMPRESSION_COUNTERS = COMPRESS_ROUTES_ + 6 };
static void gather_compressed(uint64_t c[COMPRESSION_COUNTERS])
{
    atomic_uint_fast64_t *const from[] = {&compressed_bytes, &compressed_dense, &held_back_nano,
                                          &held_back_n, &feedback_resets, &feedback_full};
    for (int r = 0; r < COMPRESS_ROUTES_; r++) c[r] = atomic_load(&compressed_routes[r]);
    for (int i = COMPRESS_ROUTES_; i < COMPRESSION_COUNTERS; i++) c[i] = atomic_load(from[i - COMPRESS_ROUTES_]);
}

static void print_compressed(const uint64_t *c)
{
    const uint64_t *r = c, *bytes = c + COMPRESS_ROUTES_, *held = bytes + 2, *fb = held + 2;
    uint64_t exact = r[COMPRESS_ROUTE_VENDOR] + r[COMPRESS_ROUTE_LEARNT] + r[COMPRESS_ROUTE_EXACT];
    if (r[COMPRESS_ROUTE_SELECTED] + exact == 0) return;
    printf("sparcml: compressed calls: %llu (bytes_sent %llu against dense_equiv %llu, ratio %.4f; "
           "held back ||eps||/||acc|| %.4f on average over ranks and calls), summed exactly by the vendor: "
           "%llu (cost model: %llu, learnt: %llu, feedback memory full: %llu); feedback dropped: %llu, "
           "feedback memory full: %llu (events over ranks)\n",
           (unsigned long long)r[COMPRESS_ROUTE_SELECTED], (unsigned long long)bytes[0],
           (unsigned long long)bytes[1], bytes[1] ? (double)bytes[0] / (double)bytes[1] : 0.0,
           held[1] ? (double)held[0] * 1e-9 / (double)held[1] : 0.0,
           (unsigned long long)exact, (unsigned long long)r[COMPRESS_ROUTE_VENDOR],
           (unsigned long long)r[COMPRESS_ROUTE_LEARNT], (unsigned long long)r[COMPRESS_ROUTE_EXACT],
           (unsigned long long)fb[0], (unsigned long long)fb[1]);
}

void stats_report(void)
{
    MPI_Comm world;
    int rank, size;
    uint64_t cnt[COUNTS], calls[COUNTS], by[2 * N], bysum[2 * N], ns[N + 1], nsr[N + 1];
    uint64_t comp[COMPRESSION_COUNTERS], compsum[COMPRESSION_COUNTERS];
    int rc;
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &world) != MPI_SUCCESS) return;
    rc = PMPI_Comm_rank(world, &rank);
    if (rc == MPI_SUCCESS) rc = PMPI_Comm_size(world, &size);
    gather_counts(cnt);
    for (int a = 0; a < N; a++) {
        by[a] = atomic_load(&per_alg[a].bytes);
        by[N + a] = atomic_load(&per_alg[a].dense_bytes);
        ns[a] = atomic_load(&per_alg[a].nanoseconds);
    }
    ns[N] = atomic_load(&scan_nanoseconds);
    gather_compressed(comp);
    /* Every rank makes the same collective calls whatever failed before
     * (a rank that stopped early would leave the others waiting). */
    if (PMPI_Reduce(cnt, calls, COUNTS, MPI_UINT64_T, MPI_SUM, 0, world) != MPI_SUCCESS) rc = MPI_ERR_OTHER;
    if (PMPI_Reduce(by, bysum, 2 * N, MPI_UINT64_T, MPI_SUM, 0, world) != MPI_SUCCESS) rc = MPI_ERR_OTHER;
    if (PMPI_Reduce(ns, nsr, N + 1, MPI_UINT64_T, MPI_MAX, 0, world) != MPI_SUCCESS) rc = MPI_ERR_OTHER;
    if (PMPI_Reduce(comp, compsum, COMPRESSION_COUNTERS, MPI_UINT64_T, MPI_SUM, 0, world) != MPI_SUCCESS)
        rc = MPI_ERR_OTHER;
    if (PMPI_Comm_free(&world) != MPI_SUCCESS) rc = MPI_ERR_OTHER;
    if (rc != MPI_SUCCESS || rank != 0) return;
    print_report(size, calls, bysum, nsr);
    print_compressed(compsum);
    fflush(stdout);
}
