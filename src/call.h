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

#include "comm_ctx.h"
#include "stream.h"

typedef struct sparcml_call {
    sparcml_ctx *ctx;
    sv input;            /* validated; lives in recvbuf under MPI_IN_PLACE */
    void *recvbuf;
    uint64_t recv_bytes; /* capacity of recvbuf: count * 8, equal on all ranks */
    uint64_t dim;
    int vtype;
    uint64_t k_max, k_sum;
    /* filled in by the algorithm */
    uint64_t bytes_sent; /* by this rank (see docs/design.md for vendor phases) */
    uint64_t result_nnz;
    int result_dense;
    int reason;          /* enum sparcml_reason, identical on all ranks */
} sparcml_call;

/* Internal tags: only ever used on the private duplicate communicator. */
enum { TAG_FOLD_IN = 1, TAG_FOLD_OUT, TAG_RECURSIVE_DOUBLE, TAG_REDUCE_SCATTER };

/* Copy the final result into recvbuf (or set reason when it does not fit). */
void call_deliver(sparcml_call *c, const sv *result);

/* Blocking send of a stream; counts the bytes. */
int p2p_send(sparcml_call *c, const sv *s, int dest, int tag);

/* Nonblocking send of a stream; counts the bytes. */
int p2p_isend(sparcml_call *c, const sv *s, int dest, int tag, MPI_Request *req);

/* Receive a stream of unknown size from src into pool buffer `which`. */
int p2p_recv(sparcml_call *c, int src, int tag, int which, sv *out);

/* Out-of-memory while the others go on: there is no way to tell them
 * without a hang-free protocol, so this is reported as MPI_ERR_NO_MEM on
 * this rank (see sparcml(7), LIMITATIONS). */
#define CALL_NOMEM(c) ((c)->reason = SPARCML_R_NOMEM, MPI_ERR_NO_MEM)

/* The four algorithms, one file each. */
int sparcml_ssar_recursive_double(sparcml_call *c);
int sparcml_ssar_split_allgather(sparcml_call *c);
int sparcml_dsar_split_allgather(sparcml_call *c);
int sparcml_dense_allreduce(sparcml_call *c);

/* The sparse reduce-scatter both split algorithms start with: slice r of
 * [0, dim) (ctx->offsets[r] .. ctx->offsets[r+1]) is summed on rank r.
 * *mine receives this rank's reduced slice (in a pool buffer). */
int split_reduce_scatter(sparcml_call *c, sv *mine);

/* The bounds of the P slices: offsets[0..P]. */
void split_bounds(uint64_t dim, int P, uint64_t *offsets);

#endif
