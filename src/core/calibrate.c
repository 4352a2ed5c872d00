/* calibrate.c -- alpha, beta and gamma measured at MPI_Init (calibrate.h). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alg/cost_model.h"
#include "base/placement.h"
#include "core/calibrate.h"
#include "core/select.h"
#include "core/settings.h"
#include "kernel/stream.h"

int64_t calib_ps(double seconds)
{
    return seconds > 0 ? (int64_t)llround(seconds * 1e12) : 0;
}

/* The fastest of the first n repetitions' time per rank (seconds). */
static double fastest_per_rank(const int64_t ps[CALIB_ROUND_REPS], int n, const calib_totals *t)
{
    int64_t fastest = ps[0];
    for (int r = 1; r < n; r++)
        if (ps[r] < fastest) fastest = ps[r];
    return 1e-12 * (double)fastest / (double)t->exchangers;
}

/* The fastest exchange's time per round and rank (seconds). */
static double fastest_round(const int64_t ps[CALIB_ROUND_REPS], int n, const calib_totals *t)
{
    return fastest_per_rank(ps, n, t) / cost_ceil_log2((int)t->exchangers);
}

/* The median of the first n repetitions over their fastest (n >= 1; the
 * upper median where n is even). */
static double spread(const int64_t ps[CALIB_ROUND_REPS], int n)
{
    int64_t sorted[CALIB_ROUND_REPS];
    memcpy(sorted, ps, (size_t)n * sizeof *ps);
    for (int i = 1; i < n; i++) /* insertion sort: a handful */
        for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
            int64_t x = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = x;
        }
    return sorted[0] > 0 ? (double)sorted[n / 2] / (double)sorted[0] : INFINITY;
}

/* The vendor's fastest allgather over its price in the model at a round
 * of alpha_round and beta; 1 where that is below
 * CALIB_VENDOR_MARGIN: where the vendor is as fast as its price, within
 * the measurement's noise, or faster, the model keeps its own rule. */
static double vendor_factor(const calib_totals *t, int n, double alpha_round, double beta)
{
    cost_model m = {.alpha = alpha_round, .beta = beta, .vendor_gather = 1};
    sparcml_problem p = {.P = (int)t->exchangers};
    double price = cost_vendor_allgather(&m, &p, (double)t->vendor_bytes / (double)t->exchangers);
    double factor = fastest_per_rank(t->vendor_ps, n, t) / price;
    return factor < CALIB_VENDOR_MARGIN ? 1 : factor;
}

/* Alpha, beta and vendor_gather into v from the exchanges' totals, where
 * enough repetitions ran and their spread is small.  With fewer the totals
 * hold their number alone (measure_exchanges sums no times then): no
 * spread either. */
static void derive_exchanges(const calib_totals *t, calib_values *v)
{
    int n = t->exchangers > 0 ? (int)(t->reps / t->exchangers) : 0;
    if (n > CALIB_ROUND_REPS) n = CALIB_ROUND_REPS;
    v->reps = n;
    if (t->exchangers < 2 || n < CALIB_MIN_REPS) return;
    v->spread = fmax(spread(t->mid_ps, n), spread(t->large_ps, n));
    if (v->spread <= CALIB_SPREAD_MAX) {
        /* The fastest repetition, as the ranks saw it on average: delays
         * only add.  Where the mid-size rounds were held up beyond the
         * large ones (a loaded machine), their difference alone would say
         * a byte costs about nothing, and every choice would follow: so
         * beta is at least a quarter of the large round per byte, which
         * binds only where the round's latency exceeds three times its
         * bytes' time.  Alpha is at least the small round: a link that
         * lets a burst pass faster than its rate (a token bucket) puts the
         * line's origin below its latency. */
        double small = fastest_round(t->small_ps, n, t), mid = fastest_round(t->mid_ps, n, t);
        double large = fastest_round(t->large_ps, n, t);
        v->beta = fmax((large - mid) / (CALIB_LARGE_BYTES - CALIB_MID_BYTES), large / CALIB_LARGE_BYTES / 4);
        v->alpha = fmax(mid - v->beta * CALIB_MID_BYTES, small);
        v->vendor_gather = vendor_factor(t, n, v->alpha, v->beta);
    }
}

calib_values calib_derive(const calib_totals *t, double ranks_per_core, int one_node)
{
    calib_values v = {.alpha = NAN, .beta = NAN, .gamma = NAN, .vendor_gather = NAN, .spread = NAN,
                      .shared_cores = ranks_per_core > 1};
    if (t->exchangers > 0 && t->merge_ps > 0)
        v.gamma = 1e-12 * (double)t->merge_ps / (double)t->exchangers / (2.0 * CALIB_MERGE_ENTRIES);
    if (!v.shared_cores) derive_exchanges(t, &v);
    else if (one_node) {
        v.alpha = CALIB_SHARED_ALPHA;
        v.beta = SELECT_BYTE_PER_MERGE * v.gamma;
    }
    return v;
}

/* --- the measurement ---------------------------------------------------- */

/* A sparse float stream of n entries at indices step * i in buf. */
static sv merge_operand(void *buf, uint64_t n, uint64_t step)
{
    sv s = stream_init(buf, 8 * n, SPARCML_FLOAT, n, 0);
    for (uint64_t i = 0; i < n; i++) {
        sparcml_put_index(s.idx, s.iw, i, step * i);
        ((float *)s.val)[i] = 1.0f;
    }
    return s;
}

/* One buffer holds the merge's operands (a header and 8 bytes an entry
 * each) and their sum (at most 16 bytes an entry), and the exchanges'
 * messages: its pages are touched once, not per operand. */
_Static_assert(32 * CALIB_MERGE_ENTRIES + 3 * SPARCML_HEADER_BYTES <= CALIB_BUFFER_BYTES, "the merge fits");
_Static_assert(2 * CALIB_LARGE_BYTES <= CALIB_BUFFER_BYTES, "the exchange fits");

/* The fastest of CALIB_MERGE_REPS merge-adds (seconds), in buf. */
static double time_merge(char *buf)
{
    sv a = merge_operand(buf, CALIB_MERGE_ENTRIES, 4), b;
    double best = -1;
    b = merge_operand(buf + stream_bytes(&a), CALIB_MERGE_ENTRIES, 6); /* a third of b's indices are a's too */
    for (int r = 0; r < CALIB_MERGE_REPS; r++) {
        double t0 = PMPI_Wtime(), t;
        stream_merge_add(&a, &b, buf + stream_bytes(&a) + stream_bytes(&b));
        t = PMPI_Wtime() - t0;
        if (best < 0 || t < best) best = t;
    }
    return best;
}

/* What one timed operation needs: the ranks, a buffer of 2 * bytes (or 8
 * per rank), for the vendor's gather counts and displs of size ints; and
 * the time budget: past `deadline` this rank asks to stop, and `stop` says
 * whether any rank asked by the start of the latest operation. */
typedef struct calib_op {
    MPI_Comm comm;
    int rank, size, bytes;
    char *buf;
    int *counts, *displs;
    double deadline;
    int stop;
} calib_op;

/* An exchange of op->bytes over all ranks in ceil(log2 P) rounds, each
 * rank sending to rank + 2^i and receiving from rank - 2^i in round i (mod
 * P): every round waits for a partner as the algorithms' do, scheduling
 * included where ranks share cores.  The message's first byte carries
 * this rank's wish to stop and, from round to round, what it received:
 * after the last round every rank has every rank's (a dissemination). */
static int exchange(calib_op *op)
{
    int rc = MPI_SUCCESS;
    op->buf[0] = PMPI_Wtime() > op->deadline;
    for (int d = 1; rc == MPI_SUCCESS && d < op->size; d *= 2) {
        rc = PMPI_Sendrecv(op->buf, op->bytes, MPI_BYTE, (op->rank + d) % op->size, 0, op->buf + op->bytes,
                           op->bytes, MPI_BYTE, (op->rank - d + op->size) % op->size, 0, op->comm,
                           MPI_STATUS_IGNORE);
        op->buf[0] |= op->buf[op->bytes];
    }
    op->stop = op->buf[0];
    return rc;
}

/* The vendor's MPI_Allgatherv of op->counts bytes from every rank, each
 * part's first byte its rank's wish to stop. */
static int vendor_gather(calib_op *op)
{
    int rc;
    op->buf[op->displs[op->rank]] = PMPI_Wtime() > op->deadline;
    rc = PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, op->buf, op->counts, op->displs, MPI_BYTE,
                         op->comm);
    op->stop = 0;
    for (int r = 0; r < op->size; r++) op->stop |= op->buf[op->displs[r]];
    return rc;
}

/* This rank's share of the exchanges' totals: repetitions of an exchange
 * of each size and the vendor's gather of an equal share of
 * CALIB_LARGE_BYTES from every rank (whole words, at least one), after
 * one untimed run of each, until CALIB_ROUND_REPS or some rank is past the
 * budget from t0 (every rank stops at the same operation, and counts only
 * whole repetitions).  buf of max(CALIB_BUFFER_BYTES, 8 size) bytes,
 * displs of 2 * size ints.  The first run of each size and operation sets
 * up what the MPI needs for it (connections, the rendezvous protocol's
 * buffers: several times a later run, bench/RESULTS.md, "Cost model: the
 * measurements behind the design"). */
static int measure(MPI_Comm comm, int rank, int size, char *buf, int *displs, double t0, calib_totals *mine)
{
    static const int bytes[] = {CALIB_SMALL_BYTES, CALIB_MID_BYTES, CALIB_LARGE_BYTES, 0};
    int part = CALIB_LARGE_BYTES / size / 8 * 8, rc = MPI_SUCCESS;
    calib_op op = {.comm = comm, .rank = rank, .size = size, .buf = buf, .counts = displs + size,
                   .displs = displs, .deadline = t0 + 1e-6 * CALIB_BUDGET_US};
    int64_t *ps[] = {mine->small_ps, mine->mid_ps, mine->large_ps, mine->vendor_ps};
    if (part < 8) part = 8;
    *mine = (calib_totals){.exchangers = 1, .vendor_bytes = (int64_t)part * size};
    for (int r = 0; r < size; r++) {
        op.counts[r] = part;
        op.displs[r] = r * part;
    }
    for (int r = -1; r < CALIB_ROUND_REPS; r++) { /* -1: the untimed runs */
        int i = 0;
        for (; rc == MPI_SUCCESS && !op.stop && i < 4; i++) {
            double t = PMPI_Wtime();
            op.bytes = bytes[i];
            rc = bytes[i] ? exchange(&op) : vendor_gather(&op);
            if (r >= 0) ps[i][r] = calib_ps(PMPI_Wtime() - t);
        }
        if (i < 4 || rc != MPI_SUCCESS) break;
        mine->reps = r + 1;
        if (op.stop) break;
    }
    return rc;
}

/* The exchanges on a private duplicate of comm, their totals into *sum.
 * Too few repetitions (every rank ran as many): a busy machine, where one
 * more collective costs what the budget does; the totals hold only their
 * number then, and the defaults stay. */
static int measure_exchanges(MPI_Comm comm, int size, char *buf, int *displs, calib_totals *sum)
{
    MPI_Comm dup = MPI_COMM_NULL;
    calib_totals mine, all;
    int rank = 0, rc = PMPI_Comm_dup(comm, &dup);
    if (rc == MPI_SUCCESS) rc = PMPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS) rc = PMPI_Comm_rank(dup, &rank);
    if (rc == MPI_SUCCESS) rc = measure(dup, rank, size, buf, displs, PMPI_Wtime(), &mine);
    if (rc == MPI_SUCCESS && mine.reps >= CALIB_MIN_REPS) {
        _Static_assert(sizeof mine % sizeof(int64_t) == 0, "the totals are words");
        rc = PMPI_Allreduce(&mine, &all, (int)(sizeof mine / sizeof(int64_t)), MPI_INT64_T, MPI_SUM, dup);
        if (rc == MPI_SUCCESS) {
            all.merge_ps = sum->merge_ps;
            *sum = all;
        }
    } else if (rc == MPI_SUCCESS)
        sum->reps = mine.reps * size;
    if (dup != MPI_COMM_NULL) {
        int rc_free = PMPI_Comm_free(&dup);
        if (rc == MPI_SUCCESS) rc = rc_free;
    }
    return rc;
}

/* What each rank hands the others first: its placement and its fastest
 * merge. */
typedef struct calib_record {
    char placement[PLACEMENT_BYTES];
    int64_t merge_ps;
} calib_record;

/* Every rank's record through `all` (size + 1 records): the merges'
 * total into *sum (exactly, in rank order: identical on every rank), the
 * ranks per core the model will assume for comm's ranks and whether they
 * run on one node. */
static int gather_records(MPI_Comm comm, int size, int64_t merge_ps, calib_record *all, calib_totals *sum,
                          double *share, int *one_node)
{
    int rc;
    placement_mine(all[size].placement);
    all[size].merge_ps = merge_ps;
    rc = PMPI_Allgather(&all[size], (int)sizeof *all, MPI_BYTE, all, (int)sizeof *all, MPI_BYTE, comm);
    if (rc != MPI_SUCCESS) return rc;
    *sum = (calib_totals){.exchangers = size};
    for (int r = 0; r < size; r++) sum->merge_ps += all[r].merge_ps;
    for (int r = 0; r < size; r++) /* the placements side by side, as placement_of reads them */
        memmove((char *)all + (size_t)r * PLACEMENT_BYTES, all[r].placement, PLACEMENT_BYTES);
    *share = settings_ranks_per_core(settings_get(), placement_of(all, size));
    *one_node = placement_one_node(all, size);
    return MPI_SUCCESS;
}

/* After a value: " (set)" where the user set it, " (shared cores)" where
 * the rule for shared cores gave it, " (default)" where the measurement
 * did not count (calib_derive). */
static const char *origin(const sparcml_settings *s, const calib_values *v, unsigned bit)
{
    if (s->cost_set & bit) return " (set)";
    if (!(s->measured & bit)) return " (default)";
    return v->shared_cores && bit != SETTINGS_SET_GAMMA ? " (shared cores)" : "";
}

/* x as %g, or "-" where it is NaN (never measured). */
static const char *figure(char *text, size_t len, double x)
{
    if (isnan(x)) snprintf(text, len, "-");
    else snprintf(text, len, "%.3g", x);
    return text;
}

static void report(const sparcml_settings *s, const calib_values *v, double share, double seconds)
{
    char ranks[32], spread[32];
    printf("sparcml: calibrated alpha=%.3g us%s beta=%.3g ns/B%s gamma=%.3g ns/entry%s vendor_gather=%.3g%s "
           "(ranks per core %s; %d repetitions, spread %s; %.2f ms at MPI_Init)\n",
           s->alpha * 1e6, origin(s, v, SETTINGS_SET_ALPHA), s->beta * 1e9, origin(s, v, SETTINGS_SET_BETA),
           s->gamma * 1e9, origin(s, v, SETTINGS_SET_GAMMA), s->vendor_gather,
           isnan(v->vendor_gather) ? " (default)" : "", figure(ranks, sizeof ranks, share), v->reps,
           figure(spread, sizeof spread, v->spread), seconds * 1e3);
    fflush(stdout);
}

/* The measurement on comm, with the memory it needs.  Its time counts
 * from its start, after the collective that agreed on it: that one waits
 * for the last rank to reach MPI_Init's end (as the program's own first
 * collective would). */
static int measure_on(MPI_Comm comm, int size, char *buf, calib_record *records, int *displs)
{
    const sparcml_settings *s = settings_get();
    calib_totals sum;
    calib_values v;
    double t0 = PMPI_Wtime(), share = 1;
    int one_node = 0, rank = 0;
    int rc = gather_records(comm, size, calib_ps(time_merge(buf)), records, &sum, &share, &one_node);
    if (rc == MPI_SUCCESS && !(share > 1)) rc = measure_exchanges(comm, size, buf, displs, &sum);
    if (rc == MPI_SUCCESS) rc = PMPI_Comm_rank(comm, &rank);
    if (rc != MPI_SUCCESS) return rc;
    v = calib_derive(&sum, share, one_node);
    settings_calibrate_process(v.alpha, v.beta, v.gamma, v.vendor_gather);
    if (s->verbose && rank == 0) report(s, &v, share, PMPI_Wtime() - t0);
    return MPI_SUCCESS;
}

int calibrate_job(MPI_Comm comm)
{
    const sparcml_settings *s = settings_get();
    char *buf = NULL;
    calib_record *records = NULL;
    int *displs = NULL;
    unsigned mine[2], everywhere[2];
    int size = 1, rc;
    /* SPARCML_DISABLE, SPARCML_CALIBRATE and SPARCML_REPRODUCIBLE are equal
     * on all ranks (job scope, compared just before); which variables are
     * set need not be: the measurement is skipped only where every rank set
     * all three. */
    if (s->disable || !s->calibrate || s->reproducible || s->error[0]) return MPI_SUCCESS;
    rc = PMPI_Comm_size(comm, &size);
    if (rc != MPI_SUCCESS || size < 2) return rc;
    /* The memory comes first and is agreed with the variables: a rank
     * without it must not leave the others waiting in the exchange, so
     * then no rank measures and all keep the defaults. */
    buf = calloc(1, 8 * (size_t)size > CALIB_BUFFER_BYTES ? 8 * (size_t)size : CALIB_BUFFER_BYTES);
    records = malloc(((size_t)size + 1) * sizeof *records);
    displs = malloc(2 * (size_t)size * sizeof *displs);
    mine[0] = s->cost_set;
    mine[1] = buf && records && displs;
    rc = PMPI_Allreduce(mine, everywhere, 2, MPI_UNSIGNED, MPI_BAND, comm);
    if (rc == MPI_SUCCESS && !mine[1]) rc = MPI_ERR_NO_MEM;
    else if (rc == MPI_SUCCESS && everywhere[1] && everywhere[0] != SETTINGS_SET_MODEL)
        rc = measure_on(comm, size, buf, records, displs);
    free(buf);
    free(records);
    free(displs);
    return rc;
}
