/* calibrate.h -- the cost model's alpha, beta and gamma measured on the
 * machine the job runs on.
 *
 * At MPI_Init (shim/interpose.c), when SPARCML_CALIBRATE is 1,
 * SPARCML_REPRODUCIBLE is 0 and some rank leaves a cost-model variable
 * unset, every rank of MPI_COMM_WORLD takes part in one measurement:
 *  - gamma: each rank times the merge-add kernel (kernel/stream.h) on two
 *    sparse streams of CALIB_MERGE_ENTRIES entries: the fastest of
 *    CALIB_MERGE_REPS runs, per input entry; the ranks hand each other
 *    these times with their placements (base/placement.h) in one
 *    allgather, which tells every rank how many ranks share a core
 *    (or SPARCML_RANKS_PER_CORE says it) and whether all run on one node;
 *  - where each rank has a core of its own, alpha and beta, on a private
 *    duplicate of the communicator: every rank takes part in exchanges of
 *    CALIB_SMALL_BYTES, CALIB_MID_BYTES and CALIB_LARGE_BYTES over all
 *    ranks in ceil(log2 P) rounds (rank r sends to r + 2^i and receives
 *    from r - 2^i in round i), one untimed of each size, then up to
 *    CALIB_ROUND_REPS repetitions of the three; the fastest repetition of
 *    each size, averaged over the ranks, per round: the mid and large ones
 *    give a line, beta its slope per byte (at least a quarter of the large
 *    round per byte), alpha the round's time at no bytes, at least the
 *    small round's (a link that lets a burst pass faster than its rate
 *    puts the line's origin below its latency);
 *  - the vendor's gather, likewise: in each repetition, after the
 *    exchanges, every rank takes part in an MPI_Allgatherv of
 *    CALIB_LARGE_BYTES in all (an equal share each, in whole words; one
 *    untimed first); the fastest, averaged over the ranks, over what the
 *    model prices it at with the alpha and beta just measured
 *    (cost_vendor_allgather), is the vendor_gather factor by which the
 *    model multiplies the vendor's gathers (1 below CALIB_VENDOR_MARGIN).
 *    MPICH on shared memory takes a multiple of an exchange of the same
 *    bytes (bench/RESULTS.md, "Split gathers").
 * The fastest of a few runs, not a typical one: delays only add (another
 * process on the core, a partner not yet scheduled).  Gamma's short runs
 * mostly finish within a time slice: the price on a core of its own, as
 * the model wants it.  A round, though, needs its partner scheduled: where
 * ranks share cores its time is the scheduler's, many times over from run
 * to run and at a cost of several time slices per round on a busy node
 * (bench/RESULTS.md, "Selector regret").  So there no round is timed:
 * on one node a round is priced at CALIB_SHARED_ALPHA (a round through
 * shared memory with a core each; the model multiplies alpha by the ranks
 * per core, core/select.c, for the wait) and a byte at a copy on a core
 * of its own, SELECT_BYTE_PER_MERGE of the measured gamma (below the
 * model's floor for shared cores, which then prices every byte); on
 * several nodes alpha and beta keep their defaults (a network's); the
 * vendor's gathers keep theirs.  The measurement then costs one merge
 * timing and the allgather.  The two sizes of exchange are the ones the
 * algorithms send (their parts and rounds hold kilobytes to megabytes): a
 * message that large takes the MPI's rendezvous protocol, whose handshake
 * a round of 8 bytes never pays, and whose latency is what the algorithms'
 * rounds and parts cost beyond their bytes.
 *
 * Where ranks have cores of their own the machine may still be busy
 * (other processes on the cores): the exchanges stop at CALIB_BUDGET_US
 * from their start (every exchange and gather carries, from each rank,
 * whether that rank is past it: by the exchange's end every rank knows
 * whether any is, and all stop at the same repetition), and alpha, beta
 * and vendor_gather are kept at their defaults unless at least
 * CALIB_MIN_REPS repetitions ran and, of the mid and large exchanges, the
 * median repetition took at most CALIB_SPREAD_MAX times the fastest
 * (calib_derive): a choice made from the defaults is the same in every
 * run.
 *
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
    CALIB_MID_BYTES = 16384,
    CALIB_LARGE_BYTES = 131072,
    CALIB_MERGE_ENTRIES = 16384, /* per operand */
    CALIB_BUFFER_BYTES = 32 * CALIB_MERGE_ENTRIES + 128, /* the merge's, and the exchanges' */
    CALIB_MERGE_REPS = 3,
    CALIB_ROUND_REPS = 8,
    CALIB_MIN_REPS = 3,
    CALIB_BUDGET_US = 12000 /* from the measurement's start on each rank */
};

/* The most the median repetition of the mid and large exchanges may take
 * over the fastest for alpha and beta to count. */
#define CALIB_SPREAD_MAX 2.0

/* A vendor_gather below it counts as 1: the vendor as fast as its price
 * in the model, within the measurement's noise. */
#define CALIB_VENDOR_MARGIN 1.05

/* Where ranks on one node share cores: a round's latency through shared
 * memory for a rank with a core of its own, in seconds (bench/RESULTS.md,
 * "Selector regret", shared memory). */
#define CALIB_SHARED_ALPHA 5e-6

/* Sums over the ranks, in picoseconds. */
typedef struct calib_totals {
    int64_t exchangers;                  /* ranks that took part: P */
    int64_t reps;                        /* repetitions each ran (all alike), times P */
    int64_t small_ps[CALIB_ROUND_REPS]; /* their times for each repetition, */
    int64_t mid_ps[CALIB_ROUND_REPS];   /* of each size */
    int64_t large_ps[CALIB_ROUND_REPS];
    int64_t vendor_ps[CALIB_ROUND_REPS]; /* their vendor's allgathers */
    int64_t vendor_bytes;                /* gathered by each, in all, times P */
    int64_t merge_ps; /* their fastest merge-adds of 2 CALIB_MERGE_ENTRIES entries */
} calib_totals;

typedef struct calib_values {
    double alpha, beta, gamma; /* seconds, s/byte, s/entry */
    double vendor_gather;      /* the vendor's gathers over their price (>= 1) */
    int reps;                  /* repetitions that ran */
    double spread;             /* the mid and large exchanges' median over fastest, the larger (NaN: none) */
    int shared_cores;          /* ranks share cores: alpha and beta by the rule above, not timed */
} calib_values;

/* Seconds as integer picoseconds (rounded; negative and NaN as 0). */
int64_t calib_ps(double seconds);

/* The values every rank derives from the same totals: gamma from the
 * merges; where ranks_per_core exceeds 1, alpha and beta by the rule for
 * shared cores on one node (one_node) or NaN; else from the first
 * t->reps / t->exchangers repetitions of the exchanges.  Without an
 * exchange (one rank), with fewer than CALIB_MIN_REPS repetitions or a
 * spread above CALIB_SPREAD_MAX, alpha, beta and vendor_gather are NaN,
 * without a timed merge gamma is (the caller keeps the defaults). */
calib_values calib_derive(const calib_totals *t, double ranks_per_core, int one_node);

/* The measurement on comm (MPI_COMM_WORLD at MPI_Init), collective; with
 * SPARCML_VERBOSE rank 0 prints the values, which of them stayed at their
 * defaults, the repetitions, their spread and what they cost.  Returns an
 * MPI error code (on an error the defaults stay). */
int calibrate_job(MPI_Comm comm);

#endif
