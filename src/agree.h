/* agree.h -- the agreement step every tagged allreduce starts with.
 *
 * One small allreduce on the private communicator combines what each rank
 * knows locally: whether its arguments are valid, dim, value type, count,
 * nnz, whether its input is dense, and a hash of its settings.  From then on
 * every rank decides from the same numbers, so all pick the same algorithm,
 * and a failure on any rank is known to all ranks together: nobody is left
 * waiting in a collective the others abandoned. */
#ifndef SPARCML_AGREE_H
#define SPARCML_AGREE_H

#include <mpi.h>
#include <stdint.h>

typedef struct sparcml_local {
    int reason; /* enum sparcml_reason found by local validation */
    uint64_t dim;
    int vtype;
    MPI_Count count;
    uint64_t nnz;
    int dense;
    uint64_t settings_hash;
    /* Nonzero values in this rank's 1/P of the previous call's result, when
     * that result was dense (0 otherwise): their sum is the previous union
     * size, for the selector's overlap estimate (allreduce.c). */
    uint64_t union_part;
} sparcml_local;

typedef struct sparcml_agreed {
    int reason;      /* first failure found on any rank (or across ranks) */
    int reason_rank; /* the rank that reported it, -1 for a mismatch */
    uint64_t dim;
    int vtype;
    MPI_Count count;
    uint64_t k_max, k_min, k_sum;
    int any_dense;
    uint64_t union_sum; /* sum of union_part */
} sparcml_agreed;

int agree(MPI_Comm comm, int rank, const sparcml_local *local, sparcml_agreed *out);

/* Free the datatype and op (at MPI_Finalize). */
void agree_finalize(void);

#endif
