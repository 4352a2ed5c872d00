/* select.h -- the algorithm choice (for transparent mode, the route: an
 * algorithm or the vendor), from the cost functions of the algorithms
 * (alg/algorithms.h, alg/cost_model.h).
 *
 * Every input comes from the agreement step or from state that is identical
 * on all ranks, so every rank computes the same costs bit for bit and picks
 * the same algorithm (a mismatch would deadlock). */
#ifndef SPARCML_SELECT_H
#define SPARCML_SELECT_H

#include <stdint.h>

#include "alg/algorithms.h"
#include "core/settings.h"


/* What earlier calls timed say of this one's routes, as agreed
 * (core/timed.h), beside the problem the selector prices: the fastest run
 * of each route on calls like this one over its price (0: never timed),
 * the least multiple of its model a route is priced at; and the rationing
 * of trials: whether this call may start trying a route never timed here
 * while another was, and the route of the trial under way (0,
 * SPARCML_ALG_AUTO: none), which runs until the trial had its calls.  All
 * zero: the model alone. */
typedef struct select_timed {
    double timed_over[COST_ROUTES];
    int may_try;
    cost_route trying;
} select_timed;

/* What moving a byte costs at least where it is copied by the cores that
 * merge, as a share of gamma (core/select.c): an eighth of a merged 8-byte
 * entry. */
#define SELECT_BYTE_PER_MERGE 0.125

/* The model the costs are computed with: the settings' alpha and gamma
 * scaled by the problem's ranks per core, beta at least
 * SELECT_BYTE_PER_MERGE of gamma there (a byte moves as a copy on the
 * cores the merges share; the settings' own beta stays the link's,
 * link_beta). */
cost_model select_model(const sparcml_settings *s, const sparcml_problem *p);

/* Modelled time of each algorithm in seconds (INFINITY: its restriction
 * rules the problem out). */
void select_costs(const sparcml_settings *s, const sparcml_problem *p,
                  double cost[SPARCML_ALG_COUNT_]);
/* One of them: what a call that ran `a` is timed against (core/op.c),
 * without pricing the others. */
double select_price(const sparcml_settings *s, const sparcml_problem *p, sparcml_algorithm a);

/* How many chunks algorithm `a` cuts each round into on the problem: its
 * row's chunks function (the pipelined exchange's model, with
 * SPARCML_PIPELINE_CHUNKS, in the algorithm's file), 1 for a row that
 * never pipelines. */
int select_pipeline_chunks(const sparcml_settings *s, const sparcml_problem *p, sparcml_algorithm a);

/* Who gathers the split algorithms' messages, by their bytes in all: the
 * vendor's allgatherv or the library's exchange in one of its patterns
 * (cost_gather_plan).  SPARCML_SPLIT_GATHER forces one. */
alg_gather_plan select_gather_plan(const sparcml_settings *s, const sparcml_problem *p);

/* The forced algorithm (whether it applies is the caller's to check:
 * sparcml_algorithm_restriction), or the cheapest applicable one,
 * each priced at least at what it was timed at on calls like this one
 * (t->timed_over); one never timed there, where another was, only as a
 * trial the rationing allows (t->may_try); the trial under way
 * (t->trying) wherever it applies.  Always an
 * algorithm, never COST_VENDOR (alg/cost_model.h). */
cost_route select_algorithm(const sparcml_settings *s, const sparcml_problem *p, const select_timed *t);

/* Transparent mode (transparent.c): the route of an untagged dense sum
 * whose nonzeros the agreement counted: COST_VENDOR, the vendor on the
 * original buffers (select_vendor_price), or a sparse algorithm, which
 * pays for building the input stream and writing the dense result too.
 * Each route costs at least what it was timed at (t->timed_over), as for
 * tagged calls.  A forced algorithm that sums no streams means the vendor. */
cost_route select_transparent(const sparcml_settings *s, const sparcml_problem *p, const select_timed *t);
/* Compression (compress.c): a sparse algorithm to sum the ranks'
 * selections, or COST_VENDOR, the vendor's exact sum of every rank's acc
 * = eps + g.  A selection route pays for the rank's own work too
 * (select_compress_detour: its passes over the buffer, CLT-k's index
 * broadcast), and is timed whole: each algorithm costs at least its timed
 * multiple of both (t->timed_over).  A forced algorithm as in transparent
 * mode. */
cost_route select_compressed(const sparcml_settings *s, const sparcml_problem *p, const select_timed *t);
double select_compress_detour(const sparcml_settings *s, const sparcml_problem *p);
/* The model's price of the vendor's allreduce of the problem's dense
 * vectors on the original buffers (transparent mode's vendor route). */
double select_vendor_price(const sparcml_settings *s, const sparcml_problem *p);

/* A kind's selector: select_algorithm, select_transparent or
 * select_compressed. */
typedef cost_route (*select_route)(const sparcml_settings *s, const sparcml_problem *p, const select_timed *t);

/* What the selector's choice rests on (the verbose line's chosen_by=):
 * SPARCML_ALGORITHM; the model with fixed parameters (the defaults or the
 * user's); the model with parameters measured at MPI_Init; timed
 * multiples that moved the choice off the model's; a trial (of a route
 * never timed here, or the one under way).  `select` is the kind's
 * selector, which chose `chosen` for p. */
typedef enum {
    SELECT_BY_FORCED, SELECT_BY_MODEL, SELECT_BY_CALIBRATED, SELECT_BY_TIMED, SELECT_BY_TRIAL
} select_basis;
select_basis select_basis_of(const sparcml_settings *s, const sparcml_problem *p, const select_timed *t,
                             cost_route chosen, select_route select);

/* A learnt vendor choice (transparent mode, compression: each kind's per
 * communicator): after the selector chose the vendor for a count and
 * value type, the next `skip` calls of that pair on the communicator go
 * straight to it, without an agreement: the choice came from agreed facts,
 * and count and type are arguments MPI requires to be the same on every
 * rank, so all ranks skip alike.  select_learnt_skips says whether a call
 * of the pair skips (and counts it); a choice of the selections for the
 * pair ends the learnt one (a choice learnt for another pair stays). */
typedef struct select_learnt {
    MPI_Count count;
    int vtype, skip;
} select_learnt;
int select_learnt_skips(select_learnt *l, MPI_Count count, int vtype);
void select_learn_vendor(select_learnt *l, MPI_Count count, int vtype, int skip);
void select_learn_sparse(select_learnt *l, MPI_Count count, int vtype);
/* The selector's route for the pair: the vendor is learnt for the next
 * SELECT_LEARNT_SKIP calls, a sparse route ends a learnt choice. */
void select_learn(select_learnt *l, MPI_Count count, int vtype, cost_route route);
/* The learnt choice is the vendor for the pair (its skips used up or not). */
int select_learnt_vendor(const select_learnt *l, MPI_Count count, int vtype);
/* The kinds' `skip`: calls after a learnt vendor choice pay the agreement
 * (and transparent mode's scan) once in SELECT_LEARNT_SKIP + 1, and the
 * choice is made anew that often. */
enum { SELECT_LEARNT_SKIP = 15 };

/* The overlap that would have predicted a result with result_nnz entries. */
double select_learn_overlap(const sparcml_problem *p, uint64_t result_nnz);

#endif
