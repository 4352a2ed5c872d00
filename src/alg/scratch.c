/* scratch.c -- bounds of the scratch pools (scratch.h). */
#include "config.h"

#include "alg/scratch.h"

int scratch_may_be_dense(uint64_t dim, int vtype, uint64_t entries)
{
    return entries >= dim || sparcml_prefers_dense(dim, vtype, entries);
}

/* A sum that may go dense ends at dense_bytes + 8 (stream_merge_bound);
 * one that cannot holds at most `entries` indices. */
uint64_t scratch_sum_bytes(uint64_t dim, int vtype, uint64_t entries)
{
    if (scratch_may_be_dense(dim, vtype, entries)) return sparcml_dense_bytes(dim, vtype) + 8;
    return sparcml_sparse_bytes(dim, vtype, entries);
}

/* A dense input has dim entries, and its sparse form is never smaller. */
uint64_t scratch_input_bytes(const sparcml_problem *p)
{
    return sparcml_sparse_bytes(p->dim, p->vtype, p->k_max);
}

uint64_t scratch_coded_bytes(uint64_t dim, int vtype, uint64_t entries, const qsgd_params *q, uint64_t parts)
{
    uint64_t n = scratch_may_be_dense(dim, vtype, entries) ? dim : entries;
    return qsgd_grid_bound(n, sparcml_index_width(dim), vtype, q, parts);
}

qsgd_params scratch_wire_q(const sparcml_problem *p)
{
    return (qsgd_params){.bits = p->qbits, .bucket = p->qbucket};
}
