/* comm_ctx.h -- per-communicator state of the library.
 *
 * The first call of the library on a communicator duplicates it
 * (collectively, inside that call) and caches the duplicate with an
 * attribute; every message of the library goes over the duplicate, so it
 * can never match an application receive.  When the application frees
 * its communicator, the attribute's delete callback lets the layer above
 * finish with it (the extension's `freeing`: its pending calls complete),
 * then frees the duplicate, the scratch pool and the extension (the policy
 * state of the layers above, opaque here). */
#ifndef SPARCML_COMM_CTX_H
#define SPARCML_COMM_CTX_H

#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>


/* Scratch buffers, reused across calls: they only grow.  Pools are
 * numbered: the runtime's own (the messages it sends, receives, codes and
 * frames: p2p.h) come first, each layer above numbers its own after those
 * of the layer below (alg/scratch.h, core/op.h), and the top one says how
 * many there are (ctx_extension.pools).  What a pool holds is its
 * namer's business: here a pool is a number and a buffer. */
enum {
    POOL_SEND,  /* an outgoing message copied or assembled for sending */
    POOL_RECV,  /* an incoming message */
    POOL_QMSG,  /* a quantized outgoing message */
    POOL_QDEC,  /* a decoded incoming message */
    POOL_QOWN,  /* this rank's own message as its partner will decode it */
    POOL_FRAME, /* an outgoing message behind the call's rider record (call.h) */
    CTX_RUNTIME_POOLS
};

typedef struct sparcml_ctx {
    MPI_Comm comm; /* the private duplicate */
    int ready;            /* 0 until the first call's set-up steps have run */
    MPI_Request setup;    /* its MPI_Comm_idup */
    char *placement;      /* its allgather: (size + 1) contributions, this rank's last */
    int rank, size;
    int pools;          /* ext->pools */
    void **pool;        /* pools entries */
    size_t *pool_bytes; /* pools entries */
    int sealed;         /* an algorithm runs on reserved pools (ctx_reserve) */
    /* Per-rank arrays for the algorithms' collectives: */
    MPI_Count *counts;  /* size entries, for the v-collectives */
    MPI_Aint *displs;   /* size entries */
    uint64_t *offsets;  /* size + 1 entries: a partition of the vector, rank r's part from offsets[r] */
    uint64_t *rank_words; /* size entries: a word from each rank (an allgather's) */
    MPI_Request *reqs;  /* send_slots entries: sends in flight */
    int send_slots;     /* ext->send_slots(size) */
    int *int_counts;    /* 2 size entries: a non-blocking allgatherv's int counts (mpi_flavour.h) */
    double ranks_per_core; /* detected (base/placement.h) */
    int one_node;          /* every rank on one node as MPI places them (base/placement.h) */
    uint64_t calls;     /* calls completed: part of QSGD's random-number key */
    uint64_t pool_growths; /* times a pool was (re)allocated: its pages are new */
    uint64_t started;   /* calls started (blocking or not): their sequence numbers */
    atomic_int pending_calls; /* the lane of the progress engine (runtime/progress.h) */
    const struct ctx_extension *ext;
    max_align_t extension[]; /* the caller's, ext->bytes long */
} sparcml_ctx;

/* What the layers above keep per communicator, opaque here: its size, how
 * a new one starts (called once, on the zeroed bytes), and what must
 * happen before the context goes; how many scratch pools they number (at
 * least CTX_RUNTIME_POOLS); and how many sends their schedules may keep in
 * flight on `size` ranks (the requests runtime/schedule.h holds them in,
 * allocated with the context). */
typedef struct ctx_extension {
    size_t bytes;
    int pools;
    void (*init)(void *extension);
    void (*freeing)(sparcml_ctx *ctx);
    int (*send_slots)(int size);
} ctx_extension;

/* The context of comm, created on first use with the extension `ext`
 * (every call passes the same).  A context created here is not ready:
 * its duplicate is made (blocking: MPI_Comm_dup, collective over comm) or
 * under way (MPI_Comm_idup, ctx->setup), and its ranks per core are
 * unknown until the call's schedule has run the set-up steps (core/op.c):
 * wait for ctx->setup, allgather ctx_setup_contribution into
 * ctx_setup_all, call ctx_setup_done.  Calls on the context after it run
 * once that call has (the progress engine's lanes). */
int ctx_get(MPI_Comm comm, const ctx_extension *ext, int blocking, sparcml_ctx **out);
/* The context of comm if the library has made one (*out NULL if not). */
int ctx_find(MPI_Comm comm, sparcml_ctx **out);
void *ctx_setup_contribution(sparcml_ctx *ctx);
void *ctx_setup_all(sparcml_ctx *ctx);
int ctx_setup_done(sparcml_ctx *ctx);

/* At MPI_Finalize, once no call is pending: free the contexts of
 * MPI_COMM_WORLD and MPI_COMM_SELF (other communicators' go when the
 * application frees them) and the keyval. */
int ctx_finalize(void);

/* The fewest bytes a pool hands out: a request for none still gets a
 * buffer (not NULL, which says out of memory), and a reservation of what
 * an algorithm asks of a pool counts them (alg/scratch.h). */
enum { CTX_BUFFER_MIN_BYTES = 8 };

/* Pointer to pool buffer `which` with at least `bytes` bytes, or NULL when
 * out of memory (the pool is then as it was).  The contents are not
 * preserved when it grows.  While
 * the context is sealed, an algorithm runs on pools reserved for it: a
 * pool that must still grow means its scratch bound is wrong (a build
 * with the sanitizers stops there; others allocate as usual). */
void *ctx_buffer(sparcml_ctx *ctx, int which, uint64_t bytes);

/* Whether pool `which` holds `bytes` as it is (never grown: for buffers
 * whose contents must stay where they are); false while sealed means a
 * wrong scratch bound, as for ctx_buffer. */
int ctx_holds(const sparcml_ctx *ctx, int which, uint64_t bytes);

/* The pools' capacities in bytes, ctx->pools of them. */
void ctx_capacities(const sparcml_ctx *ctx, uint64_t *capacity);

/* Grow every pool to at least need[] (ctx->pools entries); 1 if
 * all are there, 0 if one could not be allocated.  A pool that must grow
 * gets a quarter more than it needs: inputs that vary a little from call
 * to call then do not reallocate it each time (each reallocation leaves
 * the allocator's heap a little more fragmented). */
int ctx_reserve(sparcml_ctx *ctx, const uint64_t *need);

#endif
