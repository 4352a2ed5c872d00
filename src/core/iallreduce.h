/* iallreduce.h -- the library's non-blocking allreduces as MPI requests.
 *
 * MPI_Iallreduce (and each start of a persistent call) of any kind of op
 * (tagged, transparent or compressed) starts the call's op (op.h), queues
 * its schedule with the progress engine (runtime/progress.h) and returns a
 * generalized request (base/mpi_flavour.h), whose completion calls run a
 * progress pass.  A blocking call on the same communicator first
 * completes the communicator's pending ones.  A request freed while
 * pending is completed by the library all the same (its peers wait for
 * its messages), at the latest in MPI_Finalize or when its communicator
 * is freed.  With SPARCML_PROGRESS_US a thread of the library runs a pass
 * every so many microseconds as well. */
#ifndef SPARCML_IALLREDUCE_H
#define SPARCML_IALLREDUCE_H

#include <mpi.h>
#include <stdatomic.h>

#include "core/op.h"

/* MPI_Iallreduce of a kind of op, on values of type vtype; `call` names
 * the program's call (MPI_Iallreduce, or the persistent call started). */
int sparcml_iallreduce(const sparcml_op_kind *kind, const void *sendbuf, void *recvbuf, MPI_Count count,
                       MPI_Datatype datatype, int vtype, MPI_Op op, MPI_Comm comm, MPI_Request *request,
                       const char *call);

/* The completion calls (shim/persistent.c).  Whether the application
 * holds any of the library's requests; hold one (NULL: not the library's)
 * so that it outlives a completion call that frees it; the code its call
 * ended with (MPI_SUCCESS or a failure's); raise that failure from the
 * completion call, once (in_status: a call on several requests, which
 * returns MPI_ERR_IN_STATUS); release it.  sparcml_completing(+1) before
 * the vendor's completion call, (-1) after: meanwhile the library's
 * requests report success to the MPI, which then raises nothing of its
 * own (the caller raises).  The count of held requests is read inline
 * (hidden: no GOT), so that the completion calls of a program that holds
 * none stay a load and a branch away from the vendor's. */
extern atomic_int sparcml_requests_live __attribute__((visibility("hidden")));
static inline int sparcml_request_live(void)
{
    return atomic_load_explicit(&sparcml_requests_live, memory_order_relaxed) != 0;
}
void *sparcml_request_hold(MPI_Request request);
int sparcml_request_code(const void *held);
int sparcml_request_raise(void *held, int in_status);
void sparcml_request_release(void *held);
void sparcml_completing(int delta);

#endif
