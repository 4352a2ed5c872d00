/* p2p.c -- point-to-point exchange of streams, and delivery of the result
 * (p2p.h). */
#include "config.h"

#include <string.h>

#include "base/mpi_flavour.h"
#include "runtime/p2p.h"

/* A result no merge has shaped (at P = 1 the input itself) follows the
 * size rule too: it is written dense when that is not larger. */
static int deliver_dense(sparcml_call *c, const sv *result)
{
    sv src = *result, out;
    if (src.base == c->recvbuf) { /* MPI_IN_PLACE: expand from a copy */
        void *copy = ctx_buffer(c->ctx, POOL_SEND, stream_bytes(&src));
        if (!copy) return call_nomem(c);
        src = stream_copy(&src, copy);
    }
    out = stream_init(c->recvbuf, src.dim, src.vtype, src.dim, 1);
    stream_densify(&src, out.val);
    c->result_nnz = out.nnz;
    c->result_dense = 1;
    return MPI_SUCCESS;
}

int call_deliver(sparcml_call *c, const sv *result)
{
    int dense = result->dense || sparcml_prefers_dense(result->dim, result->vtype, result->nnz);
    uint64_t bytes = dense ? sparcml_dense_bytes(result->dim, result->vtype) : stream_bytes(result);
    if (c->rider) {
        c->pending = *result;
        return MPI_SUCCESS;
    }
    /* Every rank holds the same result and the same capacity, so every rank
     * takes the same branch here. */
    if (!call_result_fits(c, bytes)) return MPI_SUCCESS;
    if (dense && !result->dense) return deliver_dense(c, result);
    c->result_nnz = result->nnz;
    c->result_dense = result->dense;
    if (result->base != c->recvbuf) memmove(c->recvbuf, result->base, bytes);
    return MPI_SUCCESS;
}

int call_quantizes(const sparcml_call *c, const sv *s)
{
    return c->q.bits != 0 && s->nnz > 0 && (s->dense || c->q_sparse);
}

/* The part of the input s, starting at the input's entry `first`, as codes
 * on the input's grid at buf, when that is smaller; *w is s's plain wire. */
static void encode_input_part(const sparcml_call *c, const sv *s, uint64_t first, void *buf, wire *w)
{
    uint64_t bytes = qsgd_encode_on_grid(s, &c->input_q, c->input_block, first, buf);
    if (bytes > 0 && bytes < w->bytes) *w = (wire){.buf = buf, .bytes = bytes};
}

int p2p_encode_input_parts(sparcml_call *c, const sv *parts, int n, int skip, wire *wires)
{
    const sv *in = &c->input;
    char *buf = ctx_buffer(c->ctx, POOL_QMSG, qsgd_grid_bound(in->nnz, in->iw, in->vtype, &c->input_q,
                                                              (uint64_t)n));
    uint64_t first = 0;
    if (!buf) return call_nomem(c);
    for (int r = 0; r < n; first += parts[r++].nnz) {
        if (r == skip) continue;
        encode_input_part(c, &parts[r], first, buf, &wires[r]);
        if (wires[r].buf == buf) buf += sparcml_round8(wires[r].bytes);
    }
    return MPI_SUCCESS;
}

int p2p_encode(sparcml_call *c, const sv *s, uint64_t origin, uint64_t message, int which, wire *w)
{
    qsgd_key key = {.seed = c->q.seed, .rank = origin, .call = c->ctx->calls, .message = message};
    void *buf;
    if (c->input_block && s->base == c->input.base) {
        buf = ctx_buffer(c->ctx, which, qsgd_grid_bound(s->nnz, s->iw, s->vtype, &c->input_q, 1));
        if (!buf) return call_nomem(c);
        *w = wire_of(s);
        encode_input_part(c, s, 0, buf, w);
        return MPI_SUCCESS;
    }
    if (!call_quantizes(c, s)) {
        *w = wire_of(s);
        return MPI_SUCCESS;
    }
    buf = ctx_buffer(c->ctx, which, qsgd_message_bound(s, &c->q));
    if (!buf) return call_nomem(c);
    *w = (wire){.buf = buf, .bytes = qsgd_encode_message(s, &c->q, &key, buf), .quantized = 1};
    return MPI_SUCCESS;
}

int p2p_decode_own(sparcml_call *c, const sv *s, const wire *w, int which, sv *out)
{
    void *buf;
    if (!w->quantized) {
        *out = *s;
        return MPI_SUCCESS;
    }
    buf = ctx_buffer(c->ctx, which, qsgd_decoded_bytes(w->buf));
    if (!buf) return call_nomem(c);
    *out = qsgd_decode_message(w->buf, buf);
    return MPI_SUCCESS;
}

/* What a message carries of the rider: this rank's own record, or the
 * combination so far (call.h). */
static const void *rider_says(const call_rider *rd)
{
    return rd->own ? rd->own : rd->record;
}

void p2p_frame(const sparcml_call *c, wire *w)
{
    char *framed = (char *)w->buf - c->rider->bytes;
    memcpy(framed, rider_says(c->rider), c->rider->bytes);
    w->buf = framed;
    w->bytes += c->rider->bytes;
    w->framed = 1;
}

/* With a rider, a message is the rider's record followed by the stream,
 * in one buffer: where the algorithm left no room in front of the stream
 * (p2p_frame), both are copied into one: MPICH would pack a two-block
 * datatype into a temporary buffer anyway, and one contiguous message
 * costs the same latency as the record alone. */
static int framed_isend(sparcml_call *c, const wire *w, int dest, int tag, MPI_Request *req)
{
    const call_rider *rd = c->rider;
    uint64_t bytes = rd->bytes + w->bytes;
    char *frame = ctx_buffer(c->ctx, POOL_FRAME, bytes);
    if (!frame) return call_nomem(c);
    memcpy(frame, rider_says(rd), rd->bytes);
    if (w->bytes) memcpy(frame + rd->bytes, w->buf, w->bytes);
    c->bytes_sent += rd->bytes;
    return flv_isend_bytes(frame, (MPI_Count)bytes, dest, tag, c->ctx->comm, req);
}

int p2p_isend(sparcml_call *c, const wire *w, int dest, int tag, MPI_Request *req)
{
    c->bytes_sent += w->bytes;
    if (c->rider && !w->framed && !w->bare) return framed_isend(c, w, dest, tag, req);
    return flv_isend_bytes(w->buf, (MPI_Count)w->bytes, dest, tag, c->ctx->comm, req);
}

/* Take the record off the front of a received message: merge it (or take
 * it, when it is complete: p2p_recv.complete), and point *payload / *n
 * at the stream behind it (n == 0: absent).  Every message of an exchange
 * with a rider comes from a sender with one (all ranks set it for the same
 * exchanges), so it is at least a record long; chunks sent bare are
 * received bare (their senders and receivers count the same chunks). */
static int unframe(sparcml_call *c, int complete, char **payload, MPI_Count *n)
{
    const call_rider *rd = c->rider;
    if (*n < (MPI_Count)rd->bytes) return MPI_ERR_INTERN;
    rd->merge(rd->record, *payload, complete);
    *payload += rd->bytes;
    *n -= (MPI_Count)rd->bytes;
    return MPI_SUCCESS;
}

/* The matched message r->bytes long is in r->buf: take the record off a
 * framed one, decode a quantized one. */
static int received(sparcml_call *c, p2p_recv *r)
{
    char *buf = r->buf;
    MPI_Count n = r->bytes;
    void *dec;
    int rc = c->rider && !r->bare ? unframe(c, r->complete, &buf, &n) : MPI_SUCCESS;
    if (rc != MPI_SUCCESS) return rc;
    if (r->where) *r->where = r->raw_pool;
    if (n == 0) {
        *r->out = sv_absent();
        return MPI_SUCCESS;
    }
    if (!qsgd_is_message(buf)) {
        *r->out = stream_view(buf);
        return MPI_SUCCESS;
    }
    dec = ctx_buffer(c->ctx, r->dec_pool, qsgd_decoded_bytes(buf));
    if (!dec) return call_nomem(c);
    *r->out = qsgd_decode_message(buf, dec);
    if (r->where) *r->where = r->dec_pool;
    return MPI_SUCCESS;
}

/* A buffer for a matched message of st's size; NULL: out of memory (the
 * message is then taken off the queue anyway, so its sender completes). */
static char *receive_buffer(sparcml_call *c, p2p_recv *r, const MPI_Status *st, MPI_Message *msg, int *rc)
{
    char *buf;
    *rc = flv_message_bytes(st, &r->bytes);
    if (*rc != MPI_SUCCESS) return NULL;
    buf = ctx_buffer(c->ctx, r->raw_pool, (uint64_t)r->bytes);
    if (!buf) {
        /* A zero-byte receive takes the message off the queue: its
         * truncation is expected, any other error is the one to report. */
        char drain;
        int drc = flv_mrecv_bytes(&drain, 0, msg), cls = MPI_ERR_TRUNCATE;
        if (drc != MPI_SUCCESS && PMPI_Error_class(drc, &cls) != MPI_SUCCESS) cls = MPI_ERR_OTHER;
        *rc = drc == MPI_SUCCESS || cls == MPI_ERR_TRUNCATE ? call_nomem(c) : drc;
    }
    return buf;
}

int p2p_recv_start(sparcml_call *c, p2p_recv *r, int blocking)
{
    MPI_Message msg;
    MPI_Status st;
    int flag = 1, rc = blocking ? PMPI_Mprobe(r->src, r->tag, c->ctx->comm, &msg, &st)
                                : PMPI_Improbe(r->src, r->tag, c->ctx->comm, &flag, &msg, &st);
    if (rc != MPI_SUCCESS || !flag) return rc;
    r->buf = receive_buffer(c, r, &st, &msg, &rc);
    if (!r->buf) return rc;
    rc = flv_imrecv_bytes(r->buf, r->bytes, &msg, &r->req);
    if (rc == MPI_SUCCESS) r->posted = 1;
    return rc;
}

int p2p_recv_blocking(sparcml_call *c, p2p_recv *r)
{
    MPI_Message msg;
    MPI_Status st;
    int rc;
    if (r->posted) { /* started early */
        rc = PMPI_Wait(&r->req, MPI_STATUS_IGNORE);
        return rc == MPI_SUCCESS ? received(c, r) : rc;
    }
    rc = PMPI_Mprobe(r->src, r->tag, c->ctx->comm, &msg, &st);
    if (rc != MPI_SUCCESS) return rc;
    r->buf = receive_buffer(c, r, &st, &msg, &rc);
    if (!r->buf) return rc;
    rc = flv_mrecv_bytes(r->buf, r->bytes, &msg);
    return rc == MPI_SUCCESS ? received(c, r) : rc;
}

int p2p_recv_test(sparcml_call *c, p2p_recv *r, int *flag)
{
    int rc;
    *flag = 0;
    if (!r->posted) {
        rc = p2p_recv_start(c, r, 0);
        if (rc != MPI_SUCCESS || !r->posted) return rc;
    }
    rc = PMPI_Test(&r->req, flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || !*flag) return rc;
    return received(c, r);
}
