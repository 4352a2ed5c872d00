/* mpi_flavour.c -- see mpi_flavour.h. */
#include "config.h"

#include <limits.h>
#include <stdlib.h>

#include "mpi_flavour.h"

/* MPI-3 functions both libraries have. */
int flv_message_bytes(const MPI_Status *status, MPI_Count *bytes)
{
    return PMPI_Get_elements_x(status, MPI_BYTE, bytes);
}

/* --- the MPI-3 stand-ins, their int limit a parameter (tests/mpi/flavour.c
 * runs them with small limits in either build) ---------------------------- */

/* A byte count as (count, type): bytes, or whole words beyond the limit
 * (the buffers involved are padded to words: pool buffers and the
 * application's count * 8-byte stream buffers).  A word type is made for
 * the one call and freed after it (release_type): calls that large are
 * rare and long, and no datatype outlives them. */
static int as_elements(MPI_Count bytes, MPI_Count limit, int *count, MPI_Datatype *type)
{
    int rc;
    *type = MPI_BYTE;
    if (bytes <= limit) {
        *count = (int)bytes;
        return MPI_SUCCESS;
    }
    if ((bytes + 7) / 8 > limit) return MPI_ERR_COUNT;
    *count = (int)((bytes + 7) / 8);
    rc = PMPI_Type_contiguous(8, MPI_BYTE, type);
    if (rc != MPI_SUCCESS) *type = MPI_BYTE; /* nothing to free */
    else rc = PMPI_Type_commit(type);
    return rc;
}

/* Free a word type of as_elements (a pending send keeps its own reference). */
static int release_type(MPI_Datatype *type, int rc)
{
    if (*type != MPI_BYTE) {
        int frc = PMPI_Type_free(type);
        if (rc == MPI_SUCCESS) rc = frc;
    }
    return rc;
}

int flv3_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Count limit)
{
    MPI_Aint lb, extent;
    MPI_Count done = 0;
    int rc = PMPI_Type_get_extent(type, &lb, &extent);
    if (rc != MPI_SUCCESS) return rc;
    do { /* one call for count 0 too: the vendor checks the arguments */
        int n = count - done > limit ? (int)limit : (int)(count - done);
        const void *in = sendbuf == MPI_IN_PLACE ? MPI_IN_PLACE : (const char *)sendbuf + done * extent;
        rc = PMPI_Allreduce(in, (char *)recvbuf + done * extent, n, type, op, comm);
        done += n;
    } while (rc == MPI_SUCCESS && done < count);
    return rc;
}

int flv3_send_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm, MPI_Count limit)
{
    int n, rc;
    MPI_Datatype t;
    rc = as_elements(bytes, limit, &n, &t);
    if (rc == MPI_SUCCESS) rc = PMPI_Send(buf, n, t, dest, tag, comm);
    return release_type(&t, rc);
}

int flv3_isend_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm, MPI_Request *req,
                     MPI_Count limit)
{
    int n, rc;
    MPI_Datatype t;
    rc = as_elements(bytes, limit, &n, &t);
    if (rc == MPI_SUCCESS) rc = PMPI_Isend(buf, n, t, dest, tag, comm, req);
    return release_type(&t, rc);
}

int flv3_mrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg, MPI_Count limit)
{
    int n, rc;
    MPI_Datatype t;
    rc = as_elements(bytes, limit, &n, &t);
    if (rc == MPI_SUCCESS) rc = PMPI_Mrecv(buf, n, t, msg, MPI_STATUS_IGNORE);
    return release_type(&t, rc);
}

/* Counts and displacements in one unit (bytes, or words when they are all
 * whole words); 0 when neither fits the limit. */
static int allgather_unit(const MPI_Count *counts, const MPI_Aint *displs, int P, MPI_Count limit)
{
    int bytes_fit = 1, words_fit = 1;
    for (int r = 0; r < P; r++) {
        bytes_fit &= counts[r] <= limit && displs[r] <= limit;
        words_fit &= counts[r] % 8 == 0 && displs[r] % 8 == 0 && counts[r] / 8 <= limit && displs[r] / 8 <= limit;
    }
    return bytes_fit ? 1 : words_fit ? 8 : 0;
}

int flv3_allgatherv_bytes(const void *sendbuf, MPI_Count sendbytes, void *recvbuf, const MPI_Count *counts,
                          const MPI_Aint *displs, MPI_Comm comm, MPI_Count limit)
{
    int P, unit, rc, *c, *d;
    MPI_Datatype t = MPI_BYTE;
    rc = PMPI_Comm_size(comm, &P);
    if (rc != MPI_SUCCESS) return rc;
    unit = allgather_unit(counts, displs, P, limit);
    if (unit == 0) return MPI_ERR_COUNT;
    c = malloc(2 * (size_t)P * sizeof *c);
    if (!c) return MPI_ERR_NO_MEM;
    d = c + P;
    for (int r = 0; r < P; r++) {
        c[r] = (int)(counts[r] / unit);
        d[r] = (int)(displs[r] / unit);
    }
    if (unit == 8) {
        rc = PMPI_Type_contiguous(8, MPI_BYTE, &t);
        if (rc != MPI_SUCCESS) t = MPI_BYTE;
        else rc = PMPI_Type_commit(&t);
    }
    if (rc == MPI_SUCCESS) rc = PMPI_Allgatherv(sendbuf, (int)(sendbytes / unit), t, recvbuf, c, d, t, comm);
    free(c);
    return release_type(&t, rc);
}

#if HAVE_PMPI_ALLREDUCE_C /* MPI-4 large counts (MPICH 4) */

int flv_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    return PMPI_Allreduce_c(sendbuf, recvbuf, count, type, op, comm);
}

int flv_send_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm)
{
    return PMPI_Send_c(buf, bytes, MPI_BYTE, dest, tag, comm);
}

int flv_isend_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
    return PMPI_Isend_c(buf, bytes, MPI_BYTE, dest, tag, comm, req);
}

int flv_mrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg)
{
    return PMPI_Mrecv_c(buf, bytes, MPI_BYTE, msg, MPI_STATUS_IGNORE);
}

int flv_allgatherv_bytes(const void *sendbuf, MPI_Count sendbytes, void *recvbuf, const MPI_Count *counts,
                         const MPI_Aint *displs, MPI_Comm comm)
{
    return PMPI_Allgatherv_c(sendbuf, sendbytes, MPI_BYTE, recvbuf, counts, displs, MPI_BYTE, comm);
}

#else /* MPI-3 counts (Open MPI 4.1): the stand-ins at INT_MAX */

int flv_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    return flv3_allreduce(sendbuf, recvbuf, count, type, op, comm, INT_MAX);
}

int flv_send_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm)
{
    return flv3_send_bytes(buf, bytes, dest, tag, comm, INT_MAX);
}

int flv_isend_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
    return flv3_isend_bytes(buf, bytes, dest, tag, comm, req, INT_MAX);
}

int flv_mrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg)
{
    return flv3_mrecv_bytes(buf, bytes, msg, INT_MAX);
}

int flv_allgatherv_bytes(const void *sendbuf, MPI_Count sendbytes, void *recvbuf, const MPI_Count *counts,
                         const MPI_Aint *displs, MPI_Comm comm)
{
    return flv3_allgatherv_bytes(sendbuf, sendbytes, recvbuf, counts, displs, comm, INT_MAX);
}

#endif
