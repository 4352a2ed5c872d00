/* persistent.c -- persistent tagged allreduces (persistent.h).
 *
 * The table of live persistent calls is a list under `lock` (a program
 * holds a handful); `nlive` lets every completion call of a program that
 * has none go straight to the vendor after one atomic load.  A completion
 * call that names any of them works on a view of its array in which each
 * handle is replaced by the call's running request (MPI_REQUEST_NULL when
 * inactive, which every completion call treats as an inactive persistent
 * request is treated: an empty status); afterwards the handles go back in
 * place, and a running request the vendor completed (and set to
 * MPI_REQUEST_NULL) leaves its call inactive.
 *
 * The calls on arrays are also taken while the application holds any of
 * the library's non-blocking requests: MPICH's MPI_Waitall, MPI_Testall,
 * MPI_Waitsome and MPI_Testsome report a generalized request's error in
 * its status as an MPI_ERR_OTHER code wrapping the class; the view writes
 * the class there, as MPI_Wait reports it. */
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
    struct persistent *next;
} persistent;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static persistent *table;
static atomic_int nlive;

int sparcml_completion_taken(void)
{
    return atomic_load_explicit(&nlive, memory_order_relaxed) != 0 || sparcml_request_live();
}

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
                           MPI_Datatype datatype, int vtype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    persistent *p = calloc(1, sizeof *p);
    int rc;
    if (!p) return sparcml_raise_code(comm, MPI_ERR_NO_MEM);
    rc = PMPI_Recv_init(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &p->handle);
    if (rc != MPI_SUCCESS) {
        free(p);
        return sparcml_raise_code(comm, rc);
    }
    *p = (persistent){.handle = p->handle, .running = MPI_REQUEST_NULL, .sendbuf = sendbuf, .recvbuf = recvbuf,
                      .count = count, .datatype = datatype, .kind = kind, .vtype = vtype, .op = op, .comm = comm};
    pthread_mutex_lock(&lock);
    p->next = table;
    table = p;
    atomic_fetch_add(&nlive, 1);
    pthread_mutex_unlock(&lock);
    *request = p->handle;
    return MPI_SUCCESS;
}

static int start(persistent *p)
{
    int rank = 0;
    if (p->running == MPI_REQUEST_NULL)
        return sparcml_iallreduce(p->kind, p->sendbuf, p->recvbuf, p->count, p->datatype, p->vtype, p->op,
                                  p->comm, &p->running);
    if (PMPI_Comm_rank(p->comm, &rank) != MPI_SUCCESS) rank = -1;
    sparcml_print_error(rank, SPARCML_R_ACTIVE_REQUEST, NULL);
    return sparcml_raise(p->comm, SPARCML_R_ACTIVE_REQUEST, rank, NULL);
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

int sparcml_wait(MPI_Request *request, MPI_Status *status)
{
    persistent *p = find(*request);
    return p ? PMPI_Wait(&p->running, status) : PMPI_Wait(request, status);
}

int sparcml_test(MPI_Request *request, int *flag, MPI_Status *status)
{
    persistent *p = find(*request);
    return p ? PMPI_Test(&p->running, flag, status) : PMPI_Test(request, flag, status);
}

/* The array as the vendor is to see it (see the top of the file), and the
 * library's requests in it, held (core/iallreduce.h) until their statuses are
 * written. */
typedef struct view {
    MPI_Request *reqs;
    persistent **owner;
    void **held;
    MPI_Request small_reqs[16];
    persistent *small_owner[16];
    void *small_held[16];
} view;

static int view_open(view *v, int n, const MPI_Request app[])
{
    v->reqs = v->small_reqs;
    v->owner = v->small_owner;
    v->held = v->small_held;
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
    return MPI_SUCCESS;
}

/* Request i completed in the call: its status gets the call's result. */
static void view_status(view *v, int i, MPI_Status *status)
{
    if (i < 0 || !v->held[i]) return;
    sparcml_request_release(v->held[i], status);
    v->held[i] = NULL;
}

static int view_close(view *v, int n, MPI_Request app[], int rc)
{
    for (int i = 0; i < n; i++) {
        if (v->held[i]) sparcml_request_release(v->held[i], MPI_STATUS_IGNORE);
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

/* Statuses of an "all" call: one per request, written where it completed. */
static void all_statuses(view *v, int n, MPI_Status statuses[])
{
    for (int i = 0; statuses != MPI_STATUSES_IGNORE && i < n; i++)
        if (v->held[i] && v->reqs[i] == MPI_REQUEST_NULL) view_status(v, i, &statuses[i]);
}

/* Statuses of a "some" call: statuses[j] belongs to request indices[j]. */
static void some_statuses(view *v, int outcount, const int indices[], MPI_Status statuses[])
{
    for (int j = 0; statuses != MPI_STATUSES_IGNORE && outcount != MPI_UNDEFINED && j < outcount; j++)
        view_status(v, indices[j], &statuses[j]);
}

int sparcml_waitall(int n, MPI_Request requests[], MPI_Status statuses[])
{
    view v;
    int rc = view_open(&v, n, requests);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Waitall(n, v.reqs, statuses);
    all_statuses(&v, n, statuses);
    return view_close(&v, n, requests, rc);
}

int sparcml_testall(int n, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    view v;
    int rc = view_open(&v, n, requests);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Testall(n, v.reqs, flag, statuses);
    if (*flag) all_statuses(&v, n, statuses);
    return view_close(&v, n, requests, rc);
}

int sparcml_waitany(int n, MPI_Request requests[], int *index, MPI_Status *status)
{
    view v;
    int rc = view_open(&v, n, requests);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Waitany(n, v.reqs, index, status);
    if (*index != MPI_UNDEFINED) view_status(&v, *index, status);
    return view_close(&v, n, requests, rc);
}

int sparcml_testany(int n, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    view v;
    int rc = view_open(&v, n, requests);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Testany(n, v.reqs, index, flag, status);
    if (*flag && *index != MPI_UNDEFINED) view_status(&v, *index, status);
    return view_close(&v, n, requests, rc);
}

int sparcml_waitsome(int n, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    view v;
    int rc = view_open(&v, n, requests);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Waitsome(n, v.reqs, outcount, indices, statuses);
    some_statuses(&v, *outcount, indices, statuses);
    return view_close(&v, n, requests, rc);
}

int sparcml_testsome(int n, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    view v;
    int rc = view_open(&v, n, requests);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Testsome(n, v.reqs, outcount, indices, statuses);
    some_statuses(&v, *outcount, indices, statuses);
    return view_close(&v, n, requests, rc);
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
            atomic_fetch_sub(&nlive, 1);
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

int sparcml_request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    persistent *p = find(request);
    return PMPI_Request_get_status(p ? p->running : request, flag, status);
}
