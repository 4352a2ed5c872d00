/* allreduce.h -- entry point of a tagged allreduce (called by interpose.c). */
#ifndef SPARCML_ALLREDUCE_H
#define SPARCML_ALLREDUCE_H

#include <mpi.h>

/* MPI_Allreduce on a datatype tagged with value type vtype. */
int sparcml_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                      int vtype, MPI_Op op, MPI_Comm comm);

#endif
