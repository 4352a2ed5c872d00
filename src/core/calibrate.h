/* calibrate.h -- the cost model's alpha, beta and gamma measured on the
 * machine the job runs on.
 *
 * At MPI_Init (shim/interpose.c), when SPARCML_CALIBRATE is 1 and some rank
 * leaves a cost-model variable unset, every rank of MPI_COMM_WORLD takes
 * part in one measurement on a private duplicate of it:
 *  - gamma: each rank times the merge-add kernel (kernel/stream.h) on two
 *    sparse streams of CALIB_MERGE_ENTRIES entries: the fastest of
 *    CALIB_MERGE_REPS runs, per input entry;
 *  - alpha: every rank takes part in CALIB_ROUND_REPS exchanges of
 *    CALIB_SMALL_BYTES in ceil(log2 P) rounds (rank r sends to r + 2^i and
 *    receives from r - 2^i in round i), after one untimed; the fastest
 *    repetition, averaged over the ranks and divided by its rounds, is the
 *    latency a round of recursive doubling pays;
 *  - beta: rank r < P/2 and rank r + P/2 ping-pong, all pairs at once;
 *    rank r times CALIB_SMALL_REPS round trips of CALIB_SMALL_BYTES and
 *    CALIB_LARGE_REPS of CALIB_LARGE_BYTES (after one untimed exchange of
 *    each, which sets up the connection); the fastest large round trip's
 *    excess over the fastest small one is 2 beta per byte, and beta is at
 *    least a quarter of the large round trip per byte (calib_derive).
 * The fastest of a few runs, not a typical one: delays only add (another
 * process on the core, a partner not yet scheduled).  Gamma's short runs
 * mostly finish within a time slice: the price on a core of its own, as
 * the model wants it.  A round, though, needs its partner scheduled, and
 * where ranks share cores every repetition of the exchange holds that wait
 * (all P ranks run in it; a single pair's round trip may not, when both
 * partners happen to be on cores).  The model adds the wait itself by
 * multiplying alpha by the ranks per core (core/select.c), so the measured
 * round is divided by them (detected over the job's ranks as for a
 * communicator, base/placement.h, or SPARCML_RANKS_PER_CORE).
 * The times are added up over the ranks in integer picoseconds (an exact
 * sum, so identical on every rank) and every rank derives the same values
 * from the same totals (calib_derive).  They replace the defaults of the
 * variables this rank left unset (settings_calibrate).  Nothing else
 * changes: every call, blocking, non-blocking, persistent, transparent or
 * compressed, reads the settings as before. */
#ifndef SPARCML_CALIBRATE_H
#define SPARCML_CALIBRATE_H

#include <mpi.h>
#include <stdint.h>

enum {
    CALIB_SMALL_BYTES = 8,
    CALIB_LARGE_BYTES = 131072,
    CALIB_SMALL_REPS = 8,
    CALIB_LARGE_REPS = 3,
    CALIB_MERGE_ENTRIES = 16384, /* per operand */
    CALIB_MERGE_REPS = 3,
    CALIB_ROUND_REPS = 16
};

/* Sums over the ranks, in picoseconds. */
typedef struct calib_totals {
    int64_t exchangers;                  /* ranks that timed the exchange: P */
    int64_t round_ps[CALIB_ROUND_REPS]; /* their times for each repetition */
    int64_t pairs;    /* ranks that timed a ping-pong */
    int64_t small_ps; /* their fastest small round trips */
    int64_t large_ps; /* their fastest large round trips */
    int64_t ranks;    /* ranks that timed the merge */
    int64_t merge_ps; /* their fastest merge-add of 2 CALIB_MERGE_ENTRIES entries */
} calib_totals;

typedef struct calib_values {
    double alpha, beta, gamma; /* seconds, s/byte, s/entry */
} calib_values;

/* Seconds as integer picoseconds (rounded; negative and NaN as 0). */
int64_t calib_ps(double seconds);

/* The values every rank derives from the same totals, for ranks sharing
 * cores ranks_per_core (>= 1).  Without a timed pair alpha and beta are
 * NaN, without a timed merge gamma is (the caller keeps the defaults). */
calib_values calib_derive(const calib_totals *t, double ranks_per_core);

/* The measurement on comm (MPI_COMM_WORLD at MPI_Init), collective; with
 * SPARCML_VERBOSE rank 0 prints the values and what they cost.  Returns an
 * MPI error code (on an error the defaults stay). */
int calibrate_job(MPI_Comm comm);

#endif
