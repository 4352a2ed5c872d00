/* op.c -- an allreduce of the library: validate, agree, select, run, report.
 *
 * The order matters for "never silently wrong":
 *  1. local checks that need no communication and are the same on every
 *     rank of the communicator (inter-communicator) fail at once;
 *  2. the private duplicate is fetched (created, collectively, on first use);
 *  3. each rank validates its own arguments and stream, and the agreement
 *     step shares the verdict: if any rank failed, all fail together;
 *  4. the algorithm is selected from agreed numbers only, then run -- or,
 *     when the memo predicts the algorithm whose whole exchange carries
 *     the agreement, it already ran within the agreement step, and its
 *     result is delivered only after the verdict; when it predicts one
 *     whose first phase does, that phase did, and the rest of it runs
 *     after the verdict (op_ride.c);
 *  5. failures the algorithm detects (result too large for recvbuf) are
 *     identical on all ranks by construction. */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "alg/algorithms.h"
#include "alg/scratch.h"
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
void op_learn_pending(sparcml_ctx *ctx, const sparcml_agreed *a)
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

/* The communicator is being freed: its pending calls complete first, then
 * each kind forgets what it kept for it. */
static void policy_freeing(sparcml_ctx *ctx)
{
    static const sparcml_op_kind *const kinds[OP_KINDS] = {
        [OP_KIND_TAGGED] = &sparcml_op_tagged,
        [OP_KIND_TRANSPARENT] = &sparcml_op_transparent,
        [OP_KIND_COMPRESSED] = &sparcml_op_compressed,
    };
    progress_drain(&ctx->pending_calls);
    for (int i = 0; i < OP_KINDS; i++)
        if (kinds[i]->forget) kinds[i]->forget(op_kind_comm(ctx, kinds[i]));
}

int op_ctx_get(MPI_Comm comm, int blocking, sparcml_ctx **out)
{
    static const ctx_extension policy = {.bytes = sizeof(op_policy), .pools = OP_POOLS, .init = policy_init,
                                         .freeing = policy_freeing, .send_slots = sparcml_algorithm_send_slots};
    return ctx_get(comm, &policy, blocking, out);
}

sparcml_problem op_call_problem(const sparcml_call *c, const sparcml_agreed *a)
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
    return p;
}


/* Do the pools every rank is known to hold (the communicator's agreed
 * capacities) cover `need`? */
int op_pools_hold(const sparcml_ctx *ctx, const uint64_t need[OP_POOLS])
{
    int held = 1;
    const uint64_t *agreed = op_policy_c(ctx)->agreed_capacity;
    for (int i = 0; i < OP_POOLS; i++) held &= need[i] <= agreed[i];
    return held;
}

/* How the agreed problem's exchange runs with the op's algorithm: its
 * chunks per round (1 where its row does not pipeline) and who gathers a
 * split algorithm's messages. */
void op_plan_exchange(sparcml_op *op, const sparcml_problem *p)
{
    op->plan.pipeline_chunks = select_pipeline_chunks(op->set, p, op->alg);
    op->plan.gather = select_gather_plan(op->set, p);
}

/* Blocking calls time their runs where the settings want timed prices
 * (settings_timed_prices): a non-blocking call's time is the
 * application's as much as the library's (core/timed.h). */
int op_timing(const sparcml_op *op)
{
    return op->s.blocking && settings_timed_prices(op->set);
}

timed_key op_timed_key(const sparcml_op *op)
{
    return (timed_key){.kind = op->kind, .count = op->count, .vtype = op->c.vtype};
}

void op_time_run(sparcml_op *op, cost_route route, double seconds, double price)
{
    timed_run run = {.key = op_timed_key(op), .dim = op->c.dim, .k_max = op->c.k_max, .route = route,
                     .seconds = seconds, .price = price, .growths_before = op->growths,
                     .growths_after = op->c.ctx->pool_growths};
    timed_note_run(&op_policy_of(op->c.ctx)->timed, &run);
}

double op_vendor_timed(sparcml_op *op)
{
    double run = PMPI_Wtime() - op->t0;
    if (op_timing(op)) {
        sparcml_problem p = op_problem(op);
        op_time_run(op, COST_VENDOR, run, select_vendor_price(op->set, &p));
    }
    return run;
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
    select_timed t = op_timed(op);
    c->ctx->sealed = 0;
    if (c->reason != SPARCML_R_OK) {
        char detail[SPARCML_DETAIL_BYTES];
        capacity_detail(op, alg, detail, sizeof detail);
        return op_fail(s, c->reason, -1, detail);
    }
    if (op_timing(op) && !op->kind->times_route)
        op_time_run(op, alg, PMPI_Wtime() - op->t_run, select_price(set, p, alg));
    /* A piggybacked call ran the memo's algorithm on a prediction: remember
     * what the selector makes of the agreed numbers now (the vendor's
     * route: no algorithm to ride on). */
    op->ride.selected = op->ride.piggybacked ? op->kind->select(set, p, &t) : (cost_route)alg;
    if (stats_verbose(set, c->ctx))
        op->ride.chosen_by = select_basis_of(set, p, &t, op->ride.selected, op->kind->select);
    memo_note(&op_policy_of(c->ctx)->memo, c->recv_bytes / SPARCML_WORD_BYTES, p, op->ride.selected,
              op->plan.pipeline_chunks, op_data_rides(op));
    learn(c->ctx, p, c);
    c->ctx->calls++;
    stats_record(set, c, &op->ride, alg, PMPI_Wtime() - op->t0, t.timed_over);
    return then ? then(s) : MPI_SUCCESS;
}

qsgd_params op_qsgd_params(const sparcml_settings *s)
{
    return (qsgd_params){.bits = s->qsgd_bits, .bucket = (uint32_t)s->qsgd_bucket, .seed = s->qsgd_seed};
}

void op_quantization(sparcml_call *c, const sparcml_settings *s)
{
    /* QSGD applies to floating-point values only: integers stay exact. */
    if (!op_value_is_float(c->vtype)) return;
    c->q = op_qsgd_params(s);
    c->q_sparse = s->qsgd_sparse;
}

int op_buffers_reason(const void *sendbuf, const void *recvbuf)
{
    if (!recvbuf || !op_input(sendbuf, recvbuf)) return SPARCML_R_NULL_BUFFER;
    return sendbuf == recvbuf ? SPARCML_R_ALIASED : SPARCML_R_OK;
}

/* 1 for an inter-communicator, 0 for an intra-communicator, -1 where the
 * library cannot ask (MPI_COMM_NULL, or the test fails: the vendor's call
 * reports it). */
static int comm_inter(MPI_Comm comm)
{
    int inter = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return -1;
    return inter != 0;
}

int op_dense_qualifies(MPI_Count count, int vtype, MPI_Op op, MPI_Comm comm, uint64_t min_bytes)
{
    if (op != MPI_SUM || count <= 0 || (uint64_t)count > SPARCML_MAX_DIM) return 0;
    if ((uint64_t)count * sparcml_value_size(vtype) < min_bytes) return 0;
    return comm_inter(comm) == 0;
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
    return op_call_problem(&op->c, &op->agreed);
}

select_timed op_timed(const sparcml_op *op)
{
    select_timed t = {.may_try = op->trial.may_start, .trying = op->trial.trying};
    for (int i = 0; i < COST_ROUTES; i++) t.timed_over[i] = 1e-6 * (double)op->agreed.timed_ppm[i];
    return t;
}

cost_route op_select(const sparcml_op *op, const sparcml_problem *p)
{
    select_timed t = op_timed(op);
    return op->kind->select(op->set, p, &t);
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
 * where it carried the agreement, from where that left it (its row's
 * resume). */
int op_algorithm(sched *s)
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
    op_policy *pol = op_policy_of(ctx);
    char detail[SPARCML_DETAIL_BYTES];
    memcpy(pol->agreed_capacity, op->reserved + 1, sizeof pol->agreed_capacity);
    if (op->reserved[0] >= (uint64_t)ctx->size) return op_algorithm(s);
    snprintf(detail, sizeof detail, "the scratch of algorithm %s", sparcml_algorithm_name(op->alg));
    return op_fail(s, SPARCML_R_NOMEM, (int)op->reserved[0], detail);
}

int op_run(sched *s, const sparcml_problem *p, sched_step then)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    uint64_t need[OP_POOLS] = {0};
    int reason;
    op->plan.chunks_run = 0;
    op_plan_exchange(op, p);
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
    if (op_pools_hold(c->ctx, need)) return op_algorithm(s);
    op->reserved[0] = (uint64_t)(ctx_reserve(c->ctx, need) ? c->ctx->size : op->rank);
    ctx_capacities(c->ctx, op->reserved + 1);
    sched_next(s, scratch_agreed);
    return sched_allreduce(s, op->reserved, 1 + OP_POOLS, MPI_UINT64_T, MPI_MIN);
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

/* --- the tagged kind: the stream is validated at start; the data may
 * ride on the agreement (piggybacked: op_ride.c). --------------------- */

static int tagged_agreed(sched *s)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    sparcml_problem p;
    c->dim = op->agreed.dim;
    p = op_problem(op);
    if (op_rode(op)) return op_resume(s, &p, op_concluded);
    op->alg = op_select(op, &p);
    return op_run(s, &p, op_concluded);
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
                                           .scratch_ahead = op_scratch_ahead, .select = select_algorithm,
                                           .slot = OP_KIND_TAGGED};

void op_fill_dense(sparcml_op *op, int vtype)
{
    sparcml_call *c = &op->c;
    c->dim = (uint64_t)op->count;
    c->vtype = vtype;
    c->recv_bytes = (uint64_t)sparcml_capacity(c->dim, vtype) * SPARCML_WORD_BYTES;
}

void op_dense_local(sparcml_op *op, uint64_t nnz)
{
    op->local = (sparcml_local){.vtype = op->c.vtype, .count = op->count, .nnz = nnz,
                                .reason = op_buffers_reason(op->sendbuf, op->recvbuf)};
}

void op_dense_write(const sparcml_op *op)
{
    sv result = stream_view(op->c.recvbuf);
    stream_densify(&result, op->recvbuf);
}

/* --- starting and finishing a call of any kind ------------------------- */

int sparcml_op_start(sparcml_op *op, op_room *room, const sparcml_op_kind *kind, const void *sendbuf,
                     void *recvbuf, MPI_Count count, MPI_Datatype datatype, int vtype, MPI_Op mop, MPI_Comm comm,
                     int blocking, const char *call)
{
    int inter = comm_inter(comm), rc;
    *op = (sparcml_op){.set = settings_get(), .comm = comm, .call = call, .room = room, .kind = kind,
                       .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count, .datatype = datatype, .mop = mop};
    if (inter < 0) return SPARCML_OP_VENDOR; /* the vendor's error */
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
    op->c.plan = &op->plan;
    kind->fill(op, vtype);
    op_quantization(&op->c, op->set);
    op->c.tag_offset = TAG_KINDS * (int)(op->c.ctx->started++ % TAG_CALLS);
    sched_init(&op->s, &op->c, blocking, op_setup, room->sched_state);
    return SPARCML_OP_SCHEDULED;
}

int sparcml_allreduce(const sparcml_op_kind *kind, const void *sendbuf, void *recvbuf, MPI_Count count,
                      MPI_Datatype datatype, int vtype, MPI_Op mop, MPI_Comm comm)
{
    static const char call[] = "MPI_Allreduce";
    sparcml_op op;
    op_room room;
    switch (sparcml_op_start(&op, &room, kind, sendbuf, recvbuf, count, datatype, vtype, mop, comm, 1, call)) {
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
