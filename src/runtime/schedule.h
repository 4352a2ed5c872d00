/* schedule.h -- a call's work as a schedule of steps, and the driver that
 * runs it, blocking or not.
 *
 * As in libnbc and MPICH's collective schedules, an algorithm does not
 * communicate itself: it describes rounds.  A step is a function that does
 * a round's local work (merging what the previous round received, packing
 * what goes out) and posts the round's operations -- sends, receives of
 * streams of unknown size, collectives on the private communicator -- and
 * names the step that follows.  The driver runs the next step once every
 * operation of the round has completed:
 *
 *  - sched_run() drives a schedule to its end at once (the blocking call):
 *    receives are blocking matched probes, collectives the vendor's
 *    blocking ones, so the blocking path costs what direct calls cost;
 *  - sched_progress() advances it as far as it can without blocking
 *    (non-blocking and persistent calls): matched probes are polled,
 *    collectives are the vendor's non-blocking ones.
 *
 * The contract of a step: everything it posted has completed when the
 * next step runs (sends only when that step was named with
 * sched_next_after_sends: a reduce-scatter posts its sends round by round,
 * ahead of its receives, and waits for them all at its end); the order in
 * which a round's operations are issued is not specified, so a step must
 * not depend on it; a step that names no next step ends the algorithm,
 * and the driver continues with s->then, if set
 * (the agreement stage continues with the selected algorithm, the
 * algorithm with the call's conclusion).  A step returns an MPI error code;
 * a failure every rank detects alike goes into c->reason instead, so that
 * no rank leaves the protocol early.
 *
 * Several schedules on one communicator run one after the other (the
 * progress engine keeps them in start order, runtime/progress.h), so a
 * schedule may use the communicator's scratch pool and request array as
 * its own.
 *
 * The driver knows no algorithm: a schedule is given SCHED_STATE_BYTES of
 * storage that the running algorithm uses for its state between steps
 * (sched_state), opaque here; the algorithm sets it up when it starts, so
 * that starting a schedule writes none of it. */
#ifndef SPARCML_SCHEDULE_H
#define SPARCML_SCHEDULE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/p2p.h"

typedef struct sched sched;
typedef int (*sched_step)(sched *s);

enum { SCHED_MAX_REQS = 8 }; /* a round's collectives (chunks) and receives of known size */
enum { SCHED_STATE_BYTES = 2048 };

struct sched {
    sparcml_call *c;
    int blocking;
    sched_step next, then;
    int wait_sends;         /* the next step waits for every send too */
    int rc;                 /* first MPI error: the schedule stops */
    int done;
    p2p_recv recv;          /* at most one receive per round */
    int nrecv;
    MPI_Request reqs[SCHED_MAX_REQS]; /* the round's collectives and sized receives */
    int nreqs;
    MPI_Request *sends;     /* ctx->reqs: sends in flight */
    int nsends;
    void *state;            /* the algorithm's: SCHED_STATE_BYTES */
};

/* The running algorithm's state: each algorithm file defines its struct
 * and asserts that it fits (SCHED_STATE_FITS). */
static inline void *sched_state(sched *s) { return s->state; }
#define SCHED_STATE_FITS(type) \
    _Static_assert(sizeof(type) <= SCHED_STATE_BYTES, #type " fits a schedule's state")

/* A schedule for call c; its first step is `first`; `state`: the
 * algorithm's storage, SCHED_STATE_BYTES aligned as max_align_t. */
void sched_init(sched *s, sparcml_call *c, int blocking, sched_step first, void *state);

/* Run s to its end (blocking).  Returns the first MPI error, if any. */
int sched_run(sched *s);

/* Advance s without blocking; *done when it has ended (then the return
 * value is its result). */
int sched_progress(sched *s, int *done);

/* Name the step that runs once this round's receives and collectives have
 * completed; the second form also waits for every send posted so far. */
static inline void sched_next(sched *s, sched_step next) { s->next = next; }
static inline void sched_next_after_sends(sched *s, sched_step next)
{
    s->next = next;
    s->wait_sends = 1;
}

/* Post the round's operations.  Each counts what this rank hands to MPI in
 * c->bytes_sent: sends their bytes, collectives this rank's share of a
 * bandwidth-optimal algorithm's (schedule.c). */
int sched_send(sched *s, const wire *w, int dest, int tag);
int sched_recv_stream(sched *s, int src, int tag, int raw_pool, int dec_pool, sv *out, int *where);
/* The same for a pipelined message's chunk after the first, matched and
 * started now (blocking: as soon as it is there), so that it travels while
 * the step goes on to merge; it carries no rider record (call.h: the
 * first chunk does). */
int sched_recv_chunk(sched *s, int src, int tag, int raw_pool, int dec_pool, sv *out);
/* The round's receive (sched_recv_stream) carries the complete record
 * (call.h: a message that follows the exchange every rank's record took
 * part in), which replaces the receiver's: merging it would count the
 * receiver twice in the record's sums. */
static inline void sched_recv_complete(sched *s) { s->recv.complete = 1; }
/* A receive of a size both ends know, straight into buf (no probe, no
 * pool): `bytes` from src, sent with sched_send and the same tag. */
int sched_recv_bytes(sched *s, void *buf, MPI_Count bytes, int src, int tag);
int sched_allgather(sched *s, const void *mine, int bytes, void *all);
int sched_allgatherv_bytes(sched *s, const void *sendbuf, MPI_Count sendbytes, void *recvbuf,
                           const MPI_Count *counts, const MPI_Aint *displs);
int sched_allreduce(sched *s, void *buf, MPI_Count count, MPI_Datatype type, MPI_Op op);
/* Broadcast `words` 8-byte words at buf from rank root (at most INT_MAX
 * words, else MPI_ERR_COUNT on every rank alike). */
int sched_bcast_words(sched *s, void *buf, uint64_t words, int root);
/* The vendor's allreduce of the application's buffers (any datatype and
 * op the vendor takes), over the private duplicate. */
int sched_vendor_allreduce(sched *s, const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                           MPI_Op op);
/* A request started elsewhere (the context's MPI_Comm_idup), handed over:
 * the round completes it. */
int sched_request(sched *s, MPI_Request *req);

#endif
