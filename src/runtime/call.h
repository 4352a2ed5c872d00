/* call.h -- one tagged allreduce as the algorithms see it.
 *
 * The driver (allreduce.c) validates the input, runs the agreement step and
 * fills in a sparcml_call; an algorithm computes the sum into recvbuf and
 * records what it sent.  Failures every rank detects identically (the
 * result does not fit recvbuf) are returned in `reason`, never by leaving
 * the protocol early, so no rank is left waiting. */
#ifndef SPARCML_CALL_H
#define SPARCML_CALL_H

#include <mpi.h>
#include <stdint.h>

#include "core/agree.h"
#include "runtime/comm_ctx.h"
#include "kernel/qsgd.h"
#include "kernel/stream.h"

typedef struct sparcml_call {
    sparcml_ctx *ctx;
    sv input;            /* validated; lives in recvbuf under MPI_IN_PLACE */
    void *recvbuf;
    uint64_t recv_bytes; /* capacity of recvbuf: count * 8, equal on all ranks */
    uint64_t dim;
    int vtype;
    uint64_t k_max, k_sum;
    qsgd_params q;       /* q.bits == 0: no quantization (always so for integers) */
    int q_sparse;        /* quantize the values of sparse messages too */
    /* filled in by the algorithm */
    uint64_t bytes_sent; /* by this rank (see docs/design.md for vendor phases) */
    uint64_t result_nnz;
    int result_dense;
    int chunks_run;      /* recursive doubling's chunks per round as it ran (0, 1: not pipelined) */
    int reason;          /* enum sparcml_reason, identical on all ranks */
    int tag_offset;      /* TAG_KINDS_ * (the call's sequence number % TAG_CALLS) */
    int pipeline_chunks; /* the agreed problem's chunks per round (select_pipeline_chunks; <= 1: none) */
    /* The agreement stage (allreduce.c): while `recording`, every message
     * carries the sender's agreement record ahead of its stream (absent
     * streams send the record alone) and each received record is merged
     * into `record` (p2p.c), and the result is kept in `pending` instead of
     * being delivered (call_deliver): only the complete record says whether
     * it may be.  The algorithms do not look at it: they ask
     * call_may_write_result. */
    int recording;
    int piggybacked;          /* this call's data travelled with the records */
    int selected;             /* what the selector picks for the agreed numbers */
    agree_record record;
    sv pending;
} sparcml_call;

/* Internal tags: only ever used on the private duplicate communicator.  A
 * TAG_FOLD_OUT message carries the final result, and while the agreement
 * rides along the complete record, which replaces the receiver's own
 * (merging it would count the receiver twice in the record's sums). */
enum { TAG_FOLD_IN = 1, TAG_FOLD_OUT, TAG_RECURSIVE_DOUBLE, TAG_REDUCE_SCATTER, TAG_ALLGATHER, TAG_KINDS_ };

/* Each call's tags are offset by its sequence number on the communicator
 * (modulo TAG_CALLS: TAG_CALLS * TAG_KINDS_ stays below 32767, the least
 * MPI_TAG_UB MPI allows), so the messages of consecutive calls never
 * match each other's receives. */
enum { TAG_CALLS = 4096 };

/* Copy the final result into recvbuf in the format the size rule gives it
 * (or set reason when it does not fit); while recording, only keep it in
 * c->pending. */
int call_deliver(sparcml_call *c, const sv *result);

/* May an algorithm write (part of) the result into recvbuf before the end?
 * Not while the agreement rides on its messages: recvbuf stays untouched
 * until the records say the call succeeded. */
static inline int call_may_write_result(const sparcml_call *c) { return !c->recording; }

/* What goes on the wire for a stream: the stream itself, or its QSGD
 * encoding (in pool POOL_QMSG).  Each message is quantized once, by its
 * sender. */
typedef struct wire {
    const void *buf;
    uint64_t bytes;
    int quantized;
} wire;

/* Should stream s travel quantized? */
int call_quantizes(const sparcml_call *c, const sv *s);

/* The wire form of s.  (origin, message) name it in the random-number key:
 * ranks that hold the same data must quantize it with the same origin (in
 * recursive doubling, every member of a group holds the group's sum), so
 * they send -- and add -- the same bits. */
int p2p_encode(sparcml_call *c, const sv *s, uint64_t origin, uint64_t message, int which, wire *w);

/* What the receiver of w decodes (w itself when not quantized), decoded
 * into pool `which`: the sender adds exactly what its partner adds. */
int p2p_decode_own(sparcml_call *c, const sv *s, const wire *w, int which, sv *out);

/* Nonblocking send of a wire message; counts the bytes. */
int p2p_isend(sparcml_call *c, const wire *w, int dest, int tag, MPI_Request *req);

/* Receive a stream of unknown size (schedule.h's sched_recv: source, tag,
 * the pool for the raw message, the pool a quantized one is decoded into,
 * where the stream goes and which pool holds it), blocking or by polling
 * (*flag once it is complete). */
typedef struct sched_recv sched_recv;
int p2p_recv_blocking(sparcml_call *c, sched_recv *r);
int p2p_recv_test(sparcml_call *c, sched_recv *r, int *flag);
/* Match r's message and start receiving it (blocking: wait for it to be
 * there; else only if it is); the calls above complete it. */
int p2p_recv_start(sparcml_call *c, sched_recv *r, int blocking);

/* A plain (unquantized) wire view of a stream. */
static inline wire wire_of(const sv *s)
{
    wire w = {s->base, sv_is_absent(s) ? 0 : stream_bytes(s), 0};
    return w;
}

/* Out-of-memory while the others go on: there is no way to tell them
 * without a hang-free protocol, so this is reported as MPI_ERR_NO_MEM on
 * this rank (see sparcml(7), LIMITATIONS). */
#define CALL_NOMEM(c) ((c)->reason = SPARCML_R_NOMEM, MPI_ERR_NO_MEM)

/* What the owner of a slice holds after the reduce-scatter. */
typedef struct split_slice {
    sv sum;                  /* re-based to the slice; in a pool buffer */
    const uint64_t *present; /* dense sum: the union's indices (NULL: all) */
    uint64_t union_nnz;      /* indices any rank supplied in the slice */
} split_slice;

/* The bounds of the P slices: offsets[0..P]. */
void split_bounds(uint64_t dim, int P, uint64_t *offsets);

#endif
