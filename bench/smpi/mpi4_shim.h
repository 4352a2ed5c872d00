/* mpi4_shim.h -- the MPI-4 large-count calls the library uses, for SimGrid
 * SMPI 3.32 (Debian 12), which has none of them.  Only for the simulated
 * build of scripts/smpi_sweep.sh (force-included with -include); the real
 * library builds against MPICH and never sees this file.  Each call maps to
 * its int-count MPI-3 form; a count that does not fit an int is
 * MPI_ERR_COUNT (the simulated problems stay far below 2^31 bytes).
 * SMPI 3.32 also declares MPI_Mprobe, MPI_Mrecv and MPI_Comm_test_inter
 * but aborts in them ("Not yet implemented: PMPI_Mprobe"); they are
 * replaced here too (below).  To be replaced by the MPI-flavour module
 * once it exists. */
#ifndef SPARCML_SMPI_MPI4_SHIM_H
#define SPARCML_SMPI_MPI4_SHIM_H

#include <limits.h>
#include <stdlib.h>

#include <mpi.h>

/* smpi_helpers.h turns nanosleep into a two-argument macro, which splits
 * interpose.c's compound literal {0, 300000000} at its comma; the library
 * sleeps only before aborting on a bad setting, so the real call will do. */
#undef nanosleep

#define SHIM_COUNT_OK(c) ((c) >= 0 && (c) <= INT_MAX)

static inline int PMPI_Allreduce_c(const void *s, void *r, MPI_Count n, MPI_Datatype t, MPI_Op op,
                                   MPI_Comm comm)
{
    return SHIM_COUNT_OK(n) ? PMPI_Allreduce(s, r, (int)n, t, op, comm) : MPI_ERR_COUNT;
}

/* interpose.c defines MPI_Allreduce_c; SMPI's mpi.h does not declare it. */
int MPI_Allreduce_c(const void *s, void *r, MPI_Count n, MPI_Datatype t, MPI_Op op, MPI_Comm comm);

static inline int PMPI_Send_c(const void *b, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
    return SHIM_COUNT_OK(n) ? PMPI_Send(b, (int)n, t, dest, tag, comm) : MPI_ERR_COUNT;
}

static inline int PMPI_Isend_c(const void *b, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
                               MPI_Request *req)
{
    return SHIM_COUNT_OK(n) ? PMPI_Isend(b, (int)n, t, dest, tag, comm, req) : MPI_ERR_COUNT;
}

static inline int PMPI_Get_count_c(const MPI_Status *st, MPI_Datatype t, MPI_Count *n)
{
    int k = 0, rc = PMPI_Get_count(st, t, &k);
    *n = k;
    return rc;
}

static inline int PMPI_Type_size_c(MPI_Datatype t, MPI_Count *size)
{
    int s = 0, rc = PMPI_Type_size(t, &s);
    *size = s;
    return rc;
}

static inline int PMPI_Type_get_extent_c(MPI_Datatype t, MPI_Count *lb, MPI_Count *extent)
{
    MPI_Aint l = 0, e = 0;
    int rc = PMPI_Type_get_extent(t, &l, &e);
    *lb = l;
    *extent = e;
    return rc;
}

/* Counts and displacements converted to int arrays (P entries each). */
static inline int PMPI_Allgatherv_c(const void *s, MPI_Count sn, MPI_Datatype st, void *r,
                                    const MPI_Count counts[], const MPI_Aint displs[], MPI_Datatype rt,
                                    MPI_Comm comm)
{
    int P = 0, rc;
    int *ic, *id;
    if (!SHIM_COUNT_OK(sn) || PMPI_Comm_size(comm, &P) != MPI_SUCCESS) return MPI_ERR_COUNT;
    ic = malloc(sizeof(int) * (size_t)P * 2);
    if (!ic) return MPI_ERR_NO_MEM;
    id = ic + P;
    for (int i = 0; i < P; i++) {
        if (!SHIM_COUNT_OK(counts[i]) || !SHIM_COUNT_OK(displs[i])) { free(ic); return MPI_ERR_COUNT; }
        ic[i] = (int)counts[i];
        id[i] = (int)displs[i];
    }
    rc = PMPI_Allgatherv(s, (int)sn, st, r, ic, id, rt, comm);
    free(ic);
    return rc;
}

/* Matched probe as probe + receive from the probed source and tag: the
 * same message in a single-threaded rank (MPI keeps the order of messages
 * between a pair on one communicator and tag), which is how the library
 * runs under SMPI.  The message handle carries source, tag and communicator
 * from the probe to the receive. */
typedef struct {
    int source, tag;
    MPI_Comm comm;
} shim_message;

static inline int shim_mprobe(int src, int tag, MPI_Comm comm, MPI_Message *msg, MPI_Status *st)
{
    shim_message *m;
    int rc = PMPI_Probe(src, tag, comm, st);
    if (rc != MPI_SUCCESS) return rc;
    m = malloc(sizeof *m);
    if (!m) return MPI_ERR_NO_MEM;
    *m = (shim_message){.source = st->MPI_SOURCE, .tag = st->MPI_TAG, .comm = comm};
    *msg = m;
    return MPI_SUCCESS;
}

static inline int shim_mrecv(void *b, int n, MPI_Datatype t, MPI_Message *msg, MPI_Status *st)
{
    shim_message *m = *msg;
    int rc = PMPI_Recv(b, n, t, m->source, m->tag, m->comm, st);
    free(m);
    *msg = MPI_MESSAGE_NULL;
    return rc;
}
static inline int shim_imrecv(void *b, int n, MPI_Datatype t, MPI_Message *msg, MPI_Request *req)
{
    shim_message *m = *msg;
    int rc = PMPI_Irecv(b, n, t, m->source, m->tag, m->comm, req);
    free(m);
    *msg = MPI_MESSAGE_NULL;
    return rc;
}
#define PMPI_Mprobe shim_mprobe
#define PMPI_Mrecv shim_mrecv
#define PMPI_Imrecv shim_imrecv

static inline int PMPI_Mrecv_c(void *b, MPI_Count n, MPI_Datatype t, MPI_Message *m, MPI_Status *st)
{
    return SHIM_COUNT_OK(n) ? shim_mrecv(b, (int)n, t, m, st) : MPI_ERR_COUNT;
}

/* SMPI 3.32 declares MPI_Get_elements_x but aborts in it ("Not yet
 * implemented"); the library asks it for byte counts only (below 2^31 in
 * the simulations). */
static inline int shim_get_elements_x(const MPI_Status *st, MPI_Datatype t, MPI_Count *n)
{
    int k = 0, rc = PMPI_Get_count(st, t, &k);
    *n = k;
    return rc;
}
#define PMPI_Get_elements_x shim_get_elements_x

/* SMPI has no inter-communicators. */
static inline int shim_comm_test_inter(MPI_Comm comm, int *flag)
{
    (void)comm;
    *flag = 0;
    return MPI_SUCCESS;
}
#define PMPI_Comm_test_inter shim_comm_test_inter

/* SMPI 3.32 declares the string of MPI_Add_error_string without const. */
#define PMPI_Add_error_string(code, string) PMPI_Add_error_string((code), (char *)(string))

#endif
