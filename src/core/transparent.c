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
 *    algorithm into pooled scratch, and writes the dense result.  Every
 *    zero (either sign) is +0.0 and contributes nothing; NaN and Inf are
 *    nonzeros and add as IEEE values; results are bitwise identical on all
 *    ranks (as every sparcml result).
 *  - Failures (count or datatype differing across ranks, aliased buffers)
 *    are agreed and reported on every rank as for tagged calls. */
#include "config.h"

#include <limits.h>

#include "core/op.h"
#include "base/mpi_flavour.h"
#include "core/select.h"
#include "core/stats.h"
#include "core/iallreduce.h"
#include "core/transparent.h"

/* Calls that go straight to the vendor after an agreed vendor choice. */
enum { TRANSPARENT_SKIP = 15 };

/* The vendor, through the entry point the count fits (the int one is the
 * cheaper in MPICH for small calls). */
static int vendor(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm)
{
    if (count >= 0 && count <= INT_MAX) return PMPI_Allreduce(sendbuf, recvbuf, (int)count, datatype, op, comm);
    return flv_allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

/* Only arguments MPI requires to be the same on every rank decide. */
static int qualifies(const sparcml_settings *s, MPI_Count count, int vtype, MPI_Op op, MPI_Comm comm)
{
    int inter = 0;
    if (op != MPI_SUM || count <= 0 || (uint64_t)count > SPARCML_MAX_DIM) return 0;
    if ((uint64_t)count * sparcml_value_size(vtype) < s->transparent_min_bytes) return 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return 0;
    return !inter;
}

static int skipping(sparcml_ctx *ctx, MPI_Count count, int vtype)
{
    if (ctx->transparent.skip == 0 || ctx->transparent.count != count || ctx->transparent.vtype != vtype)
        return 0;
    ctx->transparent.skip--;
    return 1;
}

static void learn_vendor(sparcml_ctx *ctx, MPI_Count count, int vtype)
{
    ctx->transparent.count = count;
    ctx->transparent.vtype = vtype;
    ctx->transparent.skip = TRANSPARENT_SKIP;
}

/* This rank's verdict on its buffers; its nonzeros in *nnz. */
static int scan(const void *sendbuf, void *recvbuf, MPI_Count count, int vtype, sv *values, uint64_t *nnz)
{
    if (!recvbuf || !sendbuf) return SPARCML_R_NULL_BUFFER;
    if (sendbuf == recvbuf) return SPARCML_R_ALIASED;
    *values = stream_dense_view(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, (uint64_t)count, vtype);
    *nnz = stream_count_nonzero(values, 0, (uint64_t)count);
    return SPARCML_R_OK;
}

/* Build the input stream, run alg into a pool buffer, write the dense
 * result into recvbuf. */
static int run_sparse(const sparcml_settings *s, sparcml_call *c, const sparcml_agreed *a, MPI_Comm comm,
                      sparcml_algorithm alg, const sv *values, uint64_t nnz, void *recvbuf)
{
    uint64_t in_bytes = sparcml_prefers_dense(c->dim, c->vtype, nnz)
                            ? sparcml_dense_bytes(c->dim, c->vtype)
                            : sparcml_sparse_bytes(c->dim, c->vtype, nnz);
    void *in = ctx_buffer(c->ctx, POOL_TRANSPARENT_IN, in_bytes);
    sv result;
    int rc;
    c->recvbuf = ctx_buffer(c->ctx, POOL_TRANSPARENT_OUT, c->recv_bytes);
    if (!in || !c->recvbuf) {
        rc = CALL_NOMEM(c);
        PMPI_Comm_call_errhandler(comm, rc);
        return rc;
    }
    c->input = stream_from_values(values, nnz, in);
    rc = sparcml_run(s, c, a, comm, alg);
    if (rc != MPI_SUCCESS) return rc; /* reported */
    result = stream_view(c->recvbuf);
    stream_densify(&result, recvbuf);
    return MPI_SUCCESS;
}

int sparcml_transparent_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count,
                                  MPI_Datatype datatype, int vtype, MPI_Op op, MPI_Comm comm)
{
    const sparcml_settings *s = settings_get();
    sparcml_local local = {.reason = SPARCML_R_OK};
    sparcml_call c = {.dim = (uint64_t)count, .vtype = vtype};
    sparcml_agreed agreed;
    sparcml_problem p;
    sparcml_algorithm alg;
    sv values = sv_absent();
    uint64_t nnz = 0;
    int rank, rc;
    double scan_seconds;
    if (!qualifies(s, count, vtype, op, comm)) return vendor(sendbuf, recvbuf, count, datatype, op, comm);
    rc = ctx_get(comm, &c.ctx);
    if (rc != MPI_SUCCESS) {
        PMPI_Comm_call_errhandler(comm, rc);
        return rc;
    }
    sparcml_request_drain(c.ctx); /* the communicator's non-blocking calls first */
    if (skipping(c.ctx, count, vtype)) {
        stats_record_transparent(s, c.ctx, c.dim, vtype, ROUTE_VENDOR_LEARNT, 0, 0);
        return vendor(sendbuf, recvbuf, count, datatype, op, comm);
    }
    rank = c.ctx->rank;
    scan_seconds = PMPI_Wtime();
    local.reason = scan(sendbuf, recvbuf, count, vtype, &values, &nnz);
    scan_seconds = PMPI_Wtime() - scan_seconds;
    local.dim = 0; /* the count is the dimension: a mismatch is named as a count's */
    local.vtype = vtype;
    local.count = count;
    local.nnz = nnz;
    local.settings_hash = s->hash;
    sparcml_call_quantization(&c, s);
    rc = sparcml_agree(&c, &local, &agreed);
    if (rc != MPI_SUCCESS) {
        PMPI_Comm_call_errhandler(comm, rc);
        return rc;
    }
    if (agreed.reason != SPARCML_R_OK) return sparcml_fail(comm, rank, &agreed, local.reason, NULL);
    c.k_max = agreed.k_max;
    c.k_sum = agreed.k_sum;
    c.recv_bytes = (uint64_t)sparcml_capacity(c.dim, vtype) * 8;
    p = sparcml_problem_of(&c, &agreed);
    alg = select_transparent(s, &p);
    if (alg == SPARCML_ALG_DENSE) {
        learn_vendor(c.ctx, count, vtype);
        stats_record_transparent(s, c.ctx, c.dim, vtype, ROUTE_VENDOR_MODEL, c.k_max, scan_seconds);
        return vendor(sendbuf, recvbuf, count, datatype, op, comm);
    }
    rc = run_sparse(s, &c, &agreed, comm, alg, &values, nnz, recvbuf);
    if (rc == MPI_SUCCESS)
        stats_record_transparent(s, c.ctx, c.dim, vtype, ROUTE_SPARSE, c.k_max, scan_seconds);
    return rc;
}
