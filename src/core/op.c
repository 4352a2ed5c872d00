/* op.c -- an allreduce of the library: validate, agree, select, run, report.
 *
 * The order matters for "never silently wrong":
 *  1. local checks that need no communication and are the same on every
 *     rank of the communicator (inter-communicator) fail at once;
 *  2. the private duplicate is fetched (created, collectively, on first use);
 *  3. each rank validates its own arguments and stream, and the agreement
 *     step shares the verdict: if any rank failed, all fail together;
 *  4. the algorithm is selected from agreed numbers only, then run -- or,
 *     when the memo predicts recursive doubling, it already ran within the
 *     agreement step, and its result is delivered only after the verdict;
 *     when it predicts a split algorithm, its reduce-scatter did, and the
 *     rest of it runs after the verdict;
 *  5. failures the algorithm detects (result too large for recvbuf) are
 *     identical on all ranks by construction. */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "alg/algorithms.h"
#include "alg/scratch.h"
#include "alg/split_phases.h"
#include "base/errors.h"
#include "base/mpi_flavour.h"
#include "base/placement.h"
#include "core/op.h"
#include "core/stats.h"
#include "runtime/progress.h"

/* Validate this rank's arguments; on failure describe it in detail. */
static int validate_local(const void *sendbuf, void *recvbuf, MPI_Count count, int vtype,
                          MPI_Op op, sv *input, char *detail, size_t detail_len)
{
    const void *in = op_input(sendbuf, recvbuf);
    uint64_t where = 0;
    int reason;
    if (op != MPI_SUM) return SPARCML_R_OP;
    if (count < 0) return SPARCML_R_NEGATIVE_COUNT;
    if ((reason = op_buffers_reason(sendbuf, recvbuf)) != SPARCML_R_OK) return reason;
    if ((uintptr_t)recvbuf % SPARCML_WORD_BYTES) return SPARCML_R_UNALIGNED;
    if ((uint64_t)count > UINT64_MAX / SPARCML_WORD_BYTES) return SPARCML_R_STREAM_OVERFLOW;
    reason = stream_parse(in, (uint64_t)count * SPARCML_WORD_BYTES, vtype, input, &where);
    switch (reason) {
    case SPARCML_R_OK: break;
    case SPARCML_R_INDEX_GE_DIM: case SPARCML_R_UNSORTED: case SPARCML_R_DUPLICATE:
        snprintf(detail, detail_len, "%s entry %llu (index %llu, dim %llu)",
                 sendbuf == MPI_IN_PLACE ? "in-place recvbuf" : "sendbuf",
                 (unsigned long long)where,
                 (unsigned long long)sparcml_get_index(input->idx, input->iw, where),
                 (unsigned long long)input->dim);
        break;
    case SPARCML_R_VALUE_TYPE_TAG:
        snprintf(detail, detail_len, "datatype tagged %s", sparcml_value_type_name(vtype));
        break;
    case SPARCML_R_STREAM_OVERFLOW:
        snprintf(detail, detail_len, "stream of %llu bytes, count %lld words",
                 (unsigned long long)stream_bytes(input), (long long)count);
        break;
    default: break;
    }
    return reason;
}

/* The selector's overlap estimate follows the size of each result's union
 * of indices, a number every rank knows identically.  A sparse result
 * carries it; of a dense one each rank counts the nonzeros of its 1/P of
 * the result, and the next call's agreement step adds them up (without
 * this, a dense result would leave the estimate where it was, and a choice
 * made on a wrong estimate could never be corrected). */
static void learn(sparcml_ctx *ctx, const sparcml_problem *p, const sparcml_call *c)
{
    op_policy *pol = op_policy_of(ctx);
    sv result;
    pol->union_pending = c->result_dense;
    if (!c->result_dense) {
        pol->overlap = select_learn_overlap(p, c->result_nnz);
        return;
    }
    stream_split_bounds(c->dim, ctx->size, ctx->offsets);
    result = stream_view(c->recvbuf);
    pol->union_part = stream_count_nonzero(&result, ctx->offsets[ctx->rank], ctx->offsets[ctx->rank + 1]);
    pol->union_problem = *p;
}

/* The second half of learning from a dense result (see learn). */
static void learn_pending(sparcml_ctx *ctx, const sparcml_agreed *a)
{
    op_policy *pol = op_policy_of(ctx);
    if (!pol->union_pending) return;
    pol->overlap = select_learn_overlap(&pol->union_problem, a->union_sum);
    pol->union_pending = 0;
}

static void policy_init(void *extension)
{
    op_policy *pol = extension;
    pol->overlap = 1.0; /* random indices until a result says otherwise */
}

/* The communicator is being freed: its pending calls complete first. */
static void policy_freeing(sparcml_ctx *ctx)
{
    progress_drain(&ctx->pending_calls);
    feedback_table_free(&op_policy_of(ctx)->feedback);
}

int op_ctx_get(MPI_Comm comm, int blocking, sparcml_ctx **out)
{
    static const ctx_extension policy = {.bytes = sizeof(op_policy), .init = policy_init,
                                         .freeing = policy_freeing};
    return ctx_get(comm, &policy, blocking, out);
}

static sparcml_problem problem_of(const sparcml_call *c, const sparcml_agreed *a)
{
    sparcml_problem p = {
        .P = c->ctx->size,
        .dim = c->dim,
        .vtype = c->vtype,
        .k_max = a->k_max,
        .k_sum = a->k_sum,
        .dense_fits = sparcml_dense_bytes(c->dim, c->vtype) <= c->recv_bytes,
        .overlap = op_policy_of(c->ctx)->overlap,
        .qbits = c->q.bits,
        .qbucket = c->q.bucket,
        .qsparse = c->q_sparse,
        .ranks_per_core = settings_ranks_per_core(settings_get(), c->ctx->ranks_per_core),
        .one_node = c->ctx->one_node,
    };
    for (int i = 0; i < COST_ALGORITHMS; i++) p.timed_over[i] = 1e-6 * (double)a->timed_ppm[i];
    return p;
}

/* --- timing: how fast the algorithms run here ---------------------------
 *
 * The model prices messages and merges as the calibration measured them,
 * small and in the cache; what the algorithms really take on a machine
 * (the vendor's allreduce of large buffers, a dense-size split exchange
 * through memory) can be several times that.  So unless the user set the
 * whole model, each blocking call times the algorithm it ran on this rank,
 * from the start of its exchange (the agreement's, where the data rode
 * on it) to its conclusion, in millionths of the price select_costs gives
 * it; each rank keeps its fastest per kind, count and value type, and
 * the next agreement for them carries the fastest any rank saw
 * (sparcml_problem.timed_over): every rank prices alike, at least at
 * that.  A sparse algorithm's multiple is kept per density band too
 * (op_timed_band): how far its price is off depends on how much of the
 * vector its messages and merges carry (a split exchange of dense slices
 * through memory, not of a few entries), and a program's density may move
 * (a sparsification schedule) while its counts stay.  The dense
 * algorithm moves every value whatever the density: one multiple.  A
 * rank looks its band up by its own input's entries, stores by the agreed
 * largest; the agreement's minimum over ranks makes the verdict alike
 * wherever the ranks' bands differ.  A run is timed only after a run of
 * the same algorithm for the key with no pool grown since: a first run
 * pays its pools' first touch, a multiple of the run itself.
 * Non-blocking calls neither time nor use the times: their time is the
 * application's as much as the library's. */
int op_timing(const sparcml_op *op)
{
    return op->s.blocking && (op->set->cost_set & SETTINGS_SET_MODEL) != SETTINGS_SET_MODEL;
}

int op_timed_band(uint64_t dim, uint64_t k)
{
    int band = 0;
    if (k == 0) return OP_TIMED_BANDS - 1;
    while (band < OP_TIMED_BANDS - 1 && k <= dim / 4) {
        dim /= 4;
        band++;
    }
    return band;
}

/* The multiple of `alg` in `band`: the dense algorithm's in every band. */
static uint64_t *timed_ppm(struct op_timed *t, int band, sparcml_algorithm alg)
{
    return sparcml_algorithms[alg]->sparse ? &t->ppm[band][alg] : &t->dense_ppm;
}

static struct op_timed *timed_slot(op_policy *pol, const sparcml_op *op, int add)
{
    struct op_timed *t;
    for (int i = 0; i < OP_TIMED_SLOTS; i++) {
        t = &pol->timed[i];
        if (t->kind == op->kind && t->count == op->count && t->vtype == op->c.vtype) return t;
    }
    if (!add) return NULL;
    t = &pol->timed[pol->timed_next];
    pol->timed_next = (pol->timed_next + 1) % OP_TIMED_SLOTS;
    *t = (struct op_timed){.kind = op->kind, .count = op->count, .vtype = op->c.vtype, .ran = SPARCML_ALG_AUTO};
    return t;
}

static void lower(uint64_t *ppm, uint64_t to)
{
    if (to && (!*ppm || to < *ppm)) *ppm = to;
}

/* Into this rank's record, before the agreement: the band of its own
 * input. */
static void timed_local(sparcml_op *op)
{
    struct op_timed *t = op_timing(op) ? timed_slot(op_policy_of(op->c.ctx), op, 0) : NULL;
    int band = op_timed_band(op->c.dim, op->local.nnz);
    for (int a = 0; a < COST_ALGORITHMS; a++)
        op->local.timed_ppm[a] = t && a != SPARCML_ALG_AUTO ? *timed_ppm(t, band, a) : 0;
}

/* From the agreed record: the fastest any rank saw, in the agreed band. */
static void timed_agreed(sparcml_op *op)
{
    struct op_timed *t;
    uint64_t any = 0;
    int band = op_timed_band(op->c.dim, op->agreed.k_max);
    for (int a = 0; a < COST_ALGORITHMS; a++) any |= op->agreed.timed_ppm[a];
    if (!op_timing(op) || !any) return;
    t = timed_slot(op_policy_of(op->c.ctx), op, 1);
    for (int a = SPARCML_ALG_AUTO + 1; a < COST_ALGORITHMS; a++)
        lower(timed_ppm(t, band, a), op->agreed.timed_ppm[a]);
}

void op_time_run(sparcml_op *op, sparcml_algorithm alg, double seconds, double price)
{
    sparcml_ctx *ctx = op->c.ctx;
    struct op_timed *t = timed_slot(op_policy_of(ctx), op, 1);
    if (t->ran == alg && t->growths == op->growths && ctx->pool_growths == op->growths && price > 0) {
        double ppm = 1e6 * seconds / price;
        lower(timed_ppm(t, op_timed_band(op->c.dim, op->c.k_max), alg),
              ppm >= 0x1p62 ? (uint64_t)1 << 62 : ppm < 1 ? 1 : (uint64_t)ppm);
    }
    t->ran = alg;
    t->growths = ctx->pool_growths;
}

/* What the memo keeps of a call that ran `alg` (select.h): recursive
 * doubling in whole messages after any kind of call; a split algorithm,
 * or recursive doubling pipelined, only after a call of a kind whose data
 * rides (those that reserve ahead for it: tagged and transparent;
 * compressed calls' data never rides, and records alone cost fewer
 * messages on an exchange of one message per round). */
static sparcml_algorithm memo_choice(const sparcml_op *op, sparcml_algorithm alg)
{
    if (sparcml_algorithms[alg]->ride == ALG_RIDES_EXCHANGE && op->c.pipeline_chunks <= 1) return alg;
    return op->kind->scratch_ahead ? alg : SPARCML_ALG_AUTO;
}

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

/* The split algorithm whose reduce-scatter this call's agreement rides on
 * (the memo's latest call's, select.h), or SPARCML_ALG_AUTO: recursive
 * doubling's exchange.  From agreed history and call-scoped settings only:
 * every rank takes the same exchange, whatever its arguments. */
static sparcml_algorithm split_history(const sparcml_op *op)
{
    sparcml_algorithm alg = op->set->piggyback ? op_policy_of(op->c.ctx)->memo.latest.alg : SPARCML_ALG_AUTO;
    return sparcml_algorithms[alg]->ride == ALG_RIDES_PHASE ? alg : SPARCML_ALG_AUTO;
}

/* The chunks per round of a piggybacked run of recursive doubling after a
 * call of dimension dim and largest input k_max that chose it with
 * `chunks` (select_pipeline_chunks): those, or 0 where a chunk could go
 * dense (a range stream holds a sparse part of the whole dimension:
 * stream_range), which a sum within piggyback_union may; then no data
 * rides. */
static int ride_chunks(const sparcml_ctx *ctx, uint64_t dim, int vtype, uint64_t k_max, int chunks)
{
    if (chunks <= 1) return 1;
    return sparcml_prefers_dense(dim, vtype, piggyback_union((uint64_t)ctx->size, dim, piggyback_cap(dim, k_max)))
               ? 0 : chunks;
}

/* The chunks per round of recursive doubling's exchange, as split_history:
 * the memo's latest call's where it ran pipelined and its data may ride
 * in them (ride_chunks), else 1 (whole messages). */
static int doubling_history(const sparcml_op *op)
{
    const select_latest *l = &op_policy_of(op->c.ctx)->memo.latest;
    int chunks;
    if (!op->set->piggyback || sparcml_algorithms[l->alg]->ride != ALG_RIDES_EXCHANGE) return 1;
    chunks = ride_chunks(op->c.ctx, l->dim, l->vtype, l->k_max, l->chunks);
    return chunks ? chunks : 1;
}

/* Do the pools every rank is known to hold (the communicator's agreed
 * capacities) cover `need`? */
static int pools_hold(const sparcml_ctx *ctx, const uint64_t need[CTX_CAPACITIES])
{
    int held = 1;
    for (int i = 0; i < CTX_CAPACITIES; i++) held &= need[i] <= ctx->agreed_capacity[i];
    return held;
}

/* How the agreed problem's exchange runs: recursive doubling's chunks per
 * round and who gathers a split algorithm's messages. */
static void plan_exchange(sparcml_op *op, const sparcml_problem *p)
{
    op->c.pipeline_chunks = select_pipeline_chunks(op->set, p);
    op->c.gather = select_gather_plan(op->set, p);
}

/* Why the algorithm's result cannot be the call's: it does not fit
 * recvbuf (every rank alike). */
static void capacity_detail(const sparcml_op *op, sparcml_algorithm alg, char *detail, size_t len)
{
    const sparcml_call *c = &op->c;
    snprintf(detail, len, "algorithm %s%s, count %lld words (need %lld for any result)",
             sparcml_algorithm_name(alg), op->set->algorithm == SPARCML_ALG_AUTO ? "" : " (SPARCML_ALGORITHM)",
             (long long)(c->recv_bytes / SPARCML_WORD_BYTES), (long long)sparcml_capacity(c->dim, c->vtype));
}

/* After the algorithm: report a failure it found (every rank alike: call.h,
 * call_fail), or learn and count, and go on with `then`. */
static int conclude(sched *s, const sparcml_problem *p, sparcml_algorithm alg, sched_step then)
{
    sparcml_op *op = op_of(s);
    const sparcml_settings *set = op->set;
    sparcml_call *c = &op->c;
    sparcml_memo *memo = &op_policy_of(c->ctx)->memo;
    c->ctx->sealed = 0;
    if (c->reason != SPARCML_R_OK) {
        char detail[SPARCML_DETAIL_BYTES];
        capacity_detail(op, alg, detail, sizeof detail);
        return op_fail(s, c->reason, -1, detail);
    }
    if (op_timing(op)) {
        double price[SPARCML_ALG_COUNT_];
        select_costs(set, p, price);
        op_time_run(op, alg, PMPI_Wtime() - op->t_run, price[alg]);
    }
    /* A piggybacked call ran the memo's algorithm on a prediction: remember
     * what the selector makes of the agreed numbers now. */
    op->ride.selected = op->ride.piggybacked ? op->kind->select(set, p) : alg;
    select_memo_note(memo, c->recv_bytes / SPARCML_WORD_BYTES, p, memo_choice(op, op->ride.selected), c->pipeline_chunks);
    learn(c->ctx, p, c);
    c->ctx->calls++;
    stats_record(set, c, &op->ride, alg, PMPI_Wtime() - op->t0, p->timed_over);
    return then ? then(s) : MPI_SUCCESS;
}

/* The agreement stage: every rank's record travels along the schedule
 * of recursive doubling (in the latest call's chunks per round where it
 * ran pipelined: doubling_history), or, where the communicator's latest
 * call was a tagged or transparent one that chose a split algorithm (the
 * memo, select.h), along that algorithm's reduce-scatter, in which every rank
 * sends a part to every other: each message carries its sender's
 * record, so every rank holds all P records at the end.  Without
 * piggybacking, streams are absent and the messages are records only
 * (one small allreduce; on the split exchange one latency, with P-1
 * messages per rank).  With it, each rank's stream comes along and the
 * algorithm's exchange is done in the same messages, saving the
 * agreement's latencies: the prediction that it would be chosen comes
 * from the memo, identical on all ranks (a split algorithm then runs
 * the rest of its schedule after the verdict: split_resume).  If a
 * rank's input is invalid, its stream is absent and the records tell
 * every rank at the end; if ranks predicted differently (an erroneous
 * program), they still exchange the same messages, and the records say
 * so.  A piggybacked exchange allocates nothing: it runs only where the
 * pools every rank is known to hold cover it (the call before reserved
 * them: op_scratch_ahead), and a rank whose input is beyond that
 * declines -- its stream stays back, so every rank's sum is absent, and
 * the records tell all ranks to run the call after the agreement
 * instead.  No rank's choice depends on its own memory, so none can
 * fail alone.
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
    if (agreed->reason == SPARCML_R_OK) learn_pending(c->ctx, agreed);
}

qsgd_params op_qsgd_params(const sparcml_settings *s)
{
    return (qsgd_params){.bits = s->qsgd_bits, .bucket = (uint32_t)s->qsgd_bucket, .seed = s->qsgd_seed};
}

void op_quantization(sparcml_call *c, const sparcml_settings *s)
{
    /* QSGD applies to floating-point values only: integers stay exact. */
    if (c->vtype != SPARCML_FLOAT && c->vtype != SPARCML_DOUBLE) return;
    c->q = op_qsgd_params(s);
    c->q_sparse = s->qsgd_sparse;
}

int op_buffers_reason(const void *sendbuf, const void *recvbuf)
{
    if (!recvbuf || !op_input(sendbuf, recvbuf)) return SPARCML_R_NULL_BUFFER;
    return sendbuf == recvbuf ? SPARCML_R_ALIASED : SPARCML_R_OK;
}

int op_dense_qualifies(MPI_Count count, int vtype, MPI_Op op, MPI_Comm comm, uint64_t min_bytes)
{
    int inter = 0;
    if (op != MPI_SUM || count <= 0 || (uint64_t)count > SPARCML_MAX_DIM) return 0;
    if ((uint64_t)count * sparcml_value_size(vtype) < min_bytes) return 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return 0;
    return !inter;
}

int op_vendor(sched *s, sched_step then)
{
    sparcml_op *op = op_of(s);
    op->t0 = PMPI_Wtime();
    sched_next(s, then);
    return sched_vendor_allreduce(s, op->sendbuf, op->recvbuf, op->count, op->datatype, op->mop);
}

/* --- a call as one schedule: set-up, the kind's prologue, agreement,
 * the kind's choice, algorithm, conclusion.  The steps find their op
 * around their schedule. ------------------------------------------------ */

sparcml_op *op_of(sched *s)
{
    return (sparcml_op *)((char *)s - offsetof(sparcml_op, s));
}

sparcml_problem op_problem(const sparcml_op *op)
{
    return problem_of(&op->c, &op->agreed);
}

int op_conclude(sched *s, sched_step then)
{
    sparcml_problem p = op_problem(op_of(s));
    return conclude(s, &p, op_of(s)->alg, then);
}

static int op_concluded(sched *s)
{
    return op_conclude(s, NULL);
}

/* The algorithm starts on its reserved pools: from its first step, or
 * where its reduce-scatter carried the agreement, from the end of that. */
static int op_algorithm(sched *s)
{
    sparcml_op *op = op_of(s);
    if (op->ready) op->ready(op);
    op->c.ctx->sealed = 1;
    if (!op->ride.piggybacked) {
        op->t_run = PMPI_Wtime();
        return sparcml_algorithms[op->alg]->first(s);
    }
    return sparcml_algorithms[op->alg]->resume(s);
}

/* The reservation's minima: the lowest rank that could not reserve (or P),
 * and what every rank's pools hold now, which calls after this one take
 * as agreed. */
static int scratch_agreed(sched *s)
{
    sparcml_op *op = op_of(s);
    sparcml_ctx *ctx = op->c.ctx;
    char detail[SPARCML_DETAIL_BYTES];
    memcpy(ctx->agreed_capacity, op->reserved + 1, sizeof ctx->agreed_capacity);
    if (op->reserved[0] >= (uint64_t)ctx->size) return op_algorithm(s);
    snprintf(detail, sizeof detail, "the scratch of algorithm %s", sparcml_algorithm_name(op->alg));
    return op_fail(s, SPARCML_R_NOMEM, (int)op->reserved[0], detail);
}

int op_run(sched *s, const sparcml_problem *p, sched_step then)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    uint64_t need[CTX_CAPACITIES] = {0};
    int reason;
    c->chunks_run = 0;
    plan_exchange(op, p);
    op->t0 = PMPI_Wtime();
    /* A forced algorithm whose restriction rules the problem out fails on
     * every rank alike (the problem is agreed) before it touches anything. */
    reason = sparcml_algorithm_restriction(op->alg, p);
    if (reason != SPARCML_R_OK) {
        char detail[SPARCML_DETAIL_BYTES];
        capacity_detail(op, op->alg, detail, sizeof detail);
        return op_fail(s, reason, -1, detail);
    }
    s->then = then;
    /* Its scratch, from agreed numbers: where every rank's pools are known
     * to hold it (an earlier reservation's minima), nobody allocates while
     * it runs.  Else every rank reserves, and one allreduce of the lowest
     * rank that could not (or P) decides for all: no rank is ever short of
     * memory half-way through an exchange. */
    sparcml_algorithms[op->alg]->scratch(c, p, need);
    if (op->kind->scratch_ahead) op->kind->scratch_ahead(op, p, need);
    if (pools_hold(c->ctx, need)) return op_algorithm(s);
    op->reserved[0] = (uint64_t)(ctx_reserve(c->ctx, need) ? c->ctx->size : op->rank);
    ctx_capacities(c->ctx, op->reserved + 1);
    sched_next(s, scratch_agreed);
    return sched_allreduce(s, op->reserved, 1 + CTX_CAPACITIES, MPI_UINT64_T, MPI_MIN);
}

static int op_agreed(sched *s)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    agree_end(c, op->input, &op->record, &op->agreed);
    if (op->agreed.reason != SPARCML_R_OK) {
        if (op->ride.piggybacked) stats_record_piggybacked_failure(op->rank);
        return op_fail(s, op->agreed.reason, op->agreed.reason_rank,
                       op->local.reason == op->agreed.reason ? op->detail : NULL);
    }
    c->k_max = op->agreed.k_max;
    c->k_sum = op->agreed.k_sum;
    timed_agreed(op);
    return op->agreed_then(s);
}

int op_agree(sched *s, sched_step then)
{
    sparcml_op *op = op_of(s);
    op->local.settings_hash = op->set->hash;
    timed_local(op);
    op->t_run = PMPI_Wtime(); /* where the data rides on the agreement */
    op->split = split_history(op);
    op->ride.split_exchange = op->split != SPARCML_ALG_AUTO;
    op->c.pipeline_chunks = op->ride.split_exchange ? 1 : doubling_history(op);
    op->input = agree_begin(&op->c, &op->local, &op->record, op->split ? &op->own : NULL, &op->rider);
    op->agreed_then = then;
    if (op->split) return sparcml_algorithms[op->split]->ride_phase(s, op_agreed);
    s->then = op_agreed;
    return sparcml_algorithms[sparcml_exchange_algorithm()]->first(s);
}

/* A new context is set up as the first steps of its first call
 * (runtime/comm_ctx.h): its duplicate, then the ranks per core (one
 * allgather, made on every rank whatever its settings: ranks whose
 * settings differ must still meet in the agreement, which reports it). */
static int op_placed(sched *s)
{
    sparcml_op *op = op_of(s);
    int rc = ctx_setup_done(op->c.ctx);
    return rc == MPI_SUCCESS ? op->kind->begin(s) : rc;
}

static int op_duplicated(sched *s)
{
    sparcml_ctx *ctx = op_of(s)->c.ctx;
    sched_next(s, op_placed);
    return sched_allgather(s, ctx_setup_contribution(ctx), PLACEMENT_BYTES, ctx_setup_all(ctx));
}

static int op_setup(sched *s)
{
    sparcml_op *op = op_of(s);
    sparcml_ctx *ctx = op->c.ctx;
    ctx->sealed = 0; /* a call before this one may have ended in an MPI error */
    op->growths = ctx->pool_growths;
    if (ctx->ready) return op->kind->begin(s);
    sched_next(s, op_duplicated);
    return sched_request(s, &ctx->setup);
}

/* --- the tagged kind: the stream is validated at start; recursive
 * doubling, or a split algorithm's reduce-scatter, may run within the
 * agreement (piggybacked). ------------------------------------------- */

/* The memo's split algorithm ran its reduce-scatter within the agreement,
 * and every rank's data came along: the rest of its schedule follows on
 * the pools reserved for it (reserving now would move the sums).  Its
 * restriction holds (the memo's call had the same count and dimension),
 * and the pools hold what the rest needs for inputs up to the cap; were
 * either not so, every rank alike would drop the sums and run the call as
 * any other: the kind's step after the agreement, as for a call that
 * declined. */
static int split_resume(sched *s, const sparcml_problem *p, sched_step then)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    uint64_t need[CTX_CAPACITIES] = {0};
    op->alg = op->split;
    plan_exchange(op, p); /* the chunks: for the memo (memo_choice) */
    sparcml_algorithms[op->alg]->scratch(c, p, need);
    if (sparcml_algorithm_restriction(op->alg, p) == SPARCML_R_OK && pools_hold(c->ctx, need)) {
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
    if (op->split) return split_resume(s, p, then);
    /* The exchange algorithm ran in the exchange's chunks (the records
     * rode along); the agreed problem's chunk count tells the memo in how
     * many the next call's exchange runs. */
    op->alg = sparcml_exchange_algorithm();
    plan_exchange(op, p);
    /* Absent only if some rank failed, which the records would say. */
    if (sv_is_absent(&c->pending)) return call_fail(c, SPARCML_R_INTERNAL);
    rc = call_deliver(c, &c->pending); /* a result that does not fit: for `then` to report */
    return rc == MPI_SUCCESS ? then(s) : rc;
}

static int tagged_agreed(sched *s)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    sparcml_problem p;
    c->dim = op->agreed.dim;
    p = op_problem(op);
    if (op_rode(op)) return op_resume(s, &p, op_concluded);
    op->alg = op->kind->select(op->set, &p);
    return op_run(s, &p, op_concluded);
}

/* What a piggybacked run of `alg` may ask of the pools: recursive
 * doubling in `chunks` per round (a round's first chunk, or a whole
 * message, framed in POOL_FRAME) or a split algorithm (each part written
 * behind this rank's record), of dimension `dim` and inputs of up to `cap`
 * entries, every message behind a record -- from agreed numbers and
 * call-scoped settings, the same on every rank. */
static void piggyback_scratch(const sparcml_call *c, sparcml_algorithm alg, uint64_t dim, uint64_t cap, int chunks,
                              uint64_t need[CTX_CAPACITIES])
{
    uint64_t P = (uint64_t)c->ctx->size;
    sparcml_agreed guess = {.k_max = cap, .k_sum = piggyback_union(P, dim, cap)};
    sparcml_call whole = *c;
    sparcml_problem p;
    whole.dim = dim;
    whole.pipeline_chunks = chunks;
    p = problem_of(&whole, &guess);
    sparcml_algorithms[alg]->scratch(&whole, &p, need);
    need[POOL_RECV] += sizeof(agree_record);
    if (sparcml_algorithms[alg]->ride == ALG_RIDES_EXCHANGE) {
        need[POOL_FRAME] = need[POOL_RECV];
        return;
    }
    need[POOL_SEND] += P * sizeof(agree_record);
    if (p.qbits) need[POOL_QMSG] += P * sizeof(agree_record); /* quantized parts, each behind one */
}

/* A call the memo will keep for recursive doubling or a split algorithm
 * reserves, beside its own scratch, what the next call of its count may
 * ask of the pools piggybacked: so the next call piggybacks on pools every
 * rank is known to hold, and nobody allocates while the records travel. */
void op_scratch_ahead(const sparcml_op *op, const sparcml_problem *p, uint64_t need[CTX_CAPACITIES])
{
    uint64_t next[CTX_CAPACITIES] = {0};
    sparcml_algorithm kept = memo_choice(op, op->alg);
    alg_ride ride = sparcml_algorithms[kept]->ride;
    int chunks = ride == ALG_RIDES_EXCHANGE
                     ? ride_chunks(op->c.ctx, p->dim, p->vtype, p->k_max, op->c.pipeline_chunks) : 1;
    if (!op->set->piggyback || ride == ALG_RIDES_NOT || !chunks) return;
    piggyback_scratch(&op->c, kept, p->dim, piggyback_cap(p->dim, p->k_max), chunks, next);
    for (int i = 0; i < CTX_CAPACITIES; i++) scratch_need(need, i, next[i]);
}

/* Decided when the call runs, not when it is started: the memo and the
 * agreed capacities are what the communicator's previous calls left, the
 * same on every rank only once they have all completed.  The data rides on
 * `alg`'s exchange where `hit` (from the memo) and the pools every rank is
 * known to hold allow it for calls of dimension `dim` and up to `k_max`
 * entries (recursive doubling in `chunks` per round); a rank whose input
 * is beyond the reservation declines (agree_begin). */
static void piggyback_decide(sparcml_op *op, sparcml_algorithm alg, int hit, uint64_t dim, uint64_t k_max,
                             int chunks)
{
    sparcml_call *c = &op->c;
    uint64_t need[CTX_CAPACITIES] = {0};
    if (hit) piggyback_scratch(c, alg, dim, piggyback_cap(dim, k_max), chunks, need);
    op->local.piggyback = hit && pools_hold(c->ctx, need);
    op->ride.piggybacked = op->local.piggyback;
    if (op->ride.piggybacked && op->local.reason == SPARCML_R_OK)
        op->local.declined = c->input.dim != dim || c->input.nnz > piggyback_cap(dim, k_max);
}

void op_piggyback(sparcml_op *op)
{
    const sparcml_call *c = &op->c;
    const sparcml_memo *memo = &op_policy_of(c->ctx)->memo;
    uint64_t count = c->recv_bytes / SPARCML_WORD_BYTES, dim = 0, k_max = 0;
    sparcml_algorithm alg = split_history(op);
    int chunks = alg == SPARCML_ALG_AUTO ? doubling_history(op) : 1, hit;
    if (alg == SPARCML_ALG_AUTO && chunks == 1) {
        alg = sparcml_exchange_algorithm();
        hit = op->set->piggyback && select_memo_hit(memo, count, c->vtype, &dim, &k_max);
    } else {
        /* The latest call's exchange: where it had this count and value
         * type, or, in chunks, where the slots keep the pair for whole
         * messages and its chunks stay sparse (chunks add the same bits:
         * a program that alternates a pipelined count with another keeps
         * the other's data riding); in chunks never quantized (a
         * pipelined run has no quantizer). */
        alg = alg == SPARCML_ALG_AUTO ? sparcml_exchange_algorithm() : alg;
        hit = memo->latest.count == count && memo->latest.vtype == c->vtype;
        dim = memo->latest.dim;
        k_max = memo->latest.k_max;
        if (!hit && chunks > 1 && select_memo_hit(memo, count, c->vtype, &dim, &k_max))
            hit = ride_chunks(c->ctx, dim, c->vtype, k_max, chunks) != 0;
        hit &= chunks == 1 || !c->q.bits;
    }
    piggyback_decide(op, alg, hit, dim, k_max, chunks);
}

static int tagged_begin(sched *s)
{
    op_piggyback(op_of(s));
    return op_agree(s, tagged_agreed);
}

/* Validate this rank's part of the call. */
static void tagged_fill(sparcml_op *op, int vtype)
{
    const sparcml_settings *s = op->set;
    sparcml_local *local = &op->local;
    sparcml_call *c = &op->c;
    local->reason = s->error[0] ? SPARCML_R_CONFIG_INVALID
                                : validate_local(op->sendbuf, op->recvbuf, op->count, vtype, op->mop, &c->input,
                                                 op->detail, sizeof op->detail);
    if (s->error[0]) snprintf(op->detail, sizeof op->detail, "%.*s", (int)sizeof op->detail - 1, s->error);
    if (local->reason == SPARCML_R_OK) {
        local->dim = c->input.dim;
        local->vtype = vtype;
        local->count = op->count;
        local->nnz = c->input.nnz;
    }
    c->recvbuf = op->recvbuf;
    c->recv_bytes = (uint64_t)op->count * SPARCML_WORD_BYTES;
    c->dim = c->input.dim;
    c->vtype = vtype;
}

const sparcml_op_kind sparcml_op_tagged = {.fill = tagged_fill, .begin = tagged_begin,
                                           .scratch_ahead = op_scratch_ahead, .select = select_algorithm};

void op_fill_dense(sparcml_op *op, int vtype)
{
    sparcml_call *c = &op->c;
    c->dim = (uint64_t)op->count;
    c->vtype = vtype;
    c->recv_bytes = (uint64_t)sparcml_capacity(c->dim, vtype) * SPARCML_WORD_BYTES;
}

/* --- starting and finishing a call of any kind ------------------------- */

int sparcml_op_start(sparcml_op *op, const sparcml_op_kind *kind, const void *sendbuf, void *recvbuf,
                     MPI_Count count, MPI_Datatype datatype, int vtype, MPI_Op mop, MPI_Comm comm, int blocking,
                     const char *call)
{
    int inter = 0, rc;
    *op = (sparcml_op){.set = settings_get(), .comm = comm, .call = call, .kind = kind, .sendbuf = sendbuf,
                       .recvbuf = recvbuf, .count = count, .datatype = datatype, .mop = mop};
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return SPARCML_OP_VENDOR; /* the vendor's error */
    rc = PMPI_Comm_rank(comm, &op->rank);
    if (rc == MPI_SUCCESS && inter) {
        /* Every rank finds it: rank 0 of the local group speaks. */
        stats_record_error(op->rank, SPARCML_R_INTERCOMM);
        sparcml_outcome_set(&op->outcome, SPARCML_R_INTERCOMM, -1, NULL);
        if (op->rank == 0) sparcml_outcome_print(&op->outcome, call, op->rank);
        return SPARCML_OP_DONE;
    }
    if (rc == MPI_SUCCESS) rc = op_ctx_get(comm, blocking, &op->c.ctx);
    if (rc != MPI_SUCCESS) {
        sparcml_outcome_set_code(&op->outcome, rc, op->rank);
        return SPARCML_OP_DONE;
    }
    op->t0 = PMPI_Wtime();
    kind->fill(op, vtype);
    op_quantization(&op->c, op->set);
    op->c.tag_offset = TAG_KINDS_ * (int)(op->c.ctx->started++ % TAG_CALLS);
    sched_init(&op->s, &op->c, blocking, op_setup);
    return SPARCML_OP_SCHEDULED;
}

int sparcml_allreduce(const sparcml_op_kind *kind, const void *sendbuf, void *recvbuf, MPI_Count count,
                      MPI_Datatype datatype, int vtype, MPI_Op mop, MPI_Comm comm)
{
    static const char call[] = "MPI_Allreduce";
    sparcml_op op;
    switch (sparcml_op_start(&op, kind, sendbuf, recvbuf, count, datatype, vtype, mop, comm, 1, call)) {
    case SPARCML_OP_VENDOR: return flv_allreduce(sendbuf, recvbuf, count, datatype, mop, comm);
    case SPARCML_OP_DONE: return sparcml_raise(comm, call, &op.outcome);
    default: break;
    }
    progress_drain(&op.c.ctx->pending_calls); /* the communicator's non-blocking calls first */
    sched_run(&op.s);
    if (!sparcml_outcome_failed(sparcml_op_finish(&op))) return MPI_SUCCESS;
    return sparcml_raise(comm, call, &op.outcome);
}

int sparcml_finalize(void)
{
    progress_finalize(); /* calls freed while pending too, so the report counts them */
    if (settings_get()->stats) stats_report();
    return ctx_finalize();
}
