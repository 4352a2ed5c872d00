/* p2p.h -- point-to-point exchange of streams on the private communicator
 * (optionally QSGD-quantized, optionally behind the call's rider), and the
 * delivery of the result (call.h's call_deliver). */
#ifndef SPARCML_P2P_H
#define SPARCML_P2P_H

#include <mpi.h>
#include <stdint.h>

#include "runtime/call.h"

/* What goes on the wire for a stream: the stream itself, or its QSGD
 * encoding (in pool POOL_QMSG).  Each message is quantized once, by its
 * sender; a part of an input the rank quantized itself travels as codes
 * that decode to exactly its values (not `quantized`: nothing is lost). */
typedef struct wire {
    const void *buf;
    uint64_t bytes;
    int quantized;
    /* buf starts with the call's rider record (call.h), written there by
     * the algorithm: sent as it is, not framed again (runtime/p2p.c). */
    int framed;
    /* Sent without the rider's record: a pipelined message's chunk after
     * the first, which carries it.  The runtime frames every other message
     * (p2p_isend), and its receiver must expect the same form
     * (p2p_recv.bare): a fact of the message on the wire, which the
     * algorithm that cuts it into chunks states. */
    int bare;
} wire;

/* A plain (unquantized) wire view of a stream. */
static inline wire wire_of(const sv *s)
{
    wire w = {.buf = s->base, .bytes = sv_is_absent(s) ? 0 : stream_bytes(s)};
    return w;
}

/* Should stream s travel quantized? */
int call_quantizes(const sparcml_call *c, const sv *s);

/* The wire form of s.  (origin, message) name it in the random-number key:
 * ranks that hold the same data must quantize it with the same origin (in
 * recursive doubling, every member of a group holds the group's sum), so
 * they send -- and add -- the same bits.  s being the input itself, with
 * c->input_block, it travels as the input's codes.  *w is written whole:
 * a wire kept across rounds must not keep `framed` from a message framed
 * in place, or the next one would go without its record. */
int p2p_encode(sparcml_call *c, const sv *s, uint64_t origin, uint64_t message, int which, wire *w);

/* With c->input_block: the wire forms of parts[0..n), the consecutive
 * parts of the input in order (the split algorithms' parts, recursive
 * doubling's chunks), as the input's codes in pool POOL_QMSG where that is
 * smaller; parts[skip] stays with the rank (skip < 0: none does). */
int p2p_encode_input_parts(sparcml_call *c, const sv *parts, int n, int skip, wire *wires);

/* What the receiver of w decodes (w itself when not quantized), decoded
 * into pool `which`: the sender adds exactly what its partner adds. */
int p2p_decode_own(sparcml_call *c, const sv *s, const wire *w, int which, sv *out);

/* The call's rider record into the rider->bytes of room in front of w's
 * bytes, which the algorithm left there: w becomes the framed message, sent
 * as it is (no copy of the stream behind the record). */
void p2p_frame(const sparcml_call *c, wire *w);

/* Nonblocking send of a wire message; counts the bytes. */
int p2p_isend(sparcml_call *c, const wire *w, int dest, int tag, MPI_Request *req);

/* A receive of a stream of unknown size: source, tag, the pool for the
 * raw message, the pool a quantized one is decoded into, where the stream
 * goes and which pool holds it. */
typedef struct p2p_recv {
    int src, tag, raw_pool, dec_pool;
    sv *out;
    int *where;
    int bare;        /* carries no rider record (wire.bare) */
    /* Carries the complete record (call.h, call_rider), which replaces the
     * receiver's: the algorithm says so (sched_recv_complete). */
    int complete;
    int posted;      /* non-blocking: matched and being received */
    MPI_Request req;
    char *buf;
    MPI_Count bytes;
} p2p_recv;

/* Receive r blocking, or by polling (*flag once it is complete). */
int p2p_recv_blocking(sparcml_call *c, p2p_recv *r);
int p2p_recv_test(sparcml_call *c, p2p_recv *r, int *flag);
/* Match r's message and start receiving it (blocking: wait for it to be
 * there; else only if it is); the calls above complete it. */
int p2p_recv_start(sparcml_call *c, p2p_recv *r, int blocking);

#endif
