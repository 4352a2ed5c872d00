/* op.h -- one allreduce of the library as one schedule, whatever the entry
 * point: MPI_Allreduce (sparcml_allreduce), MPI_Iallreduce and persistent
 * calls (iallreduce.h), tagged datatypes, transparent mode or compression.
 *
 * The pipeline's steps: set-up of the communicator's context (on its
 * first call) -> the kind's prologue (a tagged call's stream is parsed at
 * start; transparent mode scans the dense buffer when the call runs) ->
 * agreement (every rank's verdict and numbers, combined) -> the kind's
 * choice (an algorithm; for transparent mode possibly the vendor) -> the
 * algorithm's schedule -> conclusion (report a failure on every rank, or
 * learn and count) -> the kind's epilogue. */
#ifndef SPARCML_OP_H
#define SPARCML_OP_H

#include <mpi.h>

#include "alg/scratch.h"
#include "base/errors.h"
#include "core/agree.h"
#include "core/memo.h"
#include "core/select.h"
#include "core/settings.h"
#include "core/stats.h"
#include "core/timed.h"
#include "runtime/schedule.h"

/* The pools of the kinds of dense buffers (transparent mode,
 * compression), numbered after the algorithms' (alg/scratch.h); OP_POOLS:
 * every pool of the library. */
enum {
    POOL_DENSE_IN = ALG_POOLS_END, /* the stream of a dense input */
    POOL_DENSE_OUT, /* its result stream */
    POOL_TOPK,      /* compression: the top-k selection's scratch */
    POOL_QIN,       /* compression: the QSGD block of the quantized contribution */
    OP_POOLS
};

/* The kinds of call (sparcml_op_kind.slot), each with a state of its
 * own per communicator: OP_KIND_COMM_BYTES in the policy, zeroed with the
 * context, opaque here. */
enum { OP_KIND_TAGGED, OP_KIND_TRANSPARENT, OP_KIND_COMPRESSED, OP_KINDS, OP_KIND_COMM_BYTES = 64 };

/* What the library learns per communicator, kept in its context
 * (runtime/comm_ctx.h, the extension): identical on all ranks, since only
 * agreed outcomes change it, except what a field names this rank's own. */
typedef struct op_policy {
    /* The selector's overlap estimate, learnt from the previous call. */
    double overlap;
    /* After a dense result the union size is learnt one call later, from
     * the sum of every rank's union_part in the next agreement step. */
    int union_pending;
    uint64_t union_part;
    sparcml_problem union_problem; /* the problem the result belonged to */
    sparcml_memo memo;          /* which exchange the agreement rides on, with data or not */
    /* What every rank's pools are known to hold: the minima of the last
     * reservation all ranks took part in (op_run); pools never shrink. */
    uint64_t agreed_capacity[OP_POOLS];
    /* How fast each route ran on the last few kinds, counts and types
     * (core/timed.h): this rank's own numbers, which the selector sees
     * only through the agreement. */
    timed_table timed;
    /* Each kind's own: its file defines the struct (OP_KIND_COMM_FITS)
     * and reaches it with op_kind_comm. */
    _Alignas(max_align_t) unsigned char kind_comm[OP_KINDS][OP_KIND_COMM_BYTES];
} op_policy;

static inline op_policy *op_policy_of(sparcml_ctx *ctx) { return (op_policy *)ctx->extension; }
static inline const op_policy *op_policy_c(const sparcml_ctx *ctx) { return (const op_policy *)ctx->extension; }
#define OP_KIND_COMM_FITS(type) \
    _Static_assert(sizeof(type) <= OP_KIND_COMM_BYTES, #type " fits a kind's communicator state")

typedef struct sparcml_op sparcml_op;

/* The steps that settle a failure (op_fail.c): what the ranks tell each
 * other of it. */
enum { OP_FACTS_BYTES = SETTINGS_DIGEST_BYTES, OP_KIND_STATE_BYTES = 64 };
typedef struct op_failure {
    unsigned char said[SPARCML_DETAIL_BYTES + OP_FACTS_BYTES];
    char mine[OP_FACTS_BYTES], facts0[OP_FACTS_BYTES];
    int which;
} op_failure;

/* What a call writes before it reads, kept apart from the op so that
 * starting a call does not touch it: the running algorithm's state (set up
 * by the algorithm, runtime/schedule.h) and a failure's (only a failing
 * call writes it). */
typedef struct op_room {
    _Alignas(max_align_t) unsigned char sched_state[SCHED_STATE_BYTES];
    op_failure fail;
} op_room;

/* A kind of call: how it fills in a new op from this rank's arguments (no
 * communication; a failure goes into op->local.reason, for the agreement
 * to share), and its first step once the context is set up. */
typedef struct sparcml_op_kind {
    void (*fill)(sparcml_op *op, int vtype);
    sched_step begin;
    /* Scratch the kind's next call may need, to reserve with this call's
     * (op_run raises `need` to it); or NULL. */
    void (*scratch_ahead)(const sparcml_op *op, const sparcml_problem *p, uint64_t *need);
    /* What the kind's selector picks for agreed numbers (core/select.h):
     * an algorithm, or for transparent mode possibly the vendor's route
     * (COST_VENDOR, alg/cost_model.h). */
    select_route select;
    /* The kind times its sparse route itself, whole (op_time_run), where
     * its selector prices more than the algorithm; else op_conclude times
     * the algorithm's run. */
    int times_route;
    /* Its state per communicator (op_policy.kind_comm[slot]), and what
     * frees what that holds when the communicator goes, once its calls
     * are complete (or NULL). */
    int slot;
    void (*forget)(void *comm_state);
} sparcml_op_kind;

static inline void *op_kind_comm(sparcml_ctx *ctx, const sparcml_op_kind *kind)
{
    return op_policy_of(ctx)->kind_comm[kind->slot];
}

/* Tagged calls (op.c), transparent mode's (transparent.c) and compressed
 * calls (compress.c). */
/* The kinds whose buffers are dense vectors of count values (transparent,
 * compressed): their fill (the dimension is the count); the start of such
 * a call's own record, of nnz entries, its buffers checked (a mismatch of
 * the dimension is named as a count's); and the concluded call's sum,
 * held in the result pool at c.recvbuf, written into the application's
 * buffer. */
void op_fill_dense(sparcml_op *op, int vtype);
void op_dense_local(sparcml_op *op, uint64_t nnz);
void op_dense_write(const sparcml_op *op);
extern const sparcml_op_kind sparcml_op_tagged, sparcml_op_transparent, sparcml_op_compressed;

struct sparcml_op {
    sched s;
    sparcml_call c;
    alg_plan plan;             /* c.plan: how the algorithms run the call */
    sparcml_local local;
    sparcml_agreed agreed;
    agree_record record;       /* the agreement's, riding on the messages */
    agree_record own;          /* this rank's alone (a first phase sends it) */
    call_rider rider;
    stats_ride ride;           /* how the agreement travelled (core/stats.h) */
    /* The agreement rides on this algorithm's first phase (the memo's
     * latest call's; SPARCML_ALG_AUTO: on the whole exchange, in
     * plan.pipeline_chunks per round). */
    sparcml_algorithm phase;
    sched_step agreed_then;    /* what follows a successful agreement */
    const sparcml_settings *set;
    MPI_Comm comm;             /* the application's */
    int rank;
    sv input;                  /* hidden while records only travel */
    sparcml_algorithm alg;
    /* Called once the algorithm's scratch is agreed, right before it
     * starts (compression: the contribution changes only then); or NULL. */
    void (*ready)(sparcml_op *op);
    /* A reservation's allreduce (minima): this rank if it could not
     * reserve the algorithm's scratch, else P; then ctx_capacities. */
    uint64_t reserved[1 + OP_POOLS];
    double t0;
    double t_run;              /* when the algorithm's exchange began (core/timed.h) */
    uint64_t growths;          /* the context's pool growths when the call began */
    timed_trial trial;         /* what the rationing of trials lets it try (core/timed.h) */
    /* What became of the call (base/errors.h), and the program's call
     * that names it ("MPI_Iallreduce", ...). */
    sparcml_outcome outcome;
    const char *call;
    op_room *room;             /* the caller's (sparcml_op_start) */
    char detail[SPARCML_DETAIL_BYTES]; /* this rank's own input's problem */
    /* The application's arguments (transparent mode reads its dense
     * buffers; its vendor route passes them on). */
    const sparcml_op_kind *kind;
    const void *sendbuf;
    void *recvbuf;
    MPI_Count count;
    MPI_Datatype datatype;
    MPI_Op mop;
    /* The kind's own state between its steps: its file defines the struct
     * (OP_KIND_STATE_FITS) and reaches it with op_kind_state; opaque here. */
    _Alignas(max_align_t) unsigned char kind_state[OP_KIND_STATE_BYTES];
};

static inline void *op_kind_state(sparcml_op *op) { return op->kind_state; }
static inline const void *op_kind_state_c(const sparcml_op *op) { return op->kind_state; }
#define OP_KIND_STATE_FITS(type) _Static_assert(sizeof(type) <= OP_KIND_STATE_BYTES, #type " fits an op's kind state")

/* Start: fill in the op (the kind's fill) and prepare its schedule on
 * `room`, which lives as long as the op, or say that the vendor takes the
 * call (an invalid communicator: the vendor reports it) or that it is done
 * already (op->outcome says how; nothing is raised).  `call` names the
 * program's call in messages
 * ("MPI_Iallreduce").
 * Finish, once the schedule has ended: the call's status, settled (with a
 * failure this rank met alone); the caller raises it (sparcml_raise) at
 * the program's boundary: the blocking call, or the call that completes
 * the request. */
enum { SPARCML_OP_SCHEDULED, SPARCML_OP_VENDOR, SPARCML_OP_DONE };
int sparcml_op_start(sparcml_op *op, op_room *room, const sparcml_op_kind *kind, const void *sendbuf,
                     void *recvbuf, MPI_Count count, MPI_Datatype datatype, int vtype, MPI_Op mop, MPI_Comm comm,
                     int blocking, const char *call);
sparcml_outcome *sparcml_op_finish(sparcml_op *op);

/* A blocking call of the given kind, run at once (the communicator's
 * pending non-blocking calls complete first); its failure raised. */
int sparcml_allreduce(const sparcml_op_kind *kind, const void *sendbuf, void *recvbuf, MPI_Count count,
                      MPI_Datatype datatype, int vtype, MPI_Op op, MPI_Comm comm);

/* The steps the kinds share: the op around a schedule; the agreement
 * stage, which continues with `then` once every rank agrees (else the
 * call fails on every rank: op_fail); running op->alg, after which `then`
 * follows (a restriction that rules the problem out, or a rank that
 * cannot reserve the algorithm's scratch, fails the call on every rank
 * before the algorithm starts); the conclusion, which reports a failure
 * the algorithm found (op_fail) or learns from the call, counts it and
 * goes on with the kind's epilogue `then` (NULL: none).
 * op_fail: the call fails on every rank alike with `reason` about `rank`
 * (-1: every rank's alike); `detail` is what this rank knows of it, which
 * the rank at fault (rank 0 for -1) tells the others (op_fail.c). */
sparcml_op *op_of(sched *s);
int op_agree(sched *s, sched_step then);
int op_run(sched *s, const sparcml_problem *p, sched_step then);
int op_conclude(sched *s, sched_step then);
int op_fail(sched *s, int reason, int rank, const char *detail);

/* Piggybacking (op_ride.c; op_agree), for kinds whose input stream is
 * built before the agreement: where the memo (memo.h) predicts the
 * algorithm the agreement rides on for the call's count and value type
 * (the whole exchange, in the latest call's chunks per round where it ran
 * in chunks, or the first phase of the latest call's algorithm) and the
 * pools every rank holds cover it, the data rides in the same messages,
 * unless this rank declines (its input beyond what the pools were
 * reserved for).  After the agreement, op_rode says whether every rank's
 * data came along (else the call runs as any other), and op_resume goes
 * on from there: a whole exchange's sum is delivered into c->recvbuf, a
 * first phase's algorithm runs the rest of its schedule; `then` follows.
 * op_scratch_ahead is the kinds' scratch_ahead: it reserves what the next
 * call of the count may ask of the pools. */
void op_piggyback(sparcml_op *op);
int op_rode(sparcml_op *op);
int op_resume(sched *s, const sparcml_problem *p, sched_step then);
void op_scratch_ahead(const sparcml_op *op, const sparcml_problem *p, uint64_t need[OP_POOLS]);
/* The kinds whose data rides on the agreement reserve ahead for it. */
static inline int op_data_rides(const sparcml_op *op) { return op->kind->scratch_ahead != NULL; }

/* Timing (core/timed.h): whether this call times its run and carries the
 * times into its agreement; its key in the communicator's timed table; in
 * such a call, this rank's run of `route` that took `seconds` where the
 * model priced it at `price` (op.c times the algorithms, transparent mode
 * its vendor route, COST_VENDOR). */
int op_timing(const sparcml_op *op);
timed_key op_timed_key(const sparcml_op *op);
void op_time_run(sparcml_op *op, cost_route route, double seconds, double price);
/* After op_vendor's run: its seconds, timed as COST_VENDOR's at the
 * vendor's price (select_vendor_price) where the call times. */
double op_vendor_timed(sparcml_op *op);

/* The problem the selector sees for the agreed call, and beside it what
 * the agreement says of the routes' timed prices and trials; the kind's
 * selector on both. */
sparcml_problem op_problem(const sparcml_op *op);
select_timed op_timed(const sparcml_op *op);
cost_route op_select(const sparcml_op *op, const sparcml_problem *p);

/* Between op.c and op_ride.c: the problem of call c with the agreed
 * numbers a; whether the pools every rank is known to hold (the
 * communicator's agreed capacities) cover `need`; how the agreed
 * problem's exchange runs (recursive doubling's chunks per round, who
 * gathers a split algorithm's messages); the second half of learning
 * the union of a dense result (op.c, learn); starting op->alg on its
 * reserved pools. */
sparcml_problem op_call_problem(const sparcml_call *c, const sparcml_agreed *a);
int op_pools_hold(const sparcml_ctx *ctx, const uint64_t need[OP_POOLS]);
void op_plan_exchange(sparcml_op *op, const sparcml_problem *p);
void op_learn_pending(sparcml_ctx *ctx, const sparcml_agreed *a);
int op_algorithm(sched *s);

/* QSGD settings of a call (floating-point values only), from s. */
qsgd_params op_qsgd_params(const sparcml_settings *s);
void op_quantization(sparcml_call *c, const sparcml_settings *s);

/* Floating-point values: QSGD and compression apply to them only. */
static inline int op_value_is_float(int vtype) { return vtype == SPARCML_FLOAT || vtype == SPARCML_DOUBLE; }

/* The application's input: sendbuf, or recvbuf under MPI_IN_PLACE. */
static inline const void *op_input(const void *sendbuf, const void *recvbuf)
{
    return sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
}

/* SPARCML_R_NULL_BUFFER, SPARCML_R_ALIASED (sendbuf == recvbuf without
 * MPI_IN_PLACE) or SPARCML_R_OK for the application's buffers. */
int op_buffers_reason(const void *sendbuf, const void *recvbuf);

/* Whether an untagged call of `count` values of vtype may be taken over
 * by a kind whose smallest call is min_bytes: MPI_SUM, a count the
 * streams can carry, an intra-communicator. */
int op_dense_qualifies(MPI_Count count, int vtype, MPI_Op op, MPI_Comm comm, uint64_t min_bytes);

/* The vendor's allreduce of the application's buffers, as they were
 * given, over the private duplicate; `then` follows (op->t0: its start). */
int op_vendor(sched *s, sched_step then);

/* The context of comm with the policy as its extension (runtime/comm_ctx.h:
 * blocking creates it at once, else as the first steps of the call). */
int op_ctx_get(MPI_Comm comm, int blocking, sparcml_ctx **out);

/* At MPI_Finalize: complete every pending call (also those whose requests
 * were freed), print the SPARCML_STATS report, free the contexts (the
 * first error doing so is returned). */
int sparcml_finalize(void);

#endif
