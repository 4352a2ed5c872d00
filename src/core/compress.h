/* compress.h -- SPARCML_COMPRESS: the kind of op (op.h) that sums untagged
 * dense float and double gradients sparsified with error feedback
 * (compress.c explains the contract). */
#ifndef SPARCML_COMPRESS_H
#define SPARCML_COMPRESS_H

#include <mpi.h>
#include <stdint.h>

#include "core/op.h"

/* Whether a call on a predefined type (value type vtype) is compressed:
 * decided only by arguments MPI requires to be the same on every rank. */
int compress_qualifies(MPI_Count count, int vtype, MPI_Op op, MPI_Comm comm);

/* Entries each rank contributes for n values: ceil(density * n), at least
 * 1 and at most n. */
uint64_t compress_k(uint64_t n, double density);

/* sparcml_compress_residual (sparcml(7)): copy what this rank holds back
 * of the buffer (recvbuf, count, datatype) on comm into out, once the
 * communicator's pending calls have completed.  MPI_ERR_ARG when it holds
 * nothing for it. */
int compress_residual(MPI_Comm comm, const void *recvbuf, MPI_Count count, MPI_Datatype datatype, void *out);

#endif
