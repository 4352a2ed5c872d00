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

#include "agree.h"
#include "comm_ctx.h"
#include "qsgd.h"
#include "stream.h"

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
    int reason;          /* enum sparcml_reason, identical on all ranks */
    /* Agreement (allreduce.c): while `recording`, every message carries the
     * sender's agreement record ahead of its stream (absent streams send the
     * record alone), each received record is merged into `record`, and the
     * result is kept in `pending` instead of being delivered: only the
     * complete record says whether it may be. */
    int recording;
    int piggybacked;          /* this call's data travelled with the records */
    int selected;             /* what the selector picks for the agreed numbers */
    agree_record record;
    sv pending;
} sparcml_call;

/* Internal tags: only ever used on the private duplicate communicator. */
enum { TAG_FOLD_IN = 1, TAG_FOLD_OUT, TAG_RECURSIVE_DOUBLE, TAG_REDUCE_SCATTER, TAG_ALLGATHER };

/* Copy the final result into recvbuf in the format the size rule gives it
 * (or set reason when it does not fit); while recording, only keep it in
 * c->pending. */
int call_deliver(sparcml_call *c, const sv *result);

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

/* Blocking / nonblocking send of a wire message; counts the bytes. */
int p2p_send(sparcml_call *c, const wire *w, int dest, int tag);
int p2p_isend(sparcml_call *c, const wire *w, int dest, int tag, MPI_Request *req);

/* Receive a stream of unknown size from src into pool raw_pool, decoding a
 * quantized one into dec_pool; *where (may be NULL) tells which pool holds
 * the stream *out. */
int p2p_recv(sparcml_call *c, int src, int tag, int raw_pool, int dec_pool, sv *out, int *where);

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

/* The four algorithms, one file each. */
int sparcml_ssar_recursive_double(sparcml_call *c);
int sparcml_ssar_split_allgather(sparcml_call *c);
int sparcml_dsar_split_allgather(sparcml_call *c);
int sparcml_dense_allreduce(sparcml_call *c);

/* What the owner of a slice holds after the reduce-scatter. */
typedef struct split_slice {
    sv sum;                  /* re-based to the slice; in a pool buffer */
    const uint64_t *present; /* dense sum: the union's indices (NULL: all) */
    uint64_t union_nnz;      /* indices any rank supplied in the slice */
} split_slice;

/* The sparse reduce-scatter both split algorithms start with: slice r of
 * [0, dim) (ctx->offsets[r] .. ctx->offsets[r+1]) is summed on rank r. */
int split_reduce_scatter(sparcml_call *c, split_slice *mine);

/* Allgather of the owners' union sizes (into ctx->unions); *total is the
 * number of entries of the result. */
int split_union(sparcml_call *c, const split_slice *mine, uint64_t *total);

/* Allgather of the reduced slices into recvbuf, in the format the size
 * rule gives a result of result_nnz entries (after split_union). */
int split_gather(sparcml_call *c, const split_slice *mine, uint64_t result_nnz);

/* Allgather of one message of any size per rank into POOL_GATHER; message r
 * starts at *gathered + ctx->displs[r].  Its sizes are allgathered first
 * unless sizes_known (then ctx->counts holds them, rounded to 8). */
int split_allgather_messages(sparcml_call *c, const wire *mine, int sizes_known, char **gathered);

/* The bounds of the P slices: offsets[0..P]. */
void split_bounds(uint64_t dim, int P, uint64_t *offsets);

#endif
