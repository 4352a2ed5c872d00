/* iallreduce.c -- non-blocking allreduces as MPI requests (iallreduce.h).
 *
 * A call's schedule is a progress item on its communicator's lane; when
 * it has ended, the call's status is settled and the request completed
 * (MPI_Grequest_complete), on whichever thread ran the pass.  Nothing is
 * raised there: the completion call of the application (MPI_Wait, ...,
 * shim/persistent.c) finds the status and raises a failure on the call's
 * communicator, on its own thread.  While such a call runs on a thread,
 * the query function reports success, so that the MPI raises nothing of
 * its own; a completion the library does not see (none of its wrappers
 * running) gets the call's code from the query function, and the MPI
 * raises it.
 *
 * A call's memory has two owners: the library until the call is complete,
 * the application until its request is freed (by a completing wait or
 * test, or by MPI_Request_free, which may come first); the last one to
 * let go frees it. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

#include "base/errors.h"
#include "base/mpi_flavour.h"
#include "core/iallreduce.h"
#include "core/op.h"
#include "runtime/progress.h"

typedef struct pending {
    sparcml_op op;
    op_room room;
    progress_item item;   /* while the call runs */
    MPI_Request request;
    atomic_int owners;
    struct pending *next_live; /* in `live`, until the application frees the request */
} pending;

/* Every request the application holds (for sparcml_request_hold), under
 * `live_lock`, which is never held across an MPI call: the free function
 * takes it from inside the vendor's completion calls, which may hold the
 * vendor's own lock while a progress pass, holding the engine's lock,
 * waits for that one. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static pending *live;
atomic_int sparcml_requests_live;

static void let_go(pending *p)
{
    if (atomic_fetch_sub(&p->owners, 1) == 1) free(p);
}

/* How many of the library's completion calls run on this thread. */
static _Thread_local int completing;

void sparcml_completing(int delta)
{
    completing += delta;
}

static int request_query(void *state, MPI_Status *status)
{
    pending *p = state;
    int rc = PMPI_Status_set_elements_x(status, MPI_BYTE, 0);
    if (rc == MPI_SUCCESS) rc = PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    if (rc == MPI_SUCCESS && !completing) rc = sparcml_outcome_code(&p->op.outcome, p->op.call);
    status->MPI_ERROR = rc;
    return rc;
}

static int request_free(void *state)
{
    pending *p = state;
    pthread_mutex_lock(&live_lock);
    for (pending **pp = &live; *pp; pp = &(*pp)->next_live) {
        if (*pp != p) continue;
        *pp = p->next_live;
        atomic_fetch_sub(&sparcml_requests_live, 1);
        break;
    }
    pthread_mutex_unlock(&live_lock);
    let_go(p);
    return MPI_SUCCESS;
}

void *sparcml_request_hold(MPI_Request request)
{
    pending *p = NULL;
    if (request == MPI_REQUEST_NULL || !sparcml_request_live()) return NULL;
    pthread_mutex_lock(&live_lock);
    for (p = live; p && p->request != request; p = p->next_live) continue;
    if (p) atomic_fetch_add(&p->owners, 1);
    pthread_mutex_unlock(&live_lock);
    return p;
}

int sparcml_request_code(const void *held)
{
    const pending *p = held;
    return sparcml_outcome_code(&p->op.outcome, p->op.call);
}

int sparcml_request_raise(void *held, int in_status)
{
    pending *p = held;
    if (in_status) return sparcml_raise_in_status(p->op.comm, p->op.call, &p->op.outcome);
    return sparcml_raise(p->op.comm, p->op.call, &p->op.outcome);
}

void sparcml_request_release(void *held)
{
    let_go(held);
}

/* The schedule has ended: settle the status and hand the request back.
 * A failed MPI_Grequest_complete would leave the application's wait
 * hanging: the rank says so and ends the job. */
static void complete(progress_item *item)
{
    pending *p = (pending *)((char *)item - offsetof(pending, item));
    int rc;
    sparcml_op_finish(&p->op);
    rc = PMPI_Grequest_complete(p->request);
    if (rc != MPI_SUCCESS) {
        sparcml_outcome st = {.rank = p->op.rank};
        sparcml_outcome_set_code(&st, rc, p->op.rank);
        sparcml_outcome_print(&st, p->op.call, p->op.rank);
        sparcml_abort(p->op.comm, MPI_ERR_INTERN);
    }
    let_go(p);
}

static const flv_grequest_fns grequest_fns = {.query = request_query, .free = request_free,
                                              .progress = progress_pass};

int sparcml_iallreduce(const sparcml_op_kind *kind, const void *sendbuf, void *recvbuf, MPI_Count count,
                       MPI_Datatype datatype, int vtype, MPI_Op op, MPI_Comm comm, MPI_Request *request,
                       const char *call)
{
    pending *p;
    int rc;
    if (!FLV_HAVE_NONBLOCKING)
        return flv_iallreduce_vendor(sendbuf, recvbuf, count, datatype, op, comm, request);
    p = malloc(sizeof *p); /* every field is set before it is read: the op by its start, the rest below */
    if (!p) return sparcml_raise_code(comm, call, MPI_ERR_NO_MEM);
    switch (sparcml_op_start(&p->op, &p->room, kind, sendbuf, recvbuf, count, datatype, vtype, op, comm, 0, call)) {
    case SPARCML_OP_VENDOR:
        free(p);
        return flv_iallreduce_vendor(sendbuf, recvbuf, count, datatype, op, comm, request);
    case SPARCML_OP_DONE:
        rc = sparcml_raise(comm, call, &p->op.outcome);
        free(p);
        return rc;
    default: break;
    }
    atomic_init(&p->owners, 2);
    rc = flv_grequest_start(p, &grequest_fns, &p->request);
    if (rc != MPI_SUCCESS) {
        free(p);
        return sparcml_raise_code(comm, call, rc);
    }
    *request = p->request;
    pthread_mutex_lock(&live_lock);
    p->next_live = live;
    live = p;
    atomic_fetch_add(&sparcml_requests_live, 1);
    pthread_mutex_unlock(&live_lock);
    progress_thread_start(p->op.set->progress_us);
    p->item = (progress_item){.s = &p->op.s, .lane = &p->op.c.ctx->pending_calls, .done = complete};
    progress_add(&p->item);
    return MPI_SUCCESS;
}
