/* persistent.h -- the library's persistent allreduces, of any kind of op
 * (MPI_Allreduce_init, Open MPI's MPIX_Allreduce_init) with MPI_Start /
 * MPI_Startall.
 *
 * The application's handle is an inactive vendor persistent request of no
 * consequence (a receive from MPI_PROC_NULL that is never started): a
 * valid handle that the vendor may see anywhere.  The library keeps the
 * call's arguments with it; each start begins a non-blocking call
 * (core/iallreduce.h) whose request stands in for the handle in the completion
 * calls: they see the running request instead, and the application gets
 * its handle back, inactive, when that completes.  What persists across
 * starts: the arguments and the communicator's context and scratch; the
 * plan is agreed again at every start, since the streams' sizes change.
 *
 * Every function below is what interpose.c calls once
 * sparcml_completion_taken() says a persistent call exists or the
 * application holds a non-blocking request of the library (whose error the
 * calls on arrays report as MPI_Wait does: persistent.c); otherwise the
 * completion calls go straight to the vendor. */
#ifndef SPARCML_PERSISTENT_H
#define SPARCML_PERSISTENT_H

#include <mpi.h>
#include <stdatomic.h>

#include "core/iallreduce.h"
#include "core/op.h"

/* Live persistent calls; read inline (hidden: no GOT), as is the count of
 * the library's requests, so that a completion call on the vendor's
 * requests costs two loads and one branch. */
extern atomic_int persistent_live __attribute__((visibility("hidden")));
static inline int sparcml_completion_taken(void)
{
    return (atomic_load_explicit(&persistent_live, memory_order_relaxed) |
            atomic_load_explicit(&sparcml_requests_live, memory_order_relaxed)) != 0;
}

/* `call` names the program's call in messages (MPI_Allreduce_init, Open
 * MPI's MPIX_Allreduce_init). */
int sparcml_allreduce_init(const sparcml_op_kind *kind, const void *sendbuf, void *recvbuf, MPI_Count count,
                           MPI_Datatype datatype, int vtype, MPI_Op op, MPI_Comm comm, MPI_Request *request,
                           const char *call);

int sparcml_start(MPI_Request *request);
int sparcml_startall(int n, MPI_Request requests[]);
int sparcml_wait(MPI_Request *request, MPI_Status *status);
int sparcml_test(MPI_Request *request, int *flag, MPI_Status *status);
int sparcml_waitall(int n, MPI_Request requests[], MPI_Status statuses[]);
int sparcml_testall(int n, MPI_Request requests[], int *flag, MPI_Status statuses[]);
int sparcml_waitany(int n, MPI_Request requests[], int *index, MPI_Status *status);
int sparcml_testany(int n, MPI_Request requests[], int *index, int *flag, MPI_Status *status);
int sparcml_waitsome(int n, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]);
int sparcml_testsome(int n, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]);
int sparcml_request_free_handle(MPI_Request *request);
int sparcml_request_get_status(MPI_Request request, int *flag, MPI_Status *status);

#endif
