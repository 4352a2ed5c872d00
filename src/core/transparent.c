/* transparent.c -- SPARCML_TRANSPARENT: untagged MPI_SUM allreduces of
 * dense MPI_FLOAT, MPI_DOUBLE and exact integer buffers that are mostly
 * zeros run the sparse algorithms, with no change to the program.
 *
 * Contract (sparcml(7), TRANSPARENT MODE):
 *  - A call qualifies on arguments MPI requires to be equal on all ranks
 *    (op, datatype, count, communicator), so every rank takes the same
 *    branch; anything else goes to the vendor untouched.
 *  - Each rank counts its nonzeros (the scan); the agreement step combines
 *    the counts, and the selector decides from the agreed numbers only
 *    whether a sparse algorithm beats the vendor on the original buffers.
 *  - After the vendor was chosen, the next TRANSPARENT_SKIP calls with the
 *    same count and type on the communicator go straight to the vendor:
 *    the choice came from agreed facts and the calls are collective, so all
 *    ranks skip alike.  The detour of dense data costs 1/(SKIP+1) of a scan
 *    and an agreement per call.
 *  - The sparse path builds the input stream into pooled scratch, runs the
 *    algorithm into pooled scratch, and writes the dense result.  Both
 *    buffers are reserved before the agreement (their sizes are known by
 *    then): a rank that cannot have them says so in its record, and every
 *    rank fails the call alike.  Every
 *    zero (either sign) is +0.0 and contributes nothing; NaN and Inf are
 *    nonzeros and add as IEEE values; results are bitwise identical on all
 *    ranks (as every sparcml result).
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

/* Calls that go straight to the vendor after an agreed vendor choice. */
enum { TRANSPARENT_SKIP = 15 };

int transparent_qualifies(MPI_Count count, int vtype, MPI_Op op, MPI_Comm comm)
{
    int inter = 0;
    if (!settings_get()->transparent) return 0; /* the types are marked for compression */
    if (op != MPI_SUM || count <= 0 || (uint64_t)count > SPARCML_MAX_DIM) return 0;
    if ((uint64_t)count * sparcml_value_size(vtype) < settings_get()->transparent_min_bytes) return 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return 0;
    return !inter;
}

static int skipping(sparcml_ctx *ctx, MPI_Count count, int vtype)
{
    op_policy *pol = op_policy_of(ctx);
    if (pol->transparent.skip == 0 || pol->transparent.count != count || pol->transparent.vtype != vtype)
        return 0;
    pol->transparent.skip--;
    return 1;
}

static void learn_vendor(sparcml_ctx *ctx, MPI_Count count, int vtype)
{
    op_policy *pol = op_policy_of(ctx);
    pol->transparent.count = count;
    pol->transparent.vtype = vtype;
    pol->transparent.skip = TRANSPARENT_SKIP;
}

static void record_route(const sparcml_op *op)
{
    const sparcml_call *c = &op->c;
    stats_record_transparent(op->set, c->ctx, c->dim, c->vtype, (stats_route)op->route,
                             op->route == ROUTE_VENDOR_LEARNT ? 0 : c->k_max, op->scan_seconds);
}

/* The bytes of this rank's input stream (nnz nonzeros). */
static uint64_t input_bytes(const sparcml_call *c, uint64_t nnz)
{
    return sparcml_prefers_dense(c->dim, c->vtype, nnz) ? sparcml_dense_bytes(c->dim, c->vtype)
                                                        : sparcml_sparse_bytes(c->dim, c->vtype, nnz);
}

/* --- the vendor on the application's buffers, over the private duplicate */

static int vendor_done(sched *s)
{
    sparcml_op *op = op_of(s);
    record_route(op);
    op->result = MPI_SUCCESS;
    return MPI_SUCCESS;
}

static int vendor(sched *s, stats_route route)
{
    sparcml_op *op = op_of(s);
    op->route = route;
    sched_next(s, vendor_done);
    return sched_vendor_allreduce(s, op->sendbuf, op->recvbuf, op->count, op->datatype, op->mop);
}

/* --- the sparse route --------------------------------------------------- */

/* The sum is in the result pool: write it into the application's buffer. */
static int sparse_done(sched *s)
{
    sparcml_op *op = op_of(s);
    sv result;
    op_conclude(op);
    if (op->result != MPI_SUCCESS) return MPI_SUCCESS;
    result = stream_view(op->c.recvbuf);
    stream_densify(&result, op->recvbuf);
    op->route = ROUTE_SPARSE;
    record_route(op);
    return MPI_SUCCESS;
}

static int transparent_agreed(sched *s)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    sparcml_problem p = op_problem(op);
    op->alg = select_transparent(op->set, &p);
    if (op->alg == SPARCML_ALG_DENSE) {
        learn_vendor(c->ctx, op->count, c->vtype);
        return vendor(s, ROUTE_VENDOR_MODEL);
    }
    /* Both pools were reserved at these sizes before the agreement. */
    c->input = stream_from_values(&c->input, op->local.nnz,
                                  ctx_buffer(c->ctx, POOL_DENSE_IN, input_bytes(c, op->local.nnz)));
    c->recvbuf = ctx_buffer(c->ctx, POOL_DENSE_OUT, c->recv_bytes);
    return op_run(s, &p, sparse_done);
}

/* The prologue: the learnt vendor choice, or this rank's scan and its
 * scratch, then the agreement. */
static int transparent_begin(sched *s)
{
    sparcml_op *op = op_of(s);
    sparcml_call *c = &op->c;
    sparcml_local *local = &op->local;
    const void *in = op->sendbuf == MPI_IN_PLACE ? op->recvbuf : op->sendbuf;
    double t0;
    if (skipping(c->ctx, op->count, c->vtype)) return vendor(s, ROUTE_VENDOR_LEARNT);
    /* The count is the dimension: a mismatch is named as a count's. */
    *local = (sparcml_local){.vtype = c->vtype, .count = op->count};
    if (!op->recvbuf || !op->sendbuf) local->reason = SPARCML_R_NULL_BUFFER;
    else if (op->sendbuf == op->recvbuf) local->reason = SPARCML_R_ALIASED;
    if (local->reason != SPARCML_R_OK) return op_agree(s, transparent_agreed);
    t0 = PMPI_Wtime();
    c->input = stream_dense_view(in, c->dim, c->vtype);
    local->nnz = stream_count_nonzero(&c->input, 0, c->dim);
    op->scan_seconds = PMPI_Wtime() - t0;
    if (!ctx_buffer(c->ctx, POOL_DENSE_IN, input_bytes(c, local->nnz))
        || !ctx_buffer(c->ctx, POOL_DENSE_OUT, c->recv_bytes))
        local->reason = SPARCML_R_NOMEM;
    return op_agree(s, transparent_agreed);
}

const sparcml_op_kind sparcml_op_transparent = {.fill = op_fill_dense, .begin = transparent_begin};
