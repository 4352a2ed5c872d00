/* mpi_flavour.c -- see mpi_flavour.h. */
#include "config.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

#include "mpi_flavour.h"

/* MPI-3 functions both libraries have. */
int flv_message_bytes(const MPI_Status *status, MPI_Count *bytes)
{
    return PMPI_Get_elements_x(status, MPI_BYTE, bytes);
}

/* --- the MPI-3 stand-ins, their int limit a parameter (tests/mpi/flavour.c
 * runs them with small limits in either build) ---------------------------- */

/* 8 bytes as one element, for messages beyond the limit. */
static MPI_Datatype word_type = MPI_DATATYPE_NULL;
static pthread_once_t word_once = PTHREAD_ONCE_INIT;

static void word_create(void)
{
    MPI_Datatype t;
    if (PMPI_Type_contiguous(8, MPI_BYTE, &t) == MPI_SUCCESS && PMPI_Type_commit(&t) == MPI_SUCCESS)
        word_type = t;
}

/* A byte count as (count, type): bytes, or whole words beyond the limit
 * (the buffers involved are padded to words: pool buffers and the
 * application's count * 8-byte stream buffers). */
static int as_elements(MPI_Count bytes, MPI_Count limit, int *count, MPI_Datatype *type)
{
    if (bytes <= limit) {
        *count = (int)bytes;
        *type = MPI_BYTE;
        return MPI_SUCCESS;
    }
    pthread_once(&word_once, word_create);
    if (word_type == MPI_DATATYPE_NULL || (bytes + 7) / 8 > limit) return MPI_ERR_COUNT;
    *count = (int)((bytes + 7) / 8);
    *type = word_type;
    return MPI_SUCCESS;
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
    return rc == MPI_SUCCESS ? PMPI_Send(buf, n, t, dest, tag, comm) : rc;
}

int flv3_isend_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm, MPI_Request *req,
                     MPI_Count limit)
{
    int n, rc;
    MPI_Datatype t;
    rc = as_elements(bytes, limit, &n, &t);
    return rc == MPI_SUCCESS ? PMPI_Isend(buf, n, t, dest, tag, comm, req) : rc;
}

int flv3_mrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg, MPI_Count limit)
{
    int n, rc;
    MPI_Datatype t;
    rc = as_elements(bytes, limit, &n, &t);
    return rc == MPI_SUCCESS ? PMPI_Mrecv(buf, n, t, msg, MPI_STATUS_IGNORE) : rc;
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
    if (unit == 8) {
        pthread_once(&word_once, word_create);
        if (word_type == MPI_DATATYPE_NULL) return MPI_ERR_COUNT;
        t = word_type;
    }
    c = malloc(2 * (size_t)P * sizeof *c);
    if (!c) return MPI_ERR_NO_MEM;
    d = c + P;
    for (int r = 0; r < P; r++) {
        c[r] = (int)(counts[r] / unit);
        d[r] = (int)(displs[r] / unit);
    }
    rc = PMPI_Allgatherv(sendbuf, (int)(sendbytes / unit), t, recvbuf, c, d, t, comm);
    free(c);
    return rc;
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
