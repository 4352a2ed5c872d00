/* transparent.c -- SPARCML_TRANSPARENT: untagged MPI_SUM allreduces of
 * dense MPI_FLOAT, MPI_DOUBLE and exact integer buffers that are mostly
 * zeros run the sparse algorithms, with no change to the program.
 *
 * Contract (sparcml(7), TRANSPARENT MODE):
 *  - A call qualifies on arguments MPI requires to be equal on all ranks
 *    (op, datatype, count, communicator), so every rank takes the same
 *    branch; anything else goes to the vendor untouched.
 *  - Each rank reads its buffer once (the scan): it counts the nonzeros
 *    and gathers them into its input stream in the same pass; the
 *    agreement step combines the counts, and the selector decides from the
 *    agreed numbers only whether a sparse algorithm beats the vendor on the
 *    original buffers.
 *  - After the vendor was chosen, the next SELECT_LEARNT_SKIP calls with
 *    the same count and type on the communicator go straight to the
 *    vendor: the choice came from agreed facts and the calls are
 *    collective, so all ranks skip alike.  The detour of dense data costs
 *    1/(SELECT_LEARNT_SKIP + 1) of a scan and an agreement per call.
 *    The vendor's blocking runs are timed as the algorithms' are
 *    (core/timed.h): for the selector it costs at least the fastest any
 *    rank saw.
 *  - The sparse path runs the algorithm on that stream into pooled
 *    scratch and writes the dense result in one sweep; where the memo
 *    predicts an algorithm the agreement rides on, the stream rides on
 *    the agreement's messages as a tagged call's does (op_piggyback).  Both
 *    buffers are reserved before the agreement (the scan gathers into
 *    one): a rank that cannot have them says so in its record, and every
 *    rank fails the call alike.  Every zero (either sign) is +0.0 and
 *    contributes nothing; NaN and Inf are nonzeros and add as IEEE values;
 *    results are bitwise identical on all ranks (as every sparcml result).
 *  - Failures (count or datatype differing across ranks, aliased buffers)
 *    are agreed and reported on every rank as for tagged calls.
 *  - It is a kind of op (op.h): blocking, non-blocking and persistent calls
 *    run the same steps.  Whether the learnt vendor choice applies is
 *    decided when a call runs, after the communicator's earlier calls have
 *    completed on every rank; its vendor route then runs on the private
 *    duplicate, so it cannot cross the application's own collectives. */
#include "config.h"

#include <limits.h>

#include "core/stats.h"
#include "core/transparent.h"

/* A transparent call's own state (the op's kind state): where it went
 * (core/stats.h) and how long this rank's scan took. */
typedef struct transparent_state {
    int route;
    double scan_seconds;
} transparent_state;
OP_KIND_STATE_FITS(transparent_state);

static transparent_state *ts(sparcml_op *op) { return op_kind_state(op); }
static const transparent_state *ts_c(const sparcml_op *op) { return op_kind_state_c(op); }

/* What transparent mode learns per communicator (its kind's state there,
 * the same on every rank): the learnt vendor choice (select_learnt). */
OP_KIND_COMM_FITS(select_learnt);

static select_learnt *learnt(sparcml_ctx *ctx) { return op_kind_comm(ctx, &sparcml_op_transparent); }

int transparent_qualifies(MPI_Count count, int vtype, MPI_Op op, MPI_Comm comm)
{
    const sparcml_settings *s = settings_get();
    /* Without transparent mode the types are marked for compression. */
    return s->transparent && op_dense_qualifies(count, vtype, op, comm, s->transparent_min_bytes);
}

/* The agreed route, learnt (select_learn).  A sparse choice for the learnt
 * count and type (its skips are used up, or the call would not have
 * scanned) ends the learnt choice, so the next scans of that size gather
 * with the whole pool as room. */
static void learn(const sparcml_op *op, cost_route route)
{
    select_learn(learnt(op->c.ctx), op->count, op->c.vtype, route);
}

/* The verbose line shows the vendor's agreed time (0 where none) and,
 * where the selector chose the vendor, on what; vendor_run is the
 * vendor's own run on a vendor route. */
static void record_route(const sparcml_op *op, double vendor_run)
{
    const sparcml_call *c = &op->c;
    stats_route route = (stats_route)ts_c(op)->route;
    stats_choice choice = {.vendor_seconds = 0, .chosen_by = -1};
    if (stats_verbose(op->set, c->ctx)) { /* only the verbose line shows them */
        sparcml_problem p = op_problem(op);
        select_timed t = op_timed(op);
        choice.vendor_seconds = t.timed_over[COST_VENDOR] * select_vendor_price(op->set, &p);
        if (route == ROUTE_VENDOR_MODEL)
            choice.chosen_by = (int)select_basis_of(op->set, &p, &t, COST_VENDOR, op->kind->select);
    }
    stats_record_transparent(op->set, c, route, c->k_max, ts_c(op)->scan_seconds, &choice, vendor_run);
}

/* The bytes of this rank's input stream (nnz nonzeros). */
static uint64_t input_bytes(const sparcml_call *c, uint64_t nnz)
{
    return sparcml_prefers_dense(c->dim, c->vtype, nnz) ? sparcml_dense_bytes(c->dim, c->vtype)
                                                        : sparcml_sparse_bytes(c->dim, c->vtype, nnz);
}

/* --- the scan ----------------------------------------------------------- */

/* The input stream is gathered while the nonzeros are counted, before the
 * agreement, so its pool is reserved before the count is known: at a
 * bound, the gather's room.  The room is the pool as earlier calls left
 * it, at least 1/GATHER_FLOOR of the dense bytes.  A count beyond it
 * stops the gathering (the rest is only counted) and reserves what the
 * stream needs, which is then built after the agreement by a second read
 * (as a dense stream always is); the pool grows to twice the count, so
 * later calls of about that density gather in one read.  So sparse data
 * keeps a pool of its own size, and the worst case (a dense-size pool
 * beside the dense-size result) is reserved only where the data needed
 * it.  A scan after an agreed vendor choice for the same count and type
 * (dense data, most likely) has only the floor as room, so the gathering
 * stops early: with the whole pool as room it would gather half of a
 * dense buffer before only counting, writing as many bytes as it reads. */
enum { GATHER_FLOOR = 16 };

/* A dense view (stream_dense_view: no header) until the scan built the
 * stream. */
static int input_built(const sv *input) { return input->base != input->val; }

static uint64_t gather_room(const sparcml_op *op)
{
    const sparcml_call *c = &op->c;
    uint64_t least = sparcml_dense_bytes(c->dim, c->vtype) / GATHER_FLOOR;
    uint64_t have = c->ctx->pool_bytes[POOL_DENSE_IN];
    if (select_learnt_vendor(learnt(c->ctx), op->count, c->vtype)) return least;
    return have > least ? have : least;
}

/* The pool after a count beyond the room: the stream's bytes, and for a
 * sparse one room for twice its entries. */
static uint64_t grown_room(const sparcml_call *c, uint64_t nnz)
{
    uint64_t most = stream_gather_capacity(c->dim, c->vtype, c->recv_bytes); /* holds any stream */
    if (nnz > most) return input_bytes(c, nnz);
    return sparcml_sparse_bytes(c->dim, c->vtype, nnz < most / 2 ? 2 * nnz : most);
}

/* Counts this rank's nonzeros into its record and builds its input stream
 * where the room holds it; a rank without its scratch says so instead.
 * The room and the grown pool are what make later calls fast, not what
 * the call needs: a rank that cannot have them counts alone and reserves
 * the stream's bytes, and fails the call only without those. */
static void scan(sparcml_op *op, const void *in)
{
    sparcml_call *c = &op->c;
    sparcml_local *local = &op->local;
    uint64_t room = gather_room(op);
    void *buf;
    sv built = sv_absent();
    c->input = stream_dense_view(in, c->dim, c->vtype);
    /* The result pool: an algorithm riding on the agreement may write
     * the sum there once the records say the call succeeds. */
    c->recvbuf = ctx_buffer(c->ctx, POOL_DENSE_OUT, c->recv_bytes);
    if (!c->recvbuf) {
        local->reason = SPARCML_R_NOMEM;
        return;
    }
    buf = ctx_buffer(c->ctx, POOL_DENSE_IN, room);
    if (buf)
        local->nnz = stream_gather_nonzero(&c->input, stream_gather_capacity(c->dim, c->vtype, room), buf, &built);
    else
        local->nnz = stream_count_nonzero(&c->input, 0, c->dim);
    if (!sv_is_absent(&built)) c->input = built;
    else if (!ctx_buffer(c->ctx, POOL_DENSE_IN, grown_room(c, local->nnz))
             && !ctx_buffer(c->ctx, POOL_DENSE_IN, input_bytes(c, local->nnz)))
        local->reason = SPARCML_R_NOMEM;
}

/* --- the vendor on the application's buffers, over the private duplicate */

/* The vendor's run is timed as an algorithm's (op_vendor_timed). */
static int vendor_done(sched *s)
{
    sparcml_op *op = op_of(s);
    record_route(op, op_vendor_timed(op));
    return MPI_SUCCESS;
}

static int vendor(sched *s, stats_route route)
{
    sparcml_op *op = op_of(s);
    ts(op)->route = route;
    return op_vendor(s, vendor_done);
}

/* --- the sparse route --------------------------------------------------- */

/* The concluded call's sum is in the result pool: write it into the
 * application's buffer. */
static int write_result(sched *s)
{
    sparcml_op *op = op_of(s);
    op_dense_write(op);
    ts(op)->route = ROUTE_SPARSE;
    record_route(op, 0);
    return MPI_SUCCESS;
}

static int sparse_done(sched *s)
{
    return op_conclude(s, write_result);
}

/* The data rode on the agreement: the sum is the call's, whatever the
 * selector made of the agreed numbers (op->ride.selected); a vendor pick
 * applies from the next call on. */
static int piggybacked_written(sched *s)
{
    sparcml_op *op = op_of(s);
    write_result(s);
    learn(op, op->ride.selected);
    return MPI_SUCCESS;
}

static int piggybacked_done(sched *s)
{
    return op_conclude(s, piggybacked_written);
}

static int transparent_agreed(sched *s)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    sparcml_problem p = op_problem(op);
    op_policy *pol = op_policy_of(c->ctx);
    cost_route route;
    c->recvbuf = ctx_buffer(c->ctx, POOL_DENSE_OUT, c->recv_bytes); /* reserved by the scan */
    if (op_rode(op)) return op_resume(s, &p, piggybacked_done);
    route = op_select(op, &p);
    learn(op, route);
    if (route == COST_VENDOR) {
        memo_note(&pol->memo, c->recv_bytes / SPARCML_WORD_BYTES, &p, COST_VENDOR, 1, 1);
        return vendor(s, ROUTE_VENDOR_MODEL);
    }
    op->alg = route;
    /* Both pools were reserved before the agreement, the input's at least
     * at input_bytes when the scan could not build the stream. */
    if (!input_built(&c->input))
        c->input = stream_from_values(&c->input, op->local.nnz,
                                      ctx_buffer(c->ctx, POOL_DENSE_IN, input_bytes(c, op->local.nnz)));
    return op_run(s, &p, sparse_done);
}

/* The prologue: the learnt vendor choice, or this rank's scan and its
 * scratch, then the agreement, with the stream riding on it where the
 * memo predicts the algorithm (a stream the scan could not build, its
 * count beyond the room, stays back). */
static int transparent_begin(sched *s)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    sparcml_local *local = &op->local;
    if (select_learnt_skips(learnt(c->ctx), op->count, c->vtype)) return vendor(s, ROUTE_VENDOR_LEARNT);
    op_dense_local(op, 0);
    if (local->reason == SPARCML_R_OK) {
        double t0 = PMPI_Wtime();
        scan(op, op_input(op->sendbuf, op->recvbuf));
        ts(op)->scan_seconds = PMPI_Wtime() - t0;
    }
    op_piggyback(op);
    if (op->ride.piggybacked && local->reason == SPARCML_R_OK && !input_built(&c->input)) local->declined = 1;
    return op_agree(s, transparent_agreed);
}

const sparcml_op_kind sparcml_op_transparent = {.fill = op_fill_dense, .begin = transparent_begin,
                                                .scratch_ahead = op_scratch_ahead, .select = select_transparent,
                                                .slot = OP_KIND_TRANSPARENT};
