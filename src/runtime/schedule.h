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
 * Several schedules on one communicator run one after the other
 * (request.c keeps them in start order), so a schedule may use the
 * communicator's scratch pool and request array as its own. */
#ifndef SPARCML_SCHEDULE_H
#define SPARCML_SCHEDULE_H

#include <mpi.h>
#include <stdint.h>

#include "runtime/call.h"

typedef struct sched sched;
typedef int (*sched_step)(sched *s);

/* A receive of a stream of unknown size (p2p.c completes it). */
typedef struct sched_recv {
    int src, tag, raw_pool, dec_pool;
    sv *out;
    int *where;
    int posted;      /* non-blocking: matched and being received */
    MPI_Request req;
    char *buf;
    MPI_Count bytes;
} sched_recv;

enum { SCHED_MAX_REQS = 8 }; /* a round's collective requests (chunks) */

struct sched {
    sparcml_call *c;
    int blocking;
    sched_step next, then;
    int wait_sends;         /* the next step waits for every send too */
    int rc;                 /* first MPI error: the schedule stops */
    int done;
    sched_recv recv;        /* at most one receive per round */
    int nrecv;
    MPI_Request reqs[SCHED_MAX_REQS]; /* the round's collectives */
    int nreqs;
    MPI_Request *sends;     /* ctx->reqs: sends in flight */
    int nsends;
    /* The algorithms' state between steps (one of them runs at a time). */
    union {
        struct rd_state {
            sv cur, other;
            int cur_pool, newrank, rem, p2, mask, round;
            wire w;
            /* pipelined rounds: the sum as `chunks` range streams, in set
             * `set` of part[][] (the other set receives the next sums);
             * `got` chunks of the partner's message merged so far */
            int chunks, set, got;
            uint64_t bounds[SPARCML_PIPELINE_CHUNKS_MAX + 1];
            sv part[2][SPARCML_PIPELINE_CHUNKS_MAX];
        } rd;
        struct split_state {
            split_slice mine;
            uint64_t result_nnz;
            sv sum, part, *parts, msg;
            wire *wires, w;
            uint64_t *present;
            int step, sum_pool, where, dense, dense_certain;
            MPI_Count my_bytes;
            char *gathered;
            sched_step phase_then; /* what follows the running phase */
        } split;
        struct dense_state {
            uint64_t *present, n;
            sv out;
        } dense;
    } u;
};

/* A schedule for call c; its first step is `first`. */
void sched_init(sched *s, sparcml_call *c, int blocking, sched_step first);

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

/* Post the round's operations.  Sends count their bytes in c->bytes_sent
 * (the collectives' callers count theirs). */
int sched_send(sched *s, const wire *w, int dest, int tag);
int sched_recv_stream(sched *s, int src, int tag, int raw_pool, int dec_pool, sv *out, int *where);
/* The same, but matched and started now (blocking: as soon as the message
 * is there), so that it travels while the step goes on to merge. */
int sched_recv_stream_early(sched *s, int src, int tag, int raw_pool, int dec_pool, sv *out);
int sched_allgather(sched *s, const void *mine, int bytes, void *all);
int sched_allgatherv_bytes(sched *s, const void *sendbuf, MPI_Count sendbytes, void *recvbuf,
                           const MPI_Count *counts, const MPI_Aint *displs);
int sched_allreduce(sched *s, void *buf, MPI_Count count, MPI_Datatype type, MPI_Op op);
/* A request started elsewhere (the context's MPI_Comm_idup), handed over:
 * the round completes it. */
int sched_request(sched *s, MPI_Request *req);

/* The four algorithms, one file each: their first steps. */
int sparcml_ssar_recursive_double(sched *s);
int sparcml_ssar_split_allgather(sched *s);
int sparcml_dsar_split_allgather(sched *s);
int sparcml_dense_allreduce(sched *s);

/* The phases both split algorithms share (split_phases.c); each runs
 * `then` when it is complete.
 *
 * The sparse reduce-scatter: slice r of [0, dim) (ctx->offsets[r] ..
 * ctx->offsets[r+1]) is summed on rank r, into u.split.mine. */
int split_reduce_scatter(sched *s, sched_step then);

/* Allgather of the owners' union sizes (into ctx->unions); u.split.result_nnz
 * becomes the number of entries of the result. */
int split_union(sched *s, sched_step then);

/* Allgather of the reduced slices into recvbuf, in the format the size rule
 * gives a result of u.split.result_nnz entries (after split_union). */
int split_gather(sched *s);

/* Allgather of one message of any size per rank (u.split.w) into
 * POOL_GATHER (u.split.gathered); message r starts at ctx->displs[r].  Its
 * sizes are allgathered first unless sizes_known (then ctx->counts holds
 * them, rounded to 8). */
int split_allgather_messages(sched *s, int sizes_known, sched_step then);

#endif
