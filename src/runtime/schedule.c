/* schedule.c -- the driver of schedules (schedule.h).
 *
 * One loop serves both modes: complete the current round (blocking: at
 * once; non-blocking: only if it is done already), then run the next step.
 * A failure stops the schedule after what was posted has completed: a
 * matched receive and a vendor collective cannot be taken back, and a send
 * buffer must not be reused while it is on the wire. */
#include "config.h"

#include <limits.h>

#include "base/mpi_flavour.h"
#include "runtime/schedule.h"

/* The bytes this rank hands to MPI in a vendor collective, as sparcml(7)
 * counts them (STATISTICS): what a bandwidth-optimal algorithm sends per
 * rank, since the vendor's own choice is not visible.  `bytes` are one
 * rank's contribution (allgather: each rank's; allreduce: the vector). */
static void count_allreduce(sparcml_call *c, uint64_t bytes)
{
    uint64_t P = (uint64_t)c->ctx->size;
    c->bytes_sent += 2 * (P - 1) * bytes / P;
}

static void count_allgather(sparcml_call *c, uint64_t total, uint64_t mine)
{
    /* A ring sends every part but the last one it receives: the total
     * less its own. */
    c->bytes_sent += total - mine;
}

/* A broadcast's bytes reach P - 1 ranks: each rank's share of them. */
static void count_bcast(sparcml_call *c, uint64_t bytes)
{
    uint64_t P = (uint64_t)c->ctx->size;
    c->bytes_sent += bytes * (P - 1) / P;
}

static int count_typed(sparcml_call *c, MPI_Count count, MPI_Datatype type)
{
    MPI_Count size = 0;
    int rc = PMPI_Type_size_x(type, &size);
    if (rc == MPI_SUCCESS) count_allreduce(c, (uint64_t)count * (uint64_t)size);
    return rc;
}

void sched_init(sched *s, sparcml_call *c, int blocking, sched_step first, void *state)
{
    *s = (sched){.c = c, .blocking = blocking, .next = first, .sends = c->ctx->reqs, .state = state};
}

int sched_send(sched *s, const wire *w, int dest, int tag)
{
    int rc;
    if (s->nsends >= s->c->ctx->send_slots) return MPI_ERR_INTERN;
    rc = p2p_isend(s->c, w, dest, tag + s->c->tag_offset, &s->sends[s->nsends]);
    if (rc == MPI_SUCCESS) s->nsends++;
    return rc;
}

int sched_recv_stream(sched *s, int src, int tag, int raw_pool, int dec_pool, sv *out, int *where)
{
    if (s->nrecv) return MPI_ERR_INTERN; /* one receive per round */
    s->recv = (p2p_recv){.src = src, .tag = tag + s->c->tag_offset, .raw_pool = raw_pool, .dec_pool = dec_pool,
                           .out = out, .where = where, .req = MPI_REQUEST_NULL};
    s->nrecv = 1;
    return MPI_SUCCESS;
}

int sched_recv_chunk(sched *s, int src, int tag, int raw_pool, int dec_pool, sv *out)
{
    int rc = sched_recv_stream(s, src, tag, raw_pool, dec_pool, out, NULL);
    if (rc != MPI_SUCCESS) return rc; /* the round's receive stays as it was */
    s->recv.bare = 1;
    return p2p_recv_start(s->c, &s->recv, s->blocking);
}

/* A collective request slot, or NULL when the round has no room left. */
static MPI_Request *coll_slot(sched *s)
{
    return s->nreqs < SCHED_MAX_REQS ? &s->reqs[s->nreqs] : NULL;
}

int sched_recv_bytes(sched *s, void *buf, MPI_Count bytes, int src, int tag)
{
    MPI_Request *req = coll_slot(s);
    int rc;
    if (!req) return MPI_ERR_INTERN;
    rc = flv_irecv_bytes(buf, bytes, src, tag + s->c->tag_offset, s->c->ctx->comm, req);
    if (rc == MPI_SUCCESS) s->nreqs++;
    return rc;
}

int sched_allgather(sched *s, const void *mine, int bytes, void *all)
{
    MPI_Comm comm = s->c->ctx->comm;
    MPI_Request *req = coll_slot(s);
    int rc;
    count_allgather(s->c, (uint64_t)bytes * (uint64_t)s->c->ctx->size, (uint64_t)bytes);
    if (s->blocking) return PMPI_Allgather(mine, bytes, MPI_BYTE, all, bytes, MPI_BYTE, comm);
    if (!req) return MPI_ERR_INTERN;
    rc = PMPI_Iallgather(mine, bytes, MPI_BYTE, all, bytes, MPI_BYTE, comm, req);
    if (rc == MPI_SUCCESS) s->nreqs++;
    return rc;
}

int sched_allgatherv_bytes(sched *s, const void *sendbuf, MPI_Count sendbytes, void *recvbuf,
                           const MPI_Count *counts, const MPI_Aint *displs)
{
    MPI_Comm comm = s->c->ctx->comm;
    MPI_Request *req = coll_slot(s);
    uint64_t total = 0;
    int rc;
    for (int r = 0; r < s->c->ctx->size; r++) total += (uint64_t)counts[r];
    count_allgather(s->c, total, (uint64_t)counts[s->c->ctx->rank]);
    if (s->blocking) return flv_allgatherv_bytes(sendbuf, sendbytes, recvbuf, counts, displs, comm);
    if (!req) return MPI_ERR_INTERN;
    rc = flv_iallgatherv_bytes(sendbuf, sendbytes, recvbuf, counts, displs, comm, s->c->ctx->int_counts, req);
    if (rc == MPI_SUCCESS) s->nreqs++;
    return rc;
}

int sched_allreduce(sched *s, void *buf, MPI_Count count, MPI_Datatype type, MPI_Op op)
{
    MPI_Comm comm = s->c->ctx->comm;
    int n = 0, rc = count_typed(s->c, count, type);
    if (rc != MPI_SUCCESS) return rc;
    if (s->blocking) return flv_allreduce(MPI_IN_PLACE, buf, count, type, op, comm);
    rc = flv_iallreduce(buf, count, type, op, comm, s->reqs + s->nreqs, SCHED_MAX_REQS - s->nreqs, &n);
    s->nreqs += n;
    return rc;
}

int sched_bcast_words(sched *s, void *buf, uint64_t words, int root)
{
    MPI_Comm comm = s->c->ctx->comm;
    MPI_Request *req = coll_slot(s);
    int rc;
    if (words > INT_MAX) return MPI_ERR_COUNT;
    count_bcast(s->c, words * 8);
    if (s->blocking) return PMPI_Bcast(buf, (int)words, MPI_UINT64_T, root, comm);
    if (!req) return MPI_ERR_INTERN;
    rc = PMPI_Ibcast(buf, (int)words, MPI_UINT64_T, root, comm, req);
    if (rc == MPI_SUCCESS) s->nreqs++;
    return rc;
}

int sched_vendor_allreduce(sched *s, const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                           MPI_Op op)
{
    MPI_Comm comm = s->c->ctx->comm;
    MPI_Request *req = coll_slot(s);
    int rc = count_typed(s->c, count, type);
    if (rc != MPI_SUCCESS) return rc;
    /* The int entry point where the count fits: MPICH's is the cheaper
     * for small calls. */
    if (s->blocking && count <= INT_MAX) return PMPI_Allreduce(sendbuf, recvbuf, (int)count, type, op, comm);
    if (s->blocking) return flv_allreduce(sendbuf, recvbuf, count, type, op, comm);
    if (!req) return MPI_ERR_INTERN;
    rc = flv_iallreduce_vendor(sendbuf, recvbuf, count, type, op, comm, req);
    if (rc == MPI_SUCCESS) s->nreqs++;
    return rc;
}

int sched_request(sched *s, MPI_Request *req)
{
    MPI_Request *slot = coll_slot(s);
    if (s->blocking) return PMPI_Wait(req, MPI_STATUS_IGNORE);
    if (!slot) return MPI_ERR_INTERN;
    *slot = *req;
    *req = MPI_REQUEST_NULL;
    s->nreqs++;
    return MPI_SUCCESS;
}

/* Wait for (or test) requests; *flag when all are complete.  One at a
 * time: a completed request becomes MPI_REQUEST_NULL, cheap to test again
 * (and GCC's access attributes reject MPI_STATUSES_IGNORE with Waitall). */
static int finish_requests(sched *s, MPI_Request *reqs, int *n, int *flag)
{
    int rc = MPI_SUCCESS;
    for (int i = 0; i < *n; i++) {
        int irc;
        if (s->blocking) {
            irc = PMPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS) rc = irc;
            continue;
        }
        irc = PMPI_Test(&reqs[i], flag, MPI_STATUS_IGNORE);
        if (irc != MPI_SUCCESS) return irc;
        if (!*flag) return MPI_SUCCESS;
    }
    *flag = 1;
    *n = 0;
    return rc;
}

/* Complete the current round as far as the mode allows: *flag when it is. */
static int finish_round(sched *s, int *flag)
{
    int rc = MPI_SUCCESS, end = !s->next;
    *flag = 1;
    if (s->nrecv && s->rc != MPI_SUCCESS && !s->recv.posted) s->nrecv = 0; /* never matched */
    if (s->nrecv) {
        rc = s->blocking ? p2p_recv_blocking(s->c, &s->recv) : p2p_recv_test(s->c, &s->recv, flag);
        if (rc != MPI_SUCCESS || *flag) s->nrecv = 0;
        if (rc != MPI_SUCCESS || !*flag) return rc;
    }
    rc = finish_requests(s, s->reqs, &s->nreqs, flag);
    if (rc != MPI_SUCCESS || !*flag) return rc;
    if (s->wait_sends || end || s->rc != MPI_SUCCESS) rc = finish_requests(s, s->sends, &s->nsends, flag);
    if (rc == MPI_SUCCESS && *flag) s->wait_sends = 0;
    return rc;
}

/* The schedule stops at its first error (what is posted still completes). */
static void fail(sched *s, int rc)
{
    if (s->rc == MPI_SUCCESS) s->rc = rc;
    s->next = s->then = NULL;
}

static int drive(sched *s)
{
    while (!s->done) {
        int flag, rc = finish_round(s, &flag);
        sched_step step;
        if (rc != MPI_SUCCESS) {
            fail(s, rc);
            continue;
        }
        if (!flag) break;
        if (!s->next && !s->then) {
            s->done = 1;
            break;
        }
        step = s->next ? s->next : s->then;
        if (!s->next) s->then = NULL;
        s->next = NULL;
        rc = step(s);
        if (rc != MPI_SUCCESS) fail(s, rc);
    }
    return s->rc;
}

int sched_run(sched *s)
{
    return drive(s);
}

int sched_progress(sched *s, int *done)
{
    int rc = drive(s);
    *done = s->done;
    return rc;
}
