/* persistent.c -- the library's persistent allreduces (persistent.h).
 *
 * The table of live persistent calls is a list under `lock` (a program
 * holds a handful); their count, `persistent_live`, lets every completion
 * call of a program that has none go straight to the vendor
 * (sparcml_completion_taken).  A completion call that names any of them
 * works on a view of its array in which each handle is replaced by the
 * call's running request (MPI_REQUEST_NULL when inactive, which every
 * completion call treats as an inactive persistent request is treated: an
 * empty status); afterwards the handles go back in place, and a running
 * request the vendor completed (and set to MPI_REQUEST_NULL) leaves its
 * call inactive.
 *
 * The completion calls are also taken while the application holds any of
 * the library's non-blocking requests: the view holds each of them, the
 * vendor completes them (reporting success: core/iallreduce.h), and the
 * call then writes each completed one's code into its status and raises
 * the first failure once, on that call's communicator, from this thread:
 * MPI_Wait, MPI_Test, MPI_Waitany and MPI_Testany return its code; the
 * calls on several requests return MPI_ERR_IN_STATUS, with every
 * completed request's code in its status.  A failure of the vendor's own
 * call was raised by the vendor and is returned as it is. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/errors.h"
#include "shim/persistent.h"
#include "core/iallreduce.h"

typedef struct persistent {
    MPI_Request handle;  /* the application's */
    MPI_Request running; /* the started call's, or MPI_REQUEST_NULL */
    const void *sendbuf;
    void *recvbuf;
    MPI_Count count;
    MPI_Datatype datatype;
    const sparcml_op_kind *kind;
    int vtype;
    MPI_Op op;
    MPI_Comm comm;
    const char *call; /* the program's: MPI_Allreduce_init or MPIX_Allreduce_init */
    struct persistent *next;
} persistent;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static persistent *table;
atomic_int persistent_live;

static persistent *find(MPI_Request handle)
{
    persistent *p;
    if (handle == MPI_REQUEST_NULL) return NULL;
    pthread_mutex_lock(&lock);
    for (p = table; p && p->handle != handle; p = p->next) continue;
    pthread_mutex_unlock(&lock);
    return p;
}

int sparcml_allreduce_init(const sparcml_op_kind *kind, const void *sendbuf, void *recvbuf, MPI_Count count,
                           MPI_Datatype datatype, int vtype, MPI_Op op, MPI_Comm comm, MPI_Request *request,
                           const char *call)
{
    persistent *p = calloc(1, sizeof *p);
    int rc;
    if (!p) return sparcml_raise_code(comm, call, MPI_ERR_NO_MEM);
    rc = PMPI_Recv_init(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &p->handle);
    if (rc != MPI_SUCCESS) {
        free(p);
        return sparcml_raise_code(comm, call, rc);
    }
    *p = (persistent){.handle = p->handle, .running = MPI_REQUEST_NULL, .sendbuf = sendbuf, .recvbuf = recvbuf,
                      .count = count, .datatype = datatype, .kind = kind, .vtype = vtype, .op = op, .comm = comm,
                      .call = call};
    pthread_mutex_lock(&lock);
    p->next = table;
    table = p;
    atomic_fetch_add(&persistent_live, 1);
    pthread_mutex_unlock(&lock);
    *request = p->handle;
    return MPI_SUCCESS;
}

static int start(persistent *p)
{
    sparcml_outcome st;
    int rank = 0;
    if (p->running == MPI_REQUEST_NULL)
        return sparcml_iallreduce(p->kind, p->sendbuf, p->recvbuf, p->count, p->datatype, p->vtype, p->op,
                                  p->comm, &p->running, p->call);
    if (PMPI_Comm_rank(p->comm, &rank) != MPI_SUCCESS) rank = -1;
    sparcml_outcome_set(&st, SPARCML_R_ACTIVE_REQUEST, rank, NULL);
    sparcml_outcome_print(&st, "MPI_Start", rank);
    return sparcml_raise(p->comm, "MPI_Start", &st);
}

int sparcml_start(MPI_Request *request)
{
    persistent *p = find(*request);
    return p ? start(p) : PMPI_Start(request);
}

int sparcml_startall(int n, MPI_Request requests[])
{
    int rc = MPI_SUCCESS;
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) rc = sparcml_start(&requests[i]);
    return rc;
}

/* The array as the vendor is to see it (see the top of the file), and the
 * library's requests in it, held (core/iallreduce.h) until the call has
 * written their statuses and raised their first failure.  `failed`: the
 * first completed request of the library that failed, or -1. */
typedef struct view {
    MPI_Request *reqs;
    persistent **owner;
    void **held;
    int failed;
    MPI_Request small_reqs[16];
    persistent *small_owner[16];
    void *small_held[16];
} view;

static int view_open(view *v, int n, const MPI_Request app[])
{
    v->reqs = v->small_reqs;
    v->owner = v->small_owner;
    v->held = v->small_held;
    v->failed = -1;
    if (n > 16) {
        v->reqs = malloc((size_t)n * sizeof *v->reqs);
        v->owner = malloc((size_t)n * sizeof *v->owner);
        v->held = malloc((size_t)n * sizeof *v->held);
        if (!v->reqs || !v->owner || !v->held) {
            free(v->reqs);
            free(v->owner);
            free(v->held);
            return MPI_ERR_NO_MEM;
        }
    }
    for (int i = 0; i < n; i++) {
        v->owner[i] = find(app[i]);
        v->reqs[i] = v->owner[i] ? v->owner[i]->running : app[i];
        v->held[i] = sparcml_request_hold(v->reqs[i]);
    }
    sparcml_completing(1);
    return MPI_SUCCESS;
}

/* Request i completed in the call: its status (if any) gets its code. */
static void view_completed(view *v, int i, MPI_Status *status)
{
    int code;
    if (i < 0 || !v->held[i]) {
        if (status != MPI_STATUS_IGNORE) status->MPI_ERROR = MPI_SUCCESS;
        return;
    }
    code = sparcml_request_code(v->held[i]);
    if (status != MPI_STATUS_IGNORE) status->MPI_ERROR = code;
    if (code != MPI_SUCCESS && v->failed < 0) v->failed = i;
}

/* The end of a completion call on n requests whose vendor call returned
 * rc: the first failure of the library's raised (several: in status),
 * the holds released, the application's handles back in place. */
static int view_close(view *v, int n, MPI_Request app[], int rc, int several)
{
    sparcml_completing(-1);
    if (rc == MPI_SUCCESS && v->failed >= 0) rc = sparcml_request_raise(v->held[v->failed], several);
    for (int i = 0; i < n; i++) {
        if (v->held[i]) sparcml_request_release(v->held[i]);
        if (!v->owner[i]) {
            app[i] = v->reqs[i];
            continue;
        }
        v->owner[i]->running = v->reqs[i];
        app[i] = v->owner[i]->handle;
    }
    if (v->reqs != v->small_reqs) {
        free(v->reqs);
        free(v->owner);
        free(v->held);
    }
    return rc;
}

int sparcml_wait(MPI_Request *request, MPI_Status *status)
{
    view v;
    int rc = view_open(&v, 1, request);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Wait(v.reqs, status);
    if (rc == MPI_SUCCESS) view_completed(&v, 0, status);
    return view_close(&v, 1, request, rc, 0);
}

int sparcml_test(MPI_Request *request, int *flag, MPI_Status *status)
{
    view v;
    int rc = view_open(&v, 1, request);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Test(v.reqs, flag, status);
    if (rc == MPI_SUCCESS && *flag) view_completed(&v, 0, status);
    return view_close(&v, 1, request, rc, 0);
}

/* Statuses of an "all" call: one per request (each completed). */
static void all_completed(view *v, int n, MPI_Status statuses[])
{
    for (int i = 0; i < n; i++) view_completed(v, i, statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i]);
}

/* Statuses of a "some" call: statuses[j] belongs to request indices[j]. */
static void some_completed(view *v, int outcount, const int indices[], MPI_Status statuses[])
{
    for (int j = 0; outcount != MPI_UNDEFINED && j < outcount; j++)
        view_completed(v, indices[j], statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[j]);
}

int sparcml_waitall(int n, MPI_Request requests[], MPI_Status statuses[])
{
    view v;
    int rc = view_open(&v, n, requests);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Waitall(n, v.reqs, statuses);
    if (rc == MPI_SUCCESS) all_completed(&v, n, statuses);
    return view_close(&v, n, requests, rc, 1);
}

int sparcml_testall(int n, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    view v;
    int rc = view_open(&v, n, requests);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Testall(n, v.reqs, flag, statuses);
    if (rc == MPI_SUCCESS && *flag) all_completed(&v, n, statuses);
    return view_close(&v, n, requests, rc, 1);
}

int sparcml_waitany(int n, MPI_Request requests[], int *index, MPI_Status *status)
{
    view v;
    int rc = view_open(&v, n, requests);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Waitany(n, v.reqs, index, status);
    if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED) view_completed(&v, *index, status);
    return view_close(&v, n, requests, rc, 0);
}

int sparcml_testany(int n, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    view v;
    int rc = view_open(&v, n, requests);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Testany(n, v.reqs, index, flag, status);
    if (rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED) view_completed(&v, *index, status);
    return view_close(&v, n, requests, rc, 0);
}

int sparcml_waitsome(int n, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    view v;
    int rc = view_open(&v, n, requests);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Waitsome(n, v.reqs, outcount, indices, statuses);
    if (rc == MPI_SUCCESS) some_completed(&v, *outcount, indices, statuses);
    return view_close(&v, n, requests, rc, 1);
}

int sparcml_testsome(int n, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    view v;
    int rc = view_open(&v, n, requests);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Testsome(n, v.reqs, outcount, indices, statuses);
    if (rc == MPI_SUCCESS) some_completed(&v, *outcount, indices, statuses);
    return view_close(&v, n, requests, rc, 1);
}

/* A running call goes on (its peers wait for it): the library completes
 * it, as any request freed while pending (core/iallreduce.h). */
int sparcml_request_free_handle(MPI_Request *request)
{
    persistent *p = NULL;
    int rc = MPI_SUCCESS;
    if (*request != MPI_REQUEST_NULL) {
        pthread_mutex_lock(&lock);
        for (persistent **pp = &table; *pp; pp = &(*pp)->next) {
            if ((*pp)->handle != *request) continue;
            p = *pp;
            *pp = p->next;
            atomic_fetch_sub(&persistent_live, 1);
            break;
        }
        pthread_mutex_unlock(&lock);
    }
    if (!p) return PMPI_Request_free(request);
    if (p->running != MPI_REQUEST_NULL) rc = PMPI_Request_free(&p->running);
    if (rc == MPI_SUCCESS) rc = PMPI_Request_free(&p->handle);
    free(p);
    *request = MPI_REQUEST_NULL;
    return rc;
}

/* The request stays: its status says how the call ended, nothing is
 * raised (the completion call that frees it raises). */
int sparcml_request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    view v;
    int rc = view_open(&v, 1, &request);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Request_get_status(v.reqs[0], flag, status);
    if (rc == MPI_SUCCESS && *flag && v.held[0] && status != MPI_STATUS_IGNORE)
        status->MPI_ERROR = sparcml_request_code(v.held[0]);
    sparcml_completing(-1);
    if (v.held[0]) sparcml_request_release(v.held[0]);
    return rc;
}
