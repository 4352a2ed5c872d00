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
 * MPI_REQUEST_NULL) leaves its call inactive. */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "errors.h"
#include "persistent.h"
#include "request.h"

typedef struct persistent {
    MPI_Request handle;  /* the application's */
    MPI_Request running; /* the started call's, or MPI_REQUEST_NULL */
    const void *sendbuf;
    void *recvbuf;
    MPI_Count count;
    MPI_Datatype datatype;
    int vtype;
    MPI_Op op;
    MPI_Comm comm;
    struct persistent *next;
} persistent;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static persistent *table;
static atomic_int nlive;

int sparcml_persistent_live(void)
{
    return atomic_load_explicit(&nlive, memory_order_relaxed) != 0;
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

int sparcml_allreduce_init(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, int vtype,
                           MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    persistent *p = calloc(1, sizeof *p);
    int rc;
    if (!p) {
        PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM);
        return MPI_ERR_NO_MEM;
    }
    rc = PMPI_Recv_init(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &p->handle);
    if (rc != MPI_SUCCESS) {
        free(p);
        PMPI_Comm_call_errhandler(comm, rc);
        return rc;
    }
    *p = (persistent){.handle = p->handle, .running = MPI_REQUEST_NULL, .sendbuf = sendbuf, .recvbuf = recvbuf,
                      .count = count, .datatype = datatype, .vtype = vtype, .op = op, .comm = comm};
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
        return sparcml_iallreduce(p->sendbuf, p->recvbuf, p->count, p->datatype, p->vtype, p->op, p->comm,
                                  &p->running);
    PMPI_Comm_rank(p->comm, &rank);
    sparcml_print_error(rank, SPARCML_R_ACTIVE_REQUEST, NULL);
    return sparcml_raise(p->comm, SPARCML_R_ACTIVE_REQUEST);
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

/* The array as the vendor is to see it (see the top of the file). */
typedef struct view {
    MPI_Request *reqs;
    persistent **owner;
    MPI_Request small_reqs[16];
    persistent *small_owner[16];
} view;

static int view_open(view *v, int n, const MPI_Request app[])
{
    v->reqs = v->small_reqs;
    v->owner = v->small_owner;
    if (n > 16) {
        v->reqs = malloc((size_t)n * sizeof *v->reqs);
        v->owner = malloc((size_t)n * sizeof *v->owner);
        if (!v->reqs || !v->owner) {
            free(v->reqs);
            free(v->owner);
            return MPI_ERR_NO_MEM;
        }
    }
    for (int i = 0; i < n; i++) {
        v->owner[i] = find(app[i]);
        v->reqs[i] = v->owner[i] ? v->owner[i]->running : app[i];
    }
    return MPI_SUCCESS;
}

static int view_close(view *v, int n, MPI_Request app[], int rc)
{
    for (int i = 0; i < n; i++) {
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
    }
    return rc;
}

/* Each of the array calls: open a view, call the vendor on it, close. */
#define ON_VIEW(n, app, call)                                                                                  \
    do {                                                                                                       \
        view v;                                                                                                \
        int rc_ = view_open(&v, n, app);                                                                       \
        if (rc_ != MPI_SUCCESS) return rc_;                                                                    \
        return view_close(&v, n, app, call);                                                                   \
    } while (0)

int sparcml_waitall(int n, MPI_Request requests[], MPI_Status statuses[])
{
    ON_VIEW(n, requests, PMPI_Waitall(n, v.reqs, statuses));
}

int sparcml_testall(int n, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    ON_VIEW(n, requests, PMPI_Testall(n, v.reqs, flag, statuses));
}

int sparcml_waitany(int n, MPI_Request requests[], int *index, MPI_Status *status)
{
    ON_VIEW(n, requests, PMPI_Waitany(n, v.reqs, index, status));
}

int sparcml_testany(int n, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    ON_VIEW(n, requests, PMPI_Testany(n, v.reqs, index, flag, status));
}

int sparcml_waitsome(int n, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    ON_VIEW(n, requests, PMPI_Waitsome(n, v.reqs, outcount, indices, statuses));
}

int sparcml_testsome(int n, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    ON_VIEW(n, requests, PMPI_Testsome(n, v.reqs, outcount, indices, statuses));
}

/* A running call goes on (its peers wait for it): the library completes
 * it, as any request freed while pending (request.h). */
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
