/* request.c -- non-blocking tagged allreduces as MPI requests (request.h).
 *
 * Every pending call is on one list, in the order it was started.  A
 * progress pass advances, for each communicator, its oldest pending call
 * (the next one starts when it completes, in the same pass); a call whose
 * schedule has ended is completed: MPI_Grequest_complete, after which the
 * application's wait returns what the query function reports.
 *
 * A call's memory has two owners: the library until the call is complete,
 * the application until its request is freed (by a completing wait or
 * test, or by MPI_Request_free, which may come first); the last one to
 * let go frees it. */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "core/op.h"
#include "base/mpi_flavour.h"
#include "core/iallreduce.h"
#include "core/settings.h"

typedef struct pending {
    sparcml_op op;
    MPI_Request request;
    int result;           /* what the application's wait reports */
    atomic_int owners;
    struct pending *next; /* in `queue`, while the call runs */
    struct pending *next_live; /* in `live`, until the application frees the request */
} pending;

/* The list, guarded by `lock`; `npending` lets calls that find nothing
 * pending skip the lock. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pending *queue;
static pending **queue_tail = &queue;
static atomic_int npending;
/* Every request the application holds (for sparcml_request_hold), under
 * `live_lock`, which is never held across an MPI call: the free function
 * takes it from inside the vendor's completion calls, which may hold the
 * vendor's own lock while a progress pass, holding `lock`, waits for that
 * one. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static pending *live;
static atomic_int nlive;

static void let_go(pending *p)
{
    if (atomic_fetch_sub(&p->owners, 1) == 1) free(p);
}

int sparcml_request_query(void *state, MPI_Status *status)
{
    pending *p = state;
    PMPI_Status_set_elements_x(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    status->MPI_ERROR = p->result;
    return p->result;
}

int sparcml_request_free(void *state)
{
    pending *p = state;
    pthread_mutex_lock(&live_lock);
    for (pending **pp = &live; *pp; pp = &(*pp)->next_live) {
        if (*pp != p) continue;
        *pp = p->next_live;
        atomic_fetch_sub(&nlive, 1);
        break;
    }
    pthread_mutex_unlock(&live_lock);
    let_go(p);
    return MPI_SUCCESS;
}

int sparcml_request_live(void)
{
    return atomic_load_explicit(&nlive, memory_order_relaxed) != 0;
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

void sparcml_request_release(void *held, MPI_Status *status)
{
    pending *p = held;
    if (status != MPI_STATUS_IGNORE) status->MPI_ERROR = p->result;
    let_go(p);
}

/* No call started earlier on the same communicator is still pending. */
static int oldest_on_its_comm(const pending *p)
{
    for (const pending *q = queue; q != p; q = q->next)
        if (q->op.c.ctx == p->op.c.ctx) return 0;
    return 1;
}

/* The schedule has ended: report and hand the request back. */
static void complete(pending *p)
{
    p->result = sparcml_op_finish(&p->op);
    PMPI_Grequest_complete(p->request);
    let_go(p);
}

/* Advance what may run; repeat while a call completes (its successor on
 * the communicator may start at once). */
static void pass(void)
{
    int completed;
    do {
        completed = 0;
        for (pending **pp = &queue; *pp;) {
            pending *p = *pp;
            int done = 0;
            if (oldest_on_its_comm(p)) sched_progress(&p->op.s, &done);
            if (!done) {
                pp = &p->next;
                continue;
            }
            *pp = p->next;
            if (queue_tail == &p->next) queue_tail = pp;
            atomic_fetch_sub(&npending, 1);
            atomic_fetch_sub(&p->op.c.ctx->pending_calls, 1);
            complete(p);
            completed = 1;
        }
    } while (completed);
}

void sparcml_request_progress(void)
{
    if (atomic_load(&npending) == 0 || pthread_mutex_trylock(&lock) != 0) return;
    pass();
    pthread_mutex_unlock(&lock);
}

/* Without a lock: drain may run inside MPI_Comm_free's attribute callback,
 * where the vendor may hold its own lock. */
static int pending_on(const sparcml_ctx *ctx)
{
    return ctx ? atomic_load(&ctx->pending_calls) != 0 : atomic_load(&npending) != 0;
}

/* SPARCML_PROGRESS_US: a thread that runs a pass every period while calls
 * are pending, so that they advance while the application computes
 * without calling MPI.  Started with the first non-blocking call, stopped
 * at MPI_Finalize. */
static pthread_once_t progress_once = PTHREAD_ONCE_INIT;
static pthread_t progress_thread;
static atomic_int progress_running, progress_stop;

static void *progress_main(void *arg)
{
    uint64_t us = settings_get()->progress_us;
    struct timespec period = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    (void)arg;
    while (!atomic_load(&progress_stop)) {
        sparcml_request_progress();
        nanosleep(&period, NULL);
    }
    return NULL;
}

static void progress_start(void)
{
    if (settings_get()->progress_us == 0) return;
    atomic_store(&progress_running, pthread_create(&progress_thread, NULL, progress_main, NULL) == 0);
}

void sparcml_request_finalize(void)
{
    if (atomic_load(&progress_running)) {
        atomic_store(&progress_stop, 1);
        pthread_join(progress_thread, NULL);
        atomic_store(&progress_running, 0);
    }
    sparcml_request_drain(NULL);
}

void sparcml_request_drain(const sparcml_ctx *ctx)
{
    while (pending_on(ctx)) {
        sparcml_request_progress();
        sched_yield(); /* another thread's pass may be running */
    }
}

int sparcml_iallreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, int vtype,
                       MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    pending *p;
    int rc;
    if (!FLV_HAVE_NONBLOCKING) return flv_iallreduce_vendor(sendbuf, recvbuf, count, datatype, op, comm, request);
    p = calloc(1, sizeof *p);
    if (!p) {
        PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM);
        return MPI_ERR_NO_MEM;
    }
    switch (sparcml_op_start(&p->op, sendbuf, recvbuf, count, vtype, op, comm, 0)) {
    case SPARCML_OP_VENDOR:
        free(p);
        return flv_iallreduce_vendor(sendbuf, recvbuf, count, datatype, op, comm, request);
    case SPARCML_OP_DONE:
        rc = p->op.result;
        free(p);
        return rc;
    default: break;
    }
    atomic_init(&p->owners, 2);
    rc = flv_grequest_start(p, &p->request);
    if (rc != MPI_SUCCESS) {
        free(p);
        PMPI_Comm_call_errhandler(comm, rc);
        return rc;
    }
    *request = p->request;
    pthread_mutex_lock(&lock);
    *queue_tail = p;
    queue_tail = &p->next;
    atomic_fetch_add(&npending, 1);
    atomic_fetch_add(&p->op.c.ctx->pending_calls, 1);
    pthread_mutex_unlock(&lock);
    pthread_mutex_lock(&live_lock);
    p->next_live = live;
    live = p;
    atomic_fetch_add(&nlive, 1);
    pthread_mutex_unlock(&live_lock);
    pthread_once(&progress_once, progress_start);
    sparcml_request_progress(); /* post the first messages now */
    return MPI_SUCCESS;
}
