/* call.h -- one allreduce as the algorithms see it.
 *
 * The op (core/op.c) validates the input, runs the agreement step and
 * fills in a sparcml_call; an algorithm computes the sum into recvbuf and
 * records what it sent.  It reports a failure of the call one way,
 * call_fail (below); a failure every rank detects identically (the result
 * does not fit recvbuf) ends the algorithm on every rank at the same
 * step, never by leaving the protocol early, so no rank is left
 * waiting. */
#ifndef SPARCML_CALL_H
#define SPARCML_CALL_H

#include <mpi.h>
#include <stdint.h>

#include "kernel/qsgd.h"
#include "kernel/stream.h"
#include "runtime/comm_ctx.h"

/* A record that rides ahead of every message of a schedule (the
 * agreement's, core/agree.h): `bytes` long, a multiple of 8; each received
 * one is merged into it (complete: the sender's record already combines
 * every rank's and replaces this one).  A message carries `own` where that
 * is set (an exchange in which every rank hears from every other once:
 * the combination so far would count ranks twice), else the combination.
 * `settled` reads a record that combines every rank's: does it let the
 * call deliver its result? */
typedef struct call_rider {
    void *record;
    const void *own;
    size_t bytes;
    void (*merge)(void *record, const void *in, int complete);
    int (*settled)(const void *record);
} call_rider;

/* The algorithms' own plan of the call (alg/plan.h): opaque here, the
 * runtime never reads it. */
struct alg_plan;

typedef struct sparcml_call {
    sparcml_ctx *ctx;
    sv input;            /* validated; lives in recvbuf under MPI_IN_PLACE */
    void *recvbuf;
    uint64_t recv_bytes; /* capacity of recvbuf: count words, equal on all ranks */
    uint64_t dim;
    int vtype;
    uint64_t k_max;      /* the largest input of any rank (agreed) */
    /* The wire's encoding: the runtime quantizes every message it sends and
     * decodes every one it receives (runtime/p2p.h), whichever algorithm
     * posts it, so these are the call's, not an algorithm's.  q.bits == 0:
     * no quantization (always so for integers); q_sparse: the values of
     * sparse messages too. */
    qsgd_params q;
    int q_sparse;
    /* The rank quantized its input itself (compression): the encoded block
     * (qsgd_encode_block, parameters input_q) its values were decoded
     * from, so that parts of the input travel as codes without further
     * loss (qsgd_encode_on_grid, in p2p_encode: a form of the wire too);
     * NULL otherwise. */
    const void *input_block;
    qsgd_params input_q;
    struct alg_plan *plan; /* how the algorithms run the call: core fills it in */
    /* filled in by the algorithm */
    /* What this rank hands to MPI for the call, from its agreement on
     * (sparcml(7), STATISTICS): messages, vendor collectives at a
     * bandwidth-optimal share (runtime/schedule.c). */
    uint64_t bytes_sent;
    uint64_t result_nnz;
    int result_dense;
    int reason;          /* enum sparcml_reason: call_fail's */
    int tag_offset;      /* TAG_KINDS * (the call's sequence number % TAG_CALLS) */
    /* While a rider is set, every message carries its record ahead of the
     * stream (absent streams send the record alone, runtime/p2p.c; a
     * pipelined message, in its first chunk) and the result is kept in
     * `pending` instead of being delivered (call_deliver): only the
     * complete record says whether it may be.  The algorithms do not read
     * its record: they ask call_may_write_result. */
    const call_rider *rider;
    sv pending;
} sparcml_call;


/* A call's tags, only ever used on the private duplicate communicator:
 * TAG_KINDS of them, which the algorithms name (alg/plan.h), each offset
 * by the call's sequence number on the communicator (modulo TAG_CALLS),
 * so the messages of consecutive calls never match each other's
 * receives. */
enum { TAG_KINDS = 6, TAG_CALLS = 4096 };
_Static_assert(TAG_KINDS * TAG_CALLS - 1 <= 32767, "every tag stays within the least MPI_TAG_UB MPI allows");

/* Copy the final result into recvbuf in the format the size rule gives it
 * (or set reason when it does not fit); while a rider is set, only keep it
 * in c->pending. */
int call_deliver(sparcml_call *c, const sv *result);

/* How an algorithm reports a failure of the call, the one way: a step
 * returns call_fail(c, reason).  SPARCML_R_CAPACITY (the result does not
 * fit recvbuf) every rank finds alike at the same step: the step names no
 * next one, the algorithm ends there, and the call's conclusion fails the
 * call on every rank.  Any other reason (a pool that cannot grow within
 * an algorithm, an invariant that does not hold) this rank meets alone:
 * its schedule stops at once (the returned code), and the call fails on
 * this rank with that reason.  An MPI function's failure is returned as
 * its code, nothing else. */
static inline int call_fail(sparcml_call *c, int reason)
{
    c->reason = reason;
    return reason == SPARCML_R_CAPACITY ? MPI_SUCCESS : MPI_ERR_OTHER;
}

/* Does a result of `bytes` fit recvbuf?  If not, call_fail(c,
 * SPARCML_R_CAPACITY) (on every rank: all know the same sizes). */
static inline int call_result_fits(sparcml_call *c, uint64_t bytes)
{
    if (bytes <= c->recv_bytes) return 1;
    call_fail(c, SPARCML_R_CAPACITY);
    return 0;
}

/* May an algorithm write its final result into recvbuf?  It asks once it
 * has heard from every rank, so that the rider's record, while the
 * agreement rides on its messages, combines every rank's: recvbuf stays
 * untouched until the records say the call succeeds. */
static inline int call_may_write_result(const sparcml_call *c)
{
    return !c->rider || c->rider->settled(c->rider->record);
}

/* A pool that cannot grow within an algorithm.  The op reserves every
 * algorithm's scratch before it starts (alg/scratch.h), so this happens
 * only where a bound is wrong; the call then fails with MPI_ERR_NO_MEM on
 * this rank. */
static inline int call_nomem(sparcml_call *c) { return call_fail(c, SPARCML_R_NOMEM); }

#endif
