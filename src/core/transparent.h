/* transparent.h -- SPARCML_TRANSPARENT: the kind of op (op.h) that sums
 * untagged dense buffers of predefined types (transparent.c explains the
 * contract). */
#ifndef SPARCML_TRANSPARENT_H
#define SPARCML_TRANSPARENT_H

#include <mpi.h>

#include "core/op.h"

/* Whether a call on a type transparent mode registered (value type vtype)
 * is taken over: decided only by arguments MPI requires to be the same on
 * every rank, so every rank takes the same branch.  The others go to the
 * vendor unchanged. */
int transparent_qualifies(MPI_Count count, int vtype, MPI_Op op, MPI_Comm comm);

#endif
