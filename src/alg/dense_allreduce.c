/* dense_allreduce.c -- the dense path: the vendor's MPI_Allreduce.
 *
 * Algorithm: each rank expands its stream into a dense vector and the
 *   vendor's MPI_Allreduce sums it (Rabenseifner or recursive doubling, the
 *   vendor's choice).  Chosen when the cost model predicts that the sum is
 *   (or quickly becomes) dense enough that index overhead and merging cost
 *   more than they save.  The result must still follow the size rule: when
 *   no rank's input alone makes it dense (k_max), the ranks' index sets are
 *   OR-ed as bitmaps (N/8 bytes, one more vendor allreduce), and a union
 *   whose sparse form is smaller makes the result sparse.
 * Restrictions (dense_allreduce_restriction): recvbuf holds the dense
 *   vector (else MPI_ERR_TRUNCATE on every rank before anything is
 *   expanded: a stream's dimension may be far beyond what a rank can hold).
 *   A sparse result is summed densely in a pool buffer of the same size.
 * Cost (dense_allreduce_cost): the vendor's min(ceil(log2 P) (alpha + beta
 *   D + g D), 2 ceil(log2 P) alpha + (P-1)/P (2 beta D + g D)), its adds
 *   g = COST_COPY_PER_MERGE gamma / 8 per byte (cost_vendor_allreduce),
 *   plus the same for D/(8 vs) bytes of bitmap when the format is not
 *   certain.
 * Memory (dense_allreduce_scratch): recvbuf; a pool copy of a sparse
 *   input under MPI_IN_PLACE; the bitmap and a dense pool vector when the
 *   result's format is not certain.  At most 1.1 D (the row's
 *   memory_bound; D the dense result): a bitmap of D/32 for floats beside
 *   the dense vector, and the vendor's own scratch varies from call to call.
 * Rounds: the vendor's; twice when the format is not certain. */
#include "config.h"

#include <math.h>

#include <string.h>

#include "alg/algorithms.h"

typedef struct dense_state {
    uint64_t *present, n;
    sv out;
} dense_state;
SCHED_STATE_FITS(dense_state);

static MPI_Datatype mpi_value_type(int vtype)
{
    switch (vtype) {
    case SPARCML_FLOAT: return MPI_FLOAT;
    case SPARCML_DOUBLE: return MPI_DOUBLE;
    case SPARCML_INT32: return MPI_INT32_T;
    default: return MPI_INT64_T;
    }
}

static int summed(sched *s)
{
    dense_state *st = sched_state(s);
    sparcml_call *c = s->c;
    if (st->present) st->out = stream_select(&st->out, st->present, st->n, c->recvbuf);
    c->result_nnz = st->out.nnz;
    c->result_dense = st->out.dense;
    return MPI_SUCCESS;
}

/* The dense sum into a dense stream at buf. */
static int dense_sum(sched *s, void *buf)
{
    dense_state *st = sched_state(s);
    sparcml_call *c = s->c;
    sv src = c->input;
    /* Under MPI_IN_PLACE a sparse input would be overwritten while it is
     * being expanded into recvbuf: expand from a copy. */
    if (src.base == buf && !src.dense) {
        void *copy = ctx_buffer(c->ctx, POOL_SEND, stream_bytes(&src));
        if (!copy) return call_nomem(c);
        src = stream_copy(&src, copy);
    }
    st->out = stream_init(buf, c->dim, c->vtype, c->dim, 1);
    stream_densify(&src, st->out.val);
    sched_next(s, summed);
    return sched_allreduce(s, st->out.val, (MPI_Count)c->dim, mpi_value_type(c->vtype), MPI_SUM);
}

/* The union is known (or the result is dense anyway): sum. */
static int union_known(sched *s)
{
    dense_state *st = sched_state(s);
    sparcml_call *c = s->c;
    void *buf;
    if (st->present) st->n = stream_count_present(st->present, c->dim);
    /* recvbuf holds the dense vector (the restriction), so it holds the
     * smaller sparse result too. */
    if (!sparcml_prefers_dense(c->dim, c->vtype, st->n)) {
        buf = ctx_buffer(c->ctx, POOL_ACC0, sparcml_dense_bytes(c->dim, c->vtype));
        if (!buf) return call_nomem(c);
        return dense_sum(s, buf);
    }
    st->present = NULL;
    return dense_sum(s, c->recvbuf);
}

static int sparcml_dense_allreduce(sched *s)
{
    dense_state *st = sched_state(s);
    sparcml_call *c = s->c;
    uint64_t bytes = stream_presence_bytes(c->dim);
    *st = (dense_state){.n = c->dim};
    /* Every rank has the same k_max, and then the same union: the OR of
     * every rank's index bitmap, in POOL_PRESENCE. */
    if (sparcml_prefers_dense(c->dim, c->vtype, c->k_max)) return union_known(s);
    st->present = ctx_buffer(c->ctx, POOL_PRESENCE, bytes);
    if (!st->present) return call_nomem(c);
    memset(st->present, 0, bytes);
    stream_mark_present(&c->input, st->present); /* sparse: k_max says so */
    sched_next(s, union_known);
    return sched_allreduce(s, st->present, (MPI_Count)(bytes / sizeof(uint64_t)), MPI_UINT64_T, MPI_BOR);
}

/* The dense vector must fit the recv buffer: it is never expanded anywhere
 * else (a stream's dimension may be far beyond what any rank can hold). */
static int dense_allreduce_restriction(const sparcml_problem *p)
{
    return p->dense_fits ? SPARCML_R_OK : SPARCML_R_CAPACITY;
}

/* When the format is uncertain the index sets are OR-ed as bitmaps first
 * (N/8 bytes) and a sparse result is selected out of the dense sum. */
static double dense_allreduce_cost(const cost_model *m, const sparcml_problem *p)
{
    double N = (double)p->dim, D = N * sparcml_value_size(p->vtype);
    double bitmap = cost_format_uncertain(p)
                        ? cost_vendor_allreduce(m, p, N / 8) + COST_COPY_PER_MERGE * m->gamma * N : 0;
    return cost_vendor_allreduce(m, p, D) + bitmap + m->gamma * (double)p->k_max;
}

static void dense_allreduce_scratch(const sparcml_call *c, const sparcml_problem *p, uint64_t *need)
{
    (void)c;
    scratch_need(need, POOL_SEND, scratch_input_bytes(p));
    if (sparcml_prefers_dense(p->dim, p->vtype, p->k_max)) return;
    scratch_need(need, POOL_PRESENCE, stream_presence_bytes(p->dim));
    scratch_need(need, POOL_ACC0, sparcml_dense_bytes(p->dim, p->vtype));
}

const sparcml_algorithm_desc sparcml_alg_dense_allreduce = {
    .name = "dense",
    .memory_bound = 1.1,
    .first = sparcml_dense_allreduce,
    .restriction = dense_allreduce_restriction,
    .cost = dense_allreduce_cost,
    .scratch = dense_allreduce_scratch,
};
