/* timed.h -- how fast the algorithms run here.
 *
 * The model prices messages and merges as the calibration measured them,
 * small and in the cache; what the algorithms really take on a machine
 * (the vendor's allreduce of large buffers, a dense-size split exchange
 * through memory) can be several times that.  So unless the user set the
 * whole model, each blocking call times the algorithm it ran on this rank
 * (timed_note_run), in millionths of the price the selector gave it; each
 * rank keeps its fastest per kind, count and value type (a timed_table, in
 * the communicator's policy), and the next agreement for them carries the
 * fastest any rank saw (timed_lookup before it, timed_lower after): the
 * selector prices every algorithm at least at that, alike on
 * every rank (sparcml_problem.timed_over).  Which calls time is the
 * caller's rule (core/op.c, op_timing). */
#ifndef SPARCML_TIMED_H
#define SPARCML_TIMED_H

#include <mpi.h>
#include <stdint.h>

#include "alg/algorithms.h"

enum { TIMED_SLOTS = 4, TIMED_BANDS = 8 };

/* A rank's own timed multiples of the last few kinds, counts and types,
 * lowered by its runs and by each agreement for them.  The sparse
 * algorithms' per density band (timed_band), the dense one's (the
 * vendor's allreduce of every value) once.  `ran` and `growths`: what the
 * latest call of the key ran, and the pools' growths when it ended (a run
 * is timed only after one of the same algorithm, with no pool grown
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
        uint64_t dense_ppm;
        sparcml_algorithm ran;
        uint64_t growths;
    } slot[TIMED_SLOTS];
    int next;
} timed_table;

/* This rank's multiples for `key` in the band of its own input (nnz of
 * dim entries) into ppm[] (0: never timed), for its agreement record. */
void timed_lookup(timed_table *table, timed_key key, uint64_t dim, uint64_t nnz, uint64_t ppm[COST_ALGORITHMS]);

/* The agreed record's multiples (the fastest any rank saw) into the key's
 * slot, in the band of the agreed largest input. */
void timed_lower(timed_table *table, timed_key key, uint64_t dim, uint64_t k_max,
                 const uint64_t agreed[COST_ALGORITHMS]);

/* A run of `alg` on this rank that took `seconds` where the model priced
 * it at `price`: it lowers the key's multiple if the key's previous run
 * was of the same algorithm and no pool grew since (growths: the
 * context's pool growths when the call began and when it ended). */
typedef struct timed_run {
    timed_key key;
    uint64_t dim, k_max;
    sparcml_algorithm alg;
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
