/* request.h -- non-blocking tagged allreduces as MPI requests.
 *
 * MPI_Iallreduce on a tagged type starts the call's schedule (allreduce.h)
 * and returns a generalized request (mpi_flavour.h).  Schedules advance
 * whenever the application waits for or tests one of the library's
 * requests: each such call runs one progress pass over every pending
 * schedule of every communicator -- not only the one waited for, or two
 * ranks waiting for two calls in opposite orders would wait forever.
 * Calls on one communicator run one after the other, in the order they
 * were started (the same on every rank, as MPI requires), so they share
 * the communicator's scratch and their messages never cross; a blocking
 * call first completes the communicator's pending ones.  A request freed
 * while pending is completed by the library all the same (its peers wait
 * for its messages), at the latest in MPI_Finalize or when its
 * communicator is freed.  With SPARCML_PROGRESS_US a thread of the library
 * runs a pass every so many microseconds as well (needs
 * MPI_THREAD_MULTIPLE). */
#ifndef SPARCML_REQUEST_H
#define SPARCML_REQUEST_H

#include <mpi.h>

#include "runtime/comm_ctx.h"

/* MPI_Iallreduce on a datatype tagged with value type vtype. */
int sparcml_iallreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, int vtype,
                       MPI_Op op, MPI_Comm comm, MPI_Request *request);

/* One progress pass over every pending schedule (thread-safe; a pass that
 * finds another thread's pass running returns at once). */
void sparcml_request_progress(void);

/* At MPI_Finalize: stop the progress thread (SPARCML_PROGRESS_US), then
 * complete every pending call. */
void sparcml_request_finalize(void);

/* Complete every pending call on ctx (before a blocking call uses it, or
 * before it is freed); ctx NULL: every pending call (MPI_Finalize). */
void sparcml_request_drain(const sparcml_ctx *ctx);

/* Whether the application holds any of the library's requests; hold one
 * (NULL: not the library's) so that it outlives a completion call that
 * frees it, and release it, writing its result into a status the vendor
 * filled (MPICH's MPI_Waitall/Testall/Waitsome/Testsome put MPI_ERR_OTHER
 * codes wrapping the class there; MPI_STATUS_IGNORE: nothing written). */
int sparcml_request_live(void);
void *sparcml_request_hold(MPI_Request request);
void sparcml_request_release(void *held, MPI_Status *status);

/* The generalized request's query and free functions. */
int sparcml_request_query(void *state, MPI_Status *status);
int sparcml_request_free(void *state);

#endif
