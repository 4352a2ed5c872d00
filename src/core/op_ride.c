/* op_ride.c -- the agreement stage, and the data riding on it (op.h).
 *
 * Every rank's agreement record travels along an algorithm's messages, in
 * one of two kinds of ride (alg/algorithms.h, alg_ride): the whole
 * exchange of the algorithm that rides so, or the first phase of one that
 * rides its first phase, where the communicator's latest call chose one.
 * Where the memo predicts that algorithm for this call and the pools every
 * rank is known to hold cover it, the data rides in the same messages, and
 * the exchange or the phase is done by the time the records have met
 * (op_piggyback decides, op_rode and op_resume go on after the verdict;
 * op_scratch_ahead reserves for the next call).  This file speaks of the
 * two kinds of ride only: which algorithm rides how, in how many chunks,
 * and from where it resumes is what its row in the table says
 * (alg/algorithms.h: ride, chunks, ride_phase, resume), and what the
 * records add to the pools it takes (ride_scratch). */
#include "config.h"

#include <string.h>

#include "alg/algorithms.h"
#include "alg/scratch.h"
#include "core/memo.h"
#include "core/op.h"

/* A piggybacked call takes inputs of up to twice the memo's k_max (room
 * for inputs that vary). */
static uint64_t piggyback_cap(uint64_t dim, uint64_t k_max)
{
    return k_max < dim / 2 ? 2 * k_max : dim;
}

/* The most entries a piggybacked sum can have on P ranks: each input
 * within the cap, or else absent (declined). */
static uint64_t piggyback_union(uint64_t P, uint64_t dim, uint64_t cap)
{
    return cap < dim / P ? P * cap : dim;
}

/* The algorithm whose first phase this call's agreement rides on (the
 * memo's latest call's, where it rides its first phase: memo.h), or
 * SPARCML_ALG_AUTO: the whole exchange.  From agreed history and
 * call-scoped settings only: every rank takes the same exchange, whatever
 * its arguments. */
static sparcml_algorithm phase_history(const sparcml_op *op)
{
    sparcml_algorithm alg = op->set->piggyback ? op_policy_of(op->c.ctx)->memo.latest.alg : SPARCML_ALG_AUTO;
    return sparcml_algorithms[alg]->ride == ALG_RIDES_PHASE ? alg : SPARCML_ALG_AUTO;
}

/* The chunks per round of a piggybacked whole exchange after a call of
 * dimension dim and largest input k_max that chose it with `chunks`
 * (select_pipeline_chunks): those, or 0 where a chunk could go dense (a
 * range stream holds a sparse part of the whole dimension: stream_range),
 * which a sum within piggyback_union may; then no data rides. */
static int ride_chunks(const sparcml_ctx *ctx, uint64_t dim, int vtype, uint64_t k_max, int chunks)
{
    if (chunks <= 1) return 1;
    return sparcml_prefers_dense(dim, vtype, piggyback_union((uint64_t)ctx->size, dim, piggyback_cap(dim, k_max)))
               ? 0 : chunks;
}

/* The chunks per round of the whole exchange, as phase_history: the memo's
 * latest call's where it ran pipelined and its data may ride in them
 * (ride_chunks), else 1 (whole messages). */
static int exchange_history(const sparcml_op *op)
{
    const memo_latest *l = &op_policy_of(op->c.ctx)->memo.latest;
    int chunks;
    if (!op->set->piggyback || sparcml_algorithms[l->alg]->ride != ALG_RIDES_EXCHANGE) return 1;
    chunks = ride_chunks(op->c.ctx, l->dim, l->vtype, l->k_max, l->chunks);
    return chunks ? chunks : 1;
}

/* The agreement stage: every rank's record travels along the whole exchange
 * (in the latest call's chunks per round where it ran in chunks:
 * exchange_history), or, where the communicator's latest call was a tagged
 * or transparent one that chose an algorithm riding its first phase (the
 * memo, memo.h), along that phase, in which every rank sends a part to
 * every other: each message carries its sender's record, so every rank
 * holds all P records at the end.  Without piggybacking, streams are absent
 * and the messages are records only (one small allreduce; on a first phase
 * one latency, with P-1 messages per rank).  With it, each rank's stream
 * comes along and the algorithm's exchange is done in the same messages,
 * saving the agreement's latencies: the prediction that it would be chosen
 * comes from the memo, identical on all ranks (after a first phase the
 * algorithm runs the rest of its schedule after the verdict: phase_resume).
 * If a rank's input is invalid, its stream is absent and the records tell
 * every rank at the end; if ranks predicted differently (an erroneous
 * program), they still exchange the same messages, and the records say so.
 * A piggybacked exchange allocates nothing: it runs only where the pools
 * every rank is known to hold cover it (the call before reserved them:
 * op_scratch_ahead), and a rank whose input is beyond that declines -- its
 * stream stays back, so every rank's sum is absent, and the records tell
 * all ranks to run the call after the agreement instead.  No rank's choice
 * depends on its own memory, so none can fail alone.
 *
 * agree_begin prepares the call (and returns the input it hides while
 * records only travel), agree_end reads the verdict. */
static sv agree_begin(sparcml_call *c, sparcml_local *local, agree_record *record, agree_record *own,
                      call_rider *rider)
{
    const op_policy *pol = op_policy_of(c->ctx);
    sv input = c->input;
    local->union_part = pol->union_pending ? pol->union_part : 0;
    agree_record_init(record, c->ctx->rank, local);
    if (own) *own = *record;
    *rider = agree_rider(record, own);
    c->rider = rider;
    c->pending = sv_absent();
    if (!local->piggyback || local->declined || local->reason != SPARCML_R_OK) c->input = sv_absent();
    c->ctx->sealed = local->piggyback;
    return input;
}

static void agree_end(sparcml_call *c, sv input, const agree_record *record, sparcml_agreed *agreed)
{
    c->rider = NULL;
    c->ctx->sealed = 0;
    c->input = input;
    agree_record_read(record, agreed);
    if (agreed->reason == SPARCML_R_OK) op_learn_pending(c->ctx, agreed);
}
static int op_agreed(sched *s)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    const sparcml_agreed *a = &op->agreed;
    agree_end(c, op->input, &op->record, &op->agreed);
    if (op->agreed.reason != SPARCML_R_OK) {
        if (op->ride.piggybacked) stats_record_piggybacked_failure(op->rank);
        return op_fail(s, op->agreed.reason, op->agreed.reason_rank,
                       op->local.reason == op->agreed.reason ? op->detail : NULL);
    }
    c->k_max = op->agreed.k_max;
    if (op_timing(op))
        op->trial = timed_lower(&op_policy_of(c->ctx)->timed, op_timed_key(op), c->dim, a->k_max, a->timed_ppm);
    return op->agreed_then(s);
}

int op_agree(sched *s, sched_step then)
{
    sparcml_op *op = op_of(s);
    op->local.settings_hash = op->set->hash;
    memset(op->local.timed_ppm, 0, sizeof op->local.timed_ppm);
    if (op_timing(op)) timed_lookup(&op_policy_of(op->c.ctx)->timed, op_timed_key(op), op->c.dim, op->local.nnz,
                                    op->local.timed_ppm);
    op->t_run = PMPI_Wtime(); /* where the data rides on the agreement */
    op->phase = phase_history(op);
    op->ride.carrier = op->phase ? op->phase : sparcml_exchange_algorithm();
    op->plan.pipeline_chunks = op->phase ? 1 : exchange_history(op);
    op->input = agree_begin(&op->c, &op->local, &op->record, op->phase ? &op->own : NULL, &op->rider);
    op->agreed_then = then;
    if (op->phase) return sparcml_algorithms[op->phase]->ride_phase(s, op_agreed);
    s->then = op_agreed;
    return sparcml_algorithms[sparcml_exchange_algorithm()]->first(s);
}
/* The memo's algorithm ran its first phase within the agreement, and every
 * rank's data came along: the rest of its schedule follows on the pools
 * reserved for it (reserving now would move the sums).  Its restriction
 * holds (the memo's call had the same count and dimension), and the pools
 * hold what the rest needs for inputs up to the cap; were either not so,
 * every rank alike would drop the sums and run the call as any other: the
 * kind's step after the agreement, as for a call that declined. */
static int phase_resume(sched *s, const sparcml_problem *p, sched_step then)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    uint64_t need[OP_POOLS] = {0};
    op->alg = op->phase;
    op_plan_exchange(op, p); /* the chunks: for the memo (memo_note) */
    sparcml_algorithms[op->alg]->scratch(c, p, need);
    if (sparcml_algorithm_restriction(op->alg, p) == SPARCML_R_OK && op_pools_hold(c->ctx, need)) {
        s->then = then;
        return op_algorithm(s);
    }
    op->ride.declined = 1;
    op->ride.piggybacked = 0;
    return op->agreed_then(s);
}

int op_rode(sparcml_op *op)
{
    if (op->ride.piggybacked && !op->agreed.declined) return 1;
    op->ride.declined |= op->ride.piggybacked;
    op->ride.piggybacked = 0; /* the call runs as any other */
    return 0;
}

int op_resume(sched *s, const sparcml_problem *p, sched_step then)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    int rc;
    if (op->phase) return phase_resume(s, p, then);
    /* The exchange algorithm ran in the exchange's chunks (the records
     * rode along); the agreed problem's chunk count tells the memo in how
     * many the next call's exchange runs. */
    op->alg = sparcml_exchange_algorithm();
    op_plan_exchange(op, p);
    /* Absent only if some rank failed, which the records would say. */
    if (sv_is_absent(&c->pending)) return call_fail(c, SPARCML_R_INTERNAL);
    rc = call_deliver(c, &c->pending); /* a result that does not fit: for `then` to report */
    return rc == MPI_SUCCESS ? then(s) : rc;
}

/* What a piggybacked run of `alg` may ask of the pools: its scratch and
 * what the records riding on it add (its row's ride_scratch), for the
 * whole exchange in `chunks` per round or its first phase, of dimension
 * `dim` and inputs of up to `cap` entries -- from agreed numbers and
 * call-scoped settings, the same on every rank. */
static void piggyback_scratch(const sparcml_call *c, sparcml_algorithm alg, uint64_t dim, uint64_t cap, int chunks,
                              uint64_t need[OP_POOLS])
{
    sparcml_agreed guess = {.k_max = cap, .k_sum = piggyback_union((uint64_t)c->ctx->size, dim, cap)};
    sparcml_call whole = *c;
    alg_plan plan = *c->plan;
    sparcml_problem p;
    whole.dim = dim;
    whole.plan = &plan;
    plan.pipeline_chunks = chunks;
    p = op_call_problem(&whole, &guess);
    sparcml_algorithms[alg]->scratch(&whole, &p, need);
    sparcml_algorithms[alg]->ride_scratch(&whole, &p, sizeof(agree_record), need);
}

/* A call the memo will keep for an algorithm that rides (the whole exchange
 * or its first phase) reserves, beside its own scratch, what the next call
 * of its count may ask of the pools piggybacked: so the next call
 * piggybacks on pools every rank is known to hold, and nobody allocates
 * while the records travel. */
void op_scratch_ahead(const sparcml_op *op, const sparcml_problem *p, uint64_t need[OP_POOLS])
{
    uint64_t next[OP_POOLS] = {0};
    sparcml_algorithm kept = memo_keeps(op->alg, op->plan.pipeline_chunks, op_data_rides(op));
    alg_ride ride = sparcml_algorithms[kept]->ride;
    int chunks = ride == ALG_RIDES_EXCHANGE
                     ? ride_chunks(op->c.ctx, p->dim, p->vtype, p->k_max, op->plan.pipeline_chunks) : 1;
    if (!op->set->piggyback || ride == ALG_RIDES_NOT || !chunks) return;
    piggyback_scratch(&op->c, kept, p->dim, piggyback_cap(p->dim, p->k_max), chunks, next);
    for (int i = 0; i < OP_POOLS; i++) scratch_need(need, i, next[i]);
}

/* Decided when the call runs, not when it is started: the memo and the
 * agreed capacities are what the communicator's previous calls left, the
 * same on every rank only once they have all completed.  The data rides on
 * `alg`'s exchange where `hit` (from the memo) and the pools every rank is
 * known to hold allow it for calls of dimension `dim` and up to `k_max`
 * entries (the whole exchange in `chunks` per round); a rank whose input is
 * beyond the reservation declines (agree_begin). */
static void piggyback_decide(sparcml_op *op, sparcml_algorithm alg, int hit, uint64_t dim, uint64_t k_max,
                             int chunks)
{
    sparcml_call *c = &op->c;
    uint64_t need[OP_POOLS] = {0};
    if (hit) piggyback_scratch(c, alg, dim, piggyback_cap(dim, k_max), chunks, need);
    op->local.piggyback = hit && op_pools_hold(c->ctx, need);
    op->ride.piggybacked = op->local.piggyback;
    if (op->ride.piggybacked && op->local.reason == SPARCML_R_OK)
        op->local.declined = c->input.dim != dim || c->input.nnz > piggyback_cap(dim, k_max);
}

void op_piggyback(sparcml_op *op)
{
    const sparcml_call *c = &op->c;
    const sparcml_memo *memo = &op_policy_of(c->ctx)->memo;
    uint64_t count = c->recv_bytes / SPARCML_WORD_BYTES, dim = 0, k_max = 0;
    sparcml_algorithm alg = phase_history(op);
    int chunks = alg == SPARCML_ALG_AUTO ? exchange_history(op) : 1, hit;
    if (alg == SPARCML_ALG_AUTO && chunks == 1) {
        alg = sparcml_exchange_algorithm();
        hit = op->set->piggyback && memo_hit(memo, count, c->vtype, &dim, &k_max);
    } else {
        /* The latest call's ride (its first phase, or the whole exchange in
         * chunks): where it had this count and value type, or, in chunks,
         * where the slots keep the pair for whole messages and its chunks
         * stay sparse (chunks add the same bits: a program that alternates
         * a pipelined count with another keeps the other's data riding); in
         * chunks never quantized (a pipelined run has no quantizer). */
        alg = alg == SPARCML_ALG_AUTO ? sparcml_exchange_algorithm() : alg;
        hit = memo->latest.count == count && memo->latest.vtype == c->vtype;
        dim = memo->latest.dim;
        k_max = memo->latest.k_max;
        if (!hit && chunks > 1 && memo_hit(memo, count, c->vtype, &dim, &k_max))
            hit = ride_chunks(c->ctx, dim, c->vtype, k_max, chunks) != 0;
        hit &= chunks == 1 || !c->q.bits;
    }
    piggyback_decide(op, alg, hit, dim, k_max, chunks);
}

