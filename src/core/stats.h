/* stats.h -- SPARCML_VERBOSE (one line per call) and SPARCML_STATS (a
 * report at MPI_Finalize).  Counters are atomics: any thread may add to
 * them, and nothing is counted on the calls that go straight to the vendor.
 * A call is counted once, by rank 0 of its communicator (`rank` below), so
 * that the sum over the ranks of MPI_COMM_WORLD is the number of collective
 * calls; bytes by every rank. */
#ifndef SPARCML_STATS_H
#define SPARCML_STATS_H

#include <stdint.h>

#include "alg/cost_model.h"
#include "runtime/call.h"
#include "core/select.h"
#include "core/settings.h"

/* How a call's agreement travelled (core/op_ride.c): on the messages of
 * which algorithm's row (carrier: its whole exchange or its first phase,
 * as the row rides, alg/algorithms.h), whether its data rode along with
 * the records (piggybacked) or was to and some rank declined; what the
 * selector picks for the agreed numbers (selected), and on what
 * (chosen_by, set where the verbose line shows it). */
typedef struct stats_ride {
    sparcml_algorithm carrier;
    int piggybacked, declined;
    cost_route selected;
    select_basis chosen_by;
} stats_ride;

/* Record one finished tagged call that ran `alg` for `seconds`, with the
 * agreed timed multiples of the model's prices (select_timed.timed_over). */
void stats_record(const sparcml_settings *s, const sparcml_call *c, const stats_ride *ride, sparcml_algorithm alg,
                  double seconds, const double timed_over[COST_ROUTES]);

/* Record a tagged call that failed with `reason` (with SPARCML_VERBOSE,
 * its line). */
void stats_record_error(int rank, int reason);

/* Record a failed call whose data travelled with the agreement records. */
void stats_record_piggybacked_failure(int rank);

/* Transparent mode: where a qualifying call went. */
typedef enum stats_route {
    ROUTE_SPARSE,       /* a sparse algorithm (also counted by stats_record) */
    ROUTE_VENDOR_MODEL, /* the cost model chose the vendor on the original buffers */
    ROUTE_VENDOR_LEARNT, /* straight to the vendor after an agreed vendor choice */
    ROUTE_COUNT_
} stats_route;

/* Whether this rank prints the verbose lines of calls on ctx: rank 0,
 * with SPARCML_VERBOSE. */
int stats_verbose(const sparcml_settings *s, const sparcml_ctx *ctx);

/* What the verbose line of a transparent call tells of its choice: the
 * vendor's time on these buffers as the selector saw it (0: not timed, or
 * not agreed) and what a vendor choice rests on (a select_basis; -1: no
 * choice of the vendor on this call). */
typedef struct stats_choice {
    double vendor_seconds;
    int chosen_by;
} stats_choice;

/* Record a transparent call c: its route, the most nonzeros any rank had
 * and this rank's scan time (both unknown on ROUTE_VENDOR_LEARNT, which
 * does not scan), its choice and, on a vendor route, the vendor's run
 * (c->bytes_sent: the call's bytes, in the table's vendor row). */
void stats_record_transparent(const sparcml_settings *s, const sparcml_call *c, stats_route route, uint64_t k_max,
                              double scan_seconds, const stats_choice *choice, double vendor_run_seconds);

/* Compression: where a call went. */
typedef enum stats_compress_route {
    COMPRESS_ROUTE_SELECTED, /* summed from the ranks' selections */
    COMPRESS_ROUTE_VENDOR,   /* the cost model chose the vendor's exact sum of acc */
    COMPRESS_ROUTE_LEARNT,   /* the same, straight after such a choice (no agreement) */
    COMPRESS_ROUTE_EXACT,    /* the vendor's exact sum: some rank's feedback memory is full */
    COMPRESS_ROUTES_
} stats_compress_route;

/* Record a compressed call: selected (c->bytes_sent, counted in its
 * algorithm's row by stats_record; held_back: ||eps|| / ||eps + g|| on
 * this rank, negative when not known), or summed by the vendor (the
 * table's vendor row, with the vendor's run time). */
void stats_record_compressed(const sparcml_settings *s, const sparcml_call *c, stats_compress_route route,
                             double held_back, double vendor_run_seconds);

/* Compression on any rank: a buffer's residual was dropped (its rhythm
 * changed, core/feedback.h), or it was summed exactly because the feedback
 * memory is full here (with SPARCML_VERBOSE, the first such call on the
 * communicator prints a line: `tell`). */
void stats_record_feedback_reset(const sparcml_settings *s, int rank, const void *buf, MPI_Count count);
void stats_record_feedback_full(const sparcml_settings *s, int rank, const void *buf, MPI_Count count, int tell);

/* At MPI_Finalize: print the report on rank 0 of MPI_COMM_WORLD (collective
 * over a private duplicate of it). */
void stats_report(void);

#endif
