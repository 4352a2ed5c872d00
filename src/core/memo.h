/* memo.h -- what a communicator's past calls predict of the next: which
 * exchange the next call's agreement rides on, and whether its data comes
 * along (core/op_ride.c).
 *
 * The pairs (count, value type) whose latest call on the communicator
 * chose an algorithm that rides the whole exchange (alg/algorithms.h,
 * ALG_RIDES_EXCHANGE), run in whole messages: a call whose pair is
 * remembered sends its data along with the agreement records on that
 * exchange.  A handful of slots serves loops that alternate between a few
 * buffers.
 *
 * And the communicator's latest call (`latest`) where it chose an
 * algorithm that rides its first phase, or the whole exchange run in
 * `chunks` per round (SPARCML_ALG_AUTO: neither), and was of a kind whose
 * data rides (tagged, transparent).  The next call's agreement rides on
 * that exchange whatever its count: the exchanges differ in their
 * messages, and which one runs must not depend on an argument, so that
 * ranks whose counts differ (an erroneous program) still meet in the same
 * exchange, whose records then report it.  Its data comes along where its
 * count and value type are that call's.
 *
 * Only agreed outcomes change the memo, in the same order on every rank,
 * and count and datatype are arguments MPI requires to be the same on all
 * ranks: so all ranks predict alike. */
#ifndef SPARCML_MEMO_H
#define SPARCML_MEMO_H

#include <stdint.h>

#include "alg/algorithms.h"

enum { MEMO_SLOTS = 4 };
typedef struct memo_latest {
    sparcml_algorithm alg;
    int chunks;
    uint64_t count, dim, k_max;
    int vtype;
} memo_latest;
typedef struct sparcml_memo {
    uint64_t count[MEMO_SLOTS];
    int vtype[MEMO_SLOTS];
    /* The dimension and the largest input of the pair's latest call: what
     * the scratch of the next is reserved for. */
    uint64_t dim[MEMO_SLOTS], k_max[MEMO_SLOTS];
    int used, next;
    memo_latest latest;
} sparcml_memo;

/* Is the pair remembered?  Then *dim and *k_max (unless NULL) receive its
 * latest call's. */
int memo_hit(const sparcml_memo *m, uint64_t count, int vtype, uint64_t *dim, uint64_t *k_max);

/* What the memo keeps of a call that took `route` (an algorithm, or
 * COST_VENDOR) in `chunks` per round, of a kind whose data rides or not:
 * an algorithm that rides the whole exchange, run in whole messages, after
 * any kind of call; any other that rides (its first phase, or the exchange
 * in chunks) only where the kind's data rides (records alone cost fewer
 * messages on an exchange of one message per round); nothing after the
 * vendor's route (SPARCML_ALG_AUTO). */
sparcml_algorithm memo_keeps(cost_route route, int chunks, int data_rides);

/* After a call of `count` words and the agreed problem p that took
 * `route`, run in `chunks` per round (select_pipeline_chunks): remember
 * the pair (count, p's value type) with p's dimension and k_max where
 * memo_keeps keeps the whole exchange in whole messages, else drop it;
 * and keep the call as the latest where it keeps an algorithm that rides
 * its first phase or the exchange in chunks. */
void memo_note(sparcml_memo *m, uint64_t count, const sparcml_problem *p, cost_route route, int chunks,
               int data_rides);

/* After a failed call. */
void memo_forget(sparcml_memo *m);

#endif
