/* mpi_flavour.h -- what differs between the MPI libraries, in one place.
 *
 * MPICH 4 has the MPI-4 large-count functions (MPI_Allreduce_c, ...); Open
 * MPI 4.1 has none.  The library counts in MPI_Count everywhere and calls
 * these wrappers: with the _c functions they pass straight through;
 * without them a count that fits an int goes to the int function, a larger
 * allreduce is done in chunks of at most INT_MAX elements (elementwise ops
 * only: the library never uses another), and a larger byte message travels
 * as 8-byte words.  An allgather whose counts or displacements do not fit
 * an int and are not whole words fails with MPI_ERR_COUNT (sparcml(7),
 * LIMITATIONS).  configure detects which case applies (HAVE_PMPI_ALLREDUCE_C). */
#ifndef SPARCML_MPI_FLAVOUR_H
#define SPARCML_MPI_FLAVOUR_H

#include <mpi.h>

/* PMPI_Allreduce with an elementwise op. */
int flv_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm);

/* Point-to-point messages of `bytes` bytes. */
int flv_send_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm);
int flv_isend_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm, MPI_Request *req);

/* The size in bytes of a matched message, and receiving it. */
int flv_message_bytes(const MPI_Status *status, MPI_Count *bytes);
int flv_mrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg);

/* PMPI_Allgatherv of bytes (sendbuf may be MPI_IN_PLACE). */
int flv_allgatherv_bytes(const void *sendbuf, MPI_Count sendbytes, void *recvbuf, const MPI_Count *counts,
                         const MPI_Aint *displs, MPI_Comm comm);

/* The MPI-3 stand-ins behind the wrappers where the _c functions are
 * missing, with the int limit (INT_MAX there) as a parameter so that
 * tests/mpi/flavour.c exercises the chunks and words with small limits in
 * either build. */
int flv3_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Count limit);
int flv3_send_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm, MPI_Count limit);
int flv3_isend_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm, MPI_Request *req,
                     MPI_Count limit);
int flv3_mrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg, MPI_Count limit);
int flv3_allgatherv_bytes(const void *sendbuf, MPI_Count sendbytes, void *recvbuf, const MPI_Count *counts,
                          const MPI_Aint *displs, MPI_Comm comm, MPI_Count limit);

#endif
