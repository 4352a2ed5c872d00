/* iallreduce.h -- the library's non-blocking allreduces as MPI requests.
 *
 * MPI_Iallreduce (and each start of a persistent call) of a kind of op
 * (tagged or transparent) starts the call's op (op.h), queues its
 * schedule with the progress engine (runtime/progress.h) and returns a
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

#include "core/op.h"

/* MPI_Iallreduce of a kind of op, on values of type vtype. */
int sparcml_iallreduce(const sparcml_op_kind *kind, const void *sendbuf, void *recvbuf, MPI_Count count,
                       MPI_Datatype datatype, int vtype, MPI_Op op, MPI_Comm comm, MPI_Request *request);

/* Whether the application holds any of the library's requests; hold one
 * (NULL: not the library's) so that it outlives a completion call that
 * frees it, and release it, writing its result into a status the vendor
 * filled (MPICH's MPI_Waitall/Testall/Waitsome/Testsome put MPI_ERR_OTHER
 * codes wrapping the class there; MPI_STATUS_IGNORE: nothing written). */
int sparcml_request_live(void);
void *sparcml_request_hold(MPI_Request request);
void sparcml_request_release(void *held, MPI_Status *status);

#endif
