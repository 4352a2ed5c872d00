/* algorithms.h -- the table of the algorithms.
 *
 * One row per algorithm in alg/algorithm_list.h: its id (SPARCML_ALG_<ID>)
 * and its file's stem.  The file alg/<stem>.c opens with Algorithm / Restrictions / Cost /
 * Memory / Rounds and defines the row's descriptor, sparcml_alg_<stem>
 * (below): its SPARCML_ALGORITHM name, its first step, its restriction,
 * cost and scratch, whether it pipelines and how the agreement may ride
 * on it.  The enum, the settings' names, the selector, the agreement's
 * ride and the dispatch all come from the list and the descriptors, never
 * from a row's place or name: adding an algorithm is one file, one row and
 * its line in Makefile.am. */
#ifndef SPARCML_ALGORITHMS_H
#define SPARCML_ALGORITHMS_H

#include "alg/algorithm_list.h"
#include "alg/cost_model.h"
#include "alg/scratch.h"
#include "runtime/schedule.h"

typedef enum sparcml_algorithm {
    SPARCML_ALG_AUTO = 0, /* SPARCML_ALGORITHM=auto: the selector's choice */
#define SPARCML_ALG_ENUM(ID, STEM) SPARCML_ALG_##ID,
    SPARCML_ALGORITHM_LIST(SPARCML_ALG_ENUM)
#undef SPARCML_ALG_ENUM
    SPARCML_ALG_COUNT_
} sparcml_algorithm;
_Static_assert((int)SPARCML_ALG_COUNT_ == (int)COST_ALGORITHMS, "both count auto and the list's rows");

/* How the agreement's records (core/agree.h) may ride on an algorithm's
 * messages, so that a call's agreement costs no rounds of its own
 * (core/op_ride.c decides when they do, from the communicator's history):
 *  ALG_RIDES_NOT       never;
 *  ALG_RIDES_EXCHANGE  on its whole exchange, every message carrying the
 *                      combination so far (in the chunks of a pipelined
 *                      run too); the sum is kept until the verdict and
 *                      delivered then;
 *  ALG_RIDES_PHASE     on its first phase (ride_phase), in which every rank
 *                      sends a part to every other, each carrying its
 *                      sender's own record; after the verdict the rest of
 *                      the schedule (resume) runs on the pools reserved for
 *                      the ride. */
typedef enum alg_ride { ALG_RIDES_NOT, ALG_RIDES_EXCHANGE, ALG_RIDES_PHASE } alg_ride;

/* An algorithm's row, defined by its file as sparcml_alg_<stem>. */
typedef struct sparcml_algorithm_desc {
    const char *name;    /* SPARCML_ALGORITHM's, and every message's */
    int sparse;          /* sums streams; 0: the vendor's dense allreduce of the values */
    sched_step first;
    /* SPARCML_R_OK where it can run the problem, else the reason it
     * cannot; NULL: it runs any problem. */
    int (*restriction)(const sparcml_problem *p);
    double (*cost)(const cost_model *m, const sparcml_problem *p);
    void (*scratch)(const sparcml_call *c, const sparcml_problem *p, uint64_t *need);
    /* Its Memory line's claim: the most a call adds per rank beyond the
     * vendor's own allreduce of the same vector, in dense results (D: the
     * dimension times the value's size), at any input; 0: none claimed.
     * The library never reads it: tests/scripts/scale.sh measures every
     * row against it (tests/mpi/memory_peak.c). */
    double memory_bound;
    /* What the agreement's records, `record` bytes each, add to `need`
     * (holding scratch's for p) while they ride on it: the pools its
     * messages and sums take them in.  NULL: it never rides
     * (ALG_RIDES_NOT). */
    void (*ride_scratch)(const sparcml_call *c, const sparcml_problem *p, uint64_t record, uint64_t *need);
    /* Chunks per round of a pipelined run (select.h); NULL: never pipelined. */
    int (*chunks)(const cost_model *m, const sparcml_problem *p);
    alg_ride ride;
    int (*ride_phase)(sched *s, sched_step then); /* ALG_RIDES_PHASE */
    sched_step resume;                           /* ALG_RIDES_PHASE */
} sparcml_algorithm_desc;

#define SPARCML_ALG_DECLARE(ID, STEM) extern const sparcml_algorithm_desc sparcml_alg_##STEM;
SPARCML_ALGORITHM_LIST(SPARCML_ALG_DECLARE)
#undef SPARCML_ALG_DECLARE

/* Indexed by sparcml_algorithm; row 0 is "auto" (no step, no cost). */
extern const sparcml_algorithm_desc *const sparcml_algorithms[SPARCML_ALG_COUNT_];

/* Sends any algorithm's schedule may keep in flight on P ranks
 * (runtime/comm_ctx.h, ctx_extension.send_slots): a reduce-scatter's
 * P - 1, a pipelined round's chunks. */
int sparcml_algorithm_send_slots(int P);

/* "ssar_split_allgather", ...; "invalid" out of range. */
const char *sparcml_algorithm_name(sparcml_algorithm a);

/* The algorithm's restriction on p (SPARCML_R_OK where it has none). */
int sparcml_algorithm_restriction(sparcml_algorithm a, const sparcml_problem *p);

/* The algorithm whose whole exchange the records ride on (the one row
 * with ALG_RIDES_EXCHANGE): also the one that sums a single rank's
 * stream, in no rounds. */
sparcml_algorithm sparcml_exchange_algorithm(void);

#endif
