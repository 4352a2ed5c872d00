/* bare_interposer.c -- the floor of any LD_PRELOAD interposer: a preload
 * whose MPI_Allreduce, MPI_Iallreduce and MPI_Wait only call the vendor's
 * PMPI_ functions (built with -fno-plt, each is one jump through the GOT).
 * scripts/bench_passthrough.sh times the library against it: what the
 * library's test adds beyond the hop every interposer takes. */
#include <mpi.h>

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request *request)
{
    return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    return PMPI_Wait(request, status);
}
