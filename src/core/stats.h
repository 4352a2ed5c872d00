/* stats.h -- SPARCML_VERBOSE (one line per call) and SPARCML_STATS (a report
 * at MPI_Finalize).  Counters are atomics: any thread may add to them, and
 * nothing is counted on the untagged path.  A call is counted once, by rank
 * 0 of its communicator (`rank` below), so that the sum over the ranks of
 * MPI_COMM_WORLD is the number of collective calls; bytes by every rank. */
#ifndef SPARCML_STATS_H
#define SPARCML_STATS_H

#include <stdint.h>

#include "alg/cost_model.h"
#include "runtime/call.h"
#include "core/settings.h"

/* Record one finished tagged call that ran `alg` for `seconds`, with the
 * agreed timed multiples of the model's prices (problem.timed_over). */
void stats_record(const sparcml_settings *s, const sparcml_call *c, sparcml_algorithm alg,
                  double seconds, const double timed_over[COST_ALGORITHMS]);

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

/* Record a transparent call of N values: its route, the most nonzeros any
 * rank had (0 when not scanned), this rank's scan time and the vendor's
 * time on these buffers as the selector saw it (0: not timed, or not
 * agreed). */
void stats_record_transparent(const sparcml_settings *s, const sparcml_ctx *ctx, uint64_t n, int vtype,
                              stats_route route, uint64_t k_max, double scan_seconds, double vendor_seconds);

/* Compression: a call summed from the ranks' selections of k_max values
 * each (bytes: the algorithm's c->bytes_sent and `extra_bytes`, this
 * rank's share of CLT-k's index broadcast; held_back: ||eps|| /
 * ||eps + g|| on this rank, negative when not known), or exactly, because
 * some rank's feedback memory is full. */
void stats_record_compressed(const sparcml_settings *s, const sparcml_call *c, int exact, double held_back,
                             uint64_t extra_bytes);

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
