/* agree.h -- the agreement record every allreduce of the library combines.
 *
 * Each rank describes what it knows locally -- whether its arguments are
 * valid, dim, value type, count, nnz, a hash of its settings, whether
 * it piggybacks its data on the agreement -- in a fixed record.  The
 * records of all ranks are combined (maxima, minima and sums) riding on an
 * algorithm's messages: its whole exchange, or a first phase in which
 * every rank sends a part to every other (the algorithm table's ride
 * kinds; core/op_ride.c says which, and when data comes along).
 * From then on every rank decides from the same numbers, so all pick the
 * same algorithm, and a failure on any rank is known to all ranks together:
 * nobody is left waiting in an exchange the others abandoned. */
#ifndef SPARCML_AGREE_H
#define SPARCML_AGREE_H

#include <mpi.h>
#include <stdint.h>

#include "alg/cost_model.h"
#include "runtime/call.h"

typedef struct sparcml_local {
    int reason; /* enum sparcml_reason found by local validation */
    uint64_t dim;
    int vtype;
    MPI_Count count;
    uint64_t nnz;
    uint64_t settings_hash;
    int piggyback; /* this rank sends its data along with the record */
    /* ... or it cannot this time (its input is beyond what the pools were
     * reserved for): its data stays back, and every rank runs the call
     * after the agreement (core/op.c). */
    int declined;
    /* Nonzero values in this rank's 1/P of the previous call's result, when
     * that result was dense (0 otherwise): their sum is the previous union
     * size, for the selector's overlap estimate (core/op.c). */
    uint64_t union_part;
    /* Compressed calls (core/compress.c): this rank keeps no error feedback
     * for the buffer (its memory cap), so the call is summed exactly; and
     * how many calls its feedback for the buffer has seen (the largest
     * names the CLT-k leader). */
    int exact;
    uint64_t sequence;
    /* This rank's fastest run of each route (alg/cost_model.h: each
     * algorithm by id, the vendor's) on calls of this kind, count and type
     * so far, in millionths of its price (0: none timed; core/timed.h). */
    uint64_t timed_ppm[COST_ROUTES];
} sparcml_local;

typedef struct sparcml_agreed {
    int reason;      /* first failure found on any rank (or across ranks) */
    int reason_rank; /* the rank that reported it, -1 for a mismatch */
    uint64_t dim;
    int vtype;
    MPI_Count count;
    uint64_t k_max, k_sum;
    uint64_t union_sum; /* sum of union_part */
    int exact;          /* some rank's */
    uint64_t sequence;  /* the largest */
    int declined;       /* some rank's */
    uint64_t timed_ppm[COST_ROUTES]; /* the fastest any rank timed (0: none) */
} sparcml_agreed;

/* Seventeen fields, and one per route (agree.c). */
enum { AGREE_FIELDS = 17 + (COST_ROUTES - 1) };

/* The record on the wire: 8 bytes a field, so that a stream can follow
 * it in the same message. */
typedef struct agree_record {
    int64_t v[AGREE_FIELDS];
} agree_record;

/* This rank's record. */
void agree_record_init(agree_record *r, int rank, const sparcml_local *l);

/* The record that combines no rank's: merging into it copies. */
void agree_record_clear(agree_record *r);

/* inout = combination of in and inout (commutative and associative). */
void agree_record_merge(agree_record *inout, const agree_record *in);

/* The verdict of a record that combines every rank's. */
void agree_record_read(const agree_record *r, sparcml_agreed *out);

/* The rider (runtime/call.h) that carries r on a schedule's messages and
 * merges what arrives into it; with own, the messages carry own (this
 * rank's record alone: every rank hears from every other once). */
call_rider agree_rider(agree_record *r, const agree_record *own);

#endif
