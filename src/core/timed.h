/* timed.h -- how fast the routes (alg/cost_model.h: the algorithms, and
 * transparent mode's vendor route) run here.
 *
 * The model prices messages and merges as the calibration measured them,
 * small and in the cache; what the algorithms really take on a machine
 * (the vendor's allreduce of large buffers, a dense-size split exchange
 * through memory) can be several times that.  So unless the user set the
 * whole model or SPARCML_REPRODUCIBLE (settings_timed_prices), each
 * blocking call times the route it ran on this rank
 * (timed_note_run), in millionths of the price the selector gave it; each
 * rank keeps its fastest per kind, count and value type (a timed_table, in
 * the communicator's policy), and the next agreement for them carries the
 * fastest any rank saw (timed_lookup before it, timed_lower after): the
 * selector prices every route at least at that, alike on every rank
 * (select_timed.timed_over, core/select.h).  Which calls time is the
 * caller's rule (core/op.c, op_timing).
 *
 * Learning a price means running the algorithm, and an algorithm the
 * model underprices may be far slower than the one it would replace: so
 * trying is rationed.  Once some route has an agreed multiple in a
 * call's band, one never timed there runs only as a trial: the key's
 * first at any call, a later one only while the key's trial calls stay
 * within a share of its calls (timed_may_start: at most 1 + calls /
 * TIMED_TRIAL_SHARE), one trial at a time, TIMED_TRIAL_CALLS calls each.
 * The first is free because the model's pick may change after the first
 * call (what it learns of the indices' overlap), when the pick of call 1
 * has been timed and the new one has not: a short run would otherwise
 * spend its first calls on the old pick.  The selector tries the cheapest by
 * the model, and only where that is below the best timed price, and runs
 * the trial's route until it had its calls (core/select.c), even where
 * the multiple its first timed run gave prices it above another: its
 * first run is never timed, so its verdict is the fastest of its other
 * runs, never one run alone (a call the cache or the scheduler slowed).
 * Transparent mode's vendor keeps the calls it is chosen for.  A share,
 * not a fixed number of trials: a short run spends little on them, a long
 * one still learns every price.  The counts change only with agreed
 * outcomes (timed_lower after each agreement, timed_note_run after each
 * run), in call order, so they are identical on every rank, as the
 * selector's input must be. */
#ifndef SPARCML_TIMED_H
#define SPARCML_TIMED_H

#include <mpi.h>
#include <stdint.h>

#include "alg/algorithms.h"

enum { TIMED_SLOTS = 4, TIMED_BANDS = 8, TIMED_TRIAL_SHARE = 4, TIMED_TRIAL_CALLS = 3 };

/* A rank's own timed multiples of the last few kinds, counts and types,
 * lowered by its runs and by each agreement for them.  The sparse
 * algorithms' per density band (timed_band), the dense one's and the
 * vendor route's (each an allreduce of every value) once.  `ran` and `growths`: what the
 * latest call of the key ran, and the pools' growths when it ended (a run
 * is timed only after one of the same route, with no pool grown
 * since: the first touch of a pool's pages is no part of an algorithm's
 * speed). */
typedef struct timed_key {
    const void *kind; /* the kind of call (core/op.h) */
    MPI_Count count;
    int vtype;
} timed_key;

typedef struct timed_table {
    struct timed_slot {
        timed_key key;
        uint64_t ppm[TIMED_BANDS][COST_ALGORITHMS]; /* [band][the dense row]: unused */
        uint64_t dense_ppm, vendor_ppm;
        cost_route ran;
        uint64_t growths;
        /* The rationing: runs noted, trial calls among them, the trial
         * under way (SPARCML_ALG_AUTO: none) and its calls so far; the
         * routes the latest agreement carried a multiple of (bits),
         * for the run that follows it (`agreed`: 0 once that run is noted,
         * or where the call had no agreement). */
        uint64_t calls, trials;
        cost_route trying;
        int tried;
        unsigned known;
        int agreed;
    } slot[TIMED_SLOTS];
    int next;
} timed_table;

/* What the rationing lets a call do (select_timed.may_try, trying). */
typedef struct timed_trial {
    int may_start;            /* a trial may start */
    cost_route trying; /* the route of the trial under way, or SPARCML_ALG_AUTO */
} timed_trial;

/* Whether a trial of TIMED_TRIAL_CALLS calls may start after `trials`
 * trial calls in a key's `calls` calls, counting the one that would start
 * it: the key's first always, a later one where the trial calls then stay
 * at most 1 + calls / TIMED_TRIAL_SHARE (so at every call they are at most
 * the larger of TIMED_TRIAL_CALLS and that). */
int timed_may_start(uint64_t calls, uint64_t trials);

/* This rank's multiples for `key` in the band of its own input (nnz of
 * dim entries) into ppm[] (0: never timed), for its agreement record. */
void timed_lookup(timed_table *table, timed_key key, uint64_t dim, uint64_t nnz, uint64_t ppm[COST_ROUTES]);

/* The agreed record's multiples (the fastest any rank saw) into the key's
 * slot, in the band of the agreed largest input; returns what the
 * rationing lets the call try: the trial under way until it had its
 * TIMED_TRIAL_CALLS calls, whatever multiple its route carries by then. */
timed_trial timed_lower(timed_table *table, timed_key key, uint64_t dim, uint64_t k_max,
                        const uint64_t agreed[COST_ROUTES]);

/* A run of `route` on this rank that took `seconds` where the model
 * priced it at `price`: it lowers the key's multiple if the key's previous
 * run was of the same route and no pool grew since (growths: the
 * context's pool growths when the call began and when it ended).  It
 * counts the call, as a trial call where it runs the trial under way's
 * route or, after an agreement (timed_lower), where that carried some
 * multiple but none of the route's. */
typedef struct timed_run {
    timed_key key;
    uint64_t dim, k_max;
    cost_route route;
    double seconds, price;
    uint64_t growths_before, growths_after;
} timed_run;
void timed_note_run(timed_table *table, const timed_run *run);

/* The density band the sparse algorithms' timed multiples are kept in for
 * k entries of dim: 0 above a quarter of dim, b above dim / 4^(b+1) and
 * up to dim / 4^b (rounded down at each step), TIMED_BANDS - 1 all below
 * (and no entries). */
int timed_band(uint64_t dim, uint64_t k);

#endif
