/* transparent.h -- SPARCML_TRANSPARENT (transparent.c explains the contract). */
#ifndef SPARCML_TRANSPARENT_H
#define SPARCML_TRANSPARENT_H

#include <mpi.h>

/* MPI_Allreduce of an untagged predefined type that transparent mode
 * registered (vtype: its value type); non-qualifying calls reach the vendor
 * unchanged. */
int sparcml_transparent_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count,
                                  MPI_Datatype datatype, int vtype, MPI_Op op, MPI_Comm comm);

#endif
