/* mpi_flavour.h -- what differs between the MPI libraries, in one place.
 *
 * MPICH 4 has the MPI-4 large-count functions (MPI_Allreduce_c, ...); Open
 * MPI 4.1 has none.  The library counts in MPI_Count everywhere and calls
 * these wrappers: with the _c functions they pass straight through;
 * without them a count that fits an int goes to the int function, a larger
 * allreduce is done in chunks of at most INT_MAX elements (elementwise ops
 * only: the library never uses another), and a larger byte message travels
 * in blocks of INT_MAX bytes and the rest (exactly its bytes).  An
 * allgather whose counts or displacements do not fit an int and are not
 * whole words fails with MPI_ERR_COUNT (sparcml(7), LIMITATIONS).
 * configure detects which case applies (HAVE_PMPI_ALLREDUCE_C).  What the
 * vendors' collectives do that the cost model prices is here too
 * (flv_allgather_ring_bytes). */
#ifndef SPARCML_MPI_FLAVOUR_H
#define SPARCML_MPI_FLAVOUR_H

#include <mpi.h>
#include <stdint.h>
#if HAVE_PMPIX_ALLREDUCE_INIT
#include <mpi-ext.h> /* Open MPI's MPIX_Allreduce_init */
#endif

/* The library is built for one MPI, and its compiled-in handles
 * (MPI_COMM_WORLD, MPI_BYTE, ...) mean something to that MPI only: MPICH's
 * are integers, Open MPI's addresses of its objects.  Preloaded into a
 * program of the other MPI, the process holds both libraries, the shim's
 * PMPI_* calls reach the program's MPI, and the first handle it passes
 * crashes there or is rejected.  Called when the shim is loaded and first
 * in its MPI_Init and MPI_Init_thread, before any handle reaches any MPI:
 * when an MPI library of the other kind is loaded in the process, prints
 * one line naming both MPIs and the library to preload instead (from the
 * launcher's rank 0 only) and ends the process with status 1; otherwise it
 * returns (a look at the loaded objects, well under a millisecond). */
void flv_require_own_mpi(void);

/* Whether an error handler aborts the job: MPI_ERRORS_ARE_FATAL, and
 * MPI-4's MPI_ERRORS_ABORT where the MPI has it (MPICH 4; not Open MPI
 * 4.1). */
static inline int flv_errhandler_aborts(MPI_Errhandler eh)
{
#ifdef MPI_ERRORS_ABORT
    if (eh == MPI_ERRORS_ABORT) return 1;
#endif
    return eh == MPI_ERRORS_ARE_FATAL;
}

/* The fewest bytes in all the vendor's MPI_Allgather(v) gathers by a ring
 * of P - 1 rounds; below them in ceil(log2 P) rounds (recursive doubling,
 * Bruck's), as the cost model prices it (alg/cost_model.c).  MPICH 4.0's
 * default selection: 512 KiB where P is a power of two, 80 KiB otherwise.
 * Open MPI 4.1 runs a ring or neighbour exchange (P/2 rounds) from a few
 * KiB per rank.  MPICH's rule is the one given for both: its P - 1
 * rounds are also the upper bound of Open MPI's. */
uint64_t flv_allgather_ring_bytes(int P);

/* PMPI_Allreduce with an elementwise op. */
int flv_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm);

/* Point-to-point messages of `bytes` bytes (the receive for at most that
 * many, at any size). */
int flv_isend_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm, MPI_Request *req);
int flv_irecv_bytes(void *buf, MPI_Count bytes, int src, int tag, MPI_Comm comm, MPI_Request *req);

/* The size in bytes of a matched message, and receiving it. */
int flv_message_bytes(const MPI_Status *status, MPI_Count *bytes);
int flv_mrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg);

/* PMPI_Allgatherv of bytes (sendbuf may be MPI_IN_PLACE). */
int flv_allgatherv_bytes(const void *sendbuf, MPI_Count sendbytes, void *recvbuf, const MPI_Count *counts,
                         const MPI_Aint *displs, MPI_Comm comm);

/* Non-blocking forms (schedule.c).  The in-place allreduce may take
 * several requests (chunks) in reqs[0..max_reqs): *nreqs of them, or
 * MPI_ERR_COUNT when it would need more; the allgatherv needs `ints`, room
 * for 2 P ints that must live until it completes (Open MPI's int counts). */
int flv_imrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg, MPI_Request *req);
int flv_iallreduce(void *buf, MPI_Count count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *reqs,
                   int max_reqs, int *nreqs);
int flv_iallgatherv_bytes(const void *sendbuf, MPI_Count sendbytes, void *recvbuf, const MPI_Count *counts,
                          const MPI_Aint *displs, MPI_Comm comm, int *ints, MPI_Request *req);

/* Non-blocking calls of the library are generalized requests whose
 * completion calls (MPI_Wait, MPI_Test, ... on them) run the caller's
 * progress function; query and free are the generalized request's.
 * FLV_HAVE_NONBLOCKING says whether this MPI offers such a hook: MPICH's
 * MPIX_Grequest_class; with Open MPI 4.1 a plain generalized request and a
 * callback of Open MPI's progress engine (opal_progress_register).
 * Elsewhere the library's non-blocking calls go to the vendor.  Every call
 * of a process passes the same functions (the first call's are kept). */
#if HAVE_MPIX_GREQUEST_CLASS || defined(OPEN_MPI)
enum { FLV_HAVE_NONBLOCKING = 1 };
#else
enum { FLV_HAVE_NONBLOCKING = 0 };
#endif
typedef struct flv_grequest_fns {
    MPI_Grequest_query_function *query;
    MPI_Grequest_free_function *free;
    void (*progress)(void);
} flv_grequest_fns;
int flv_grequest_start(void *state, const flv_grequest_fns *fns, MPI_Request *req);

/* The vendor's non-blocking allreduce at any count (where the MPI cannot
 * take it, MPI_ERR_COUNT). */
int flv_iallreduce_vendor(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                          MPI_Comm comm, MPI_Request *req);

/* The MPI-3 stand-ins behind the wrappers where the _c functions are
 * missing, with the int limit (INT_MAX there) as a parameter so that
 * tests/mpi/flavour.c exercises the chunks, blocks and words with small limits in
 * either build. */
int flv3_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Count limit);
int flv3_isend_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm, MPI_Request *req,
                     MPI_Count limit);
int flv3_irecv_bytes(void *buf, MPI_Count bytes, int src, int tag, MPI_Comm comm, MPI_Request *req,
                     MPI_Count limit);
int flv3_mrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg, MPI_Count limit);
int flv3_allgatherv_bytes(const void *sendbuf, MPI_Count sendbytes, void *recvbuf, const MPI_Count *counts,
                          const MPI_Aint *displs, MPI_Comm comm, MPI_Count limit);
int flv3_imrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg, MPI_Request *req, MPI_Count limit);
int flv3_iallreduce(void *buf, MPI_Count count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *reqs,
                    int max_reqs, int *nreqs, MPI_Count limit);
int flv3_iallgatherv_bytes(const void *sendbuf, MPI_Count sendbytes, void *recvbuf, const MPI_Count *counts,
                           const MPI_Aint *displs, MPI_Comm comm, int *ints, MPI_Request *req, MPI_Count limit);

#endif
