/* comm_ctx.c -- private duplicate communicators and scratch pools. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/placement.h"
#include "runtime/comm_ctx.h"

static int ctx_keyval = MPI_KEYVAL_INVALID;
static int keyval_rc = MPI_ERR_INTERN; /* written once, under keyval_once */
static pthread_once_t keyval_once = PTHREAD_ONCE_INIT;

/* Returns what freeing the duplicate returned. */
static int ctx_destroy(sparcml_ctx *ctx)
{
    int rc = MPI_SUCCESS;
    for (int i = 0; ctx->pool && i < ctx->pools; i++) free(ctx->pool[i]);
    free(ctx->pool);
    free(ctx->pool_bytes);
    free(ctx->counts);
    free(ctx->displs);
    free(ctx->offsets);
    free(ctx->rank_words);
    free(ctx->reqs);
    free(ctx->int_counts);
    free(ctx->placement);
    if (ctx->comm != MPI_COMM_NULL) rc = PMPI_Comm_free(&ctx->comm);
    free(ctx);
    return rc;
}

static int ctx_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm; (void)keyval; (void)extra;
    sparcml_ctx *ctx = attr;
    ctx->ext->freeing(ctx); /* MPI_Comm_free lets pending calls complete */
    return ctx_destroy(ctx);
}

static void keyval_create(void)
{
    /* MPI_COMM_NULL_COPY_FN: a duplicate of the application's communicator
     * gets its own context on its own first tagged call. */
    keyval_rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, ctx_delete, &ctx_keyval, NULL);
}

/* The arrays of a context of `size` ranks and its pools. */
static int ctx_alloc(sparcml_ctx *ctx)
{
    size_t n = (size_t)ctx->size;
    ctx->pool = calloc((size_t)ctx->pools, sizeof *ctx->pool);
    ctx->pool_bytes = calloc((size_t)ctx->pools, sizeof *ctx->pool_bytes);
    ctx->counts = malloc(n * sizeof *ctx->counts);
    ctx->displs = malloc(n * sizeof *ctx->displs);
    ctx->offsets = malloc((n + 1) * sizeof *ctx->offsets);
    ctx->rank_words = malloc(n * sizeof *ctx->rank_words);
    ctx->send_slots = ctx->ext->send_slots(ctx->size);
    ctx->reqs = malloc((size_t)ctx->send_slots * sizeof *ctx->reqs);
    ctx->int_counts = malloc(2 * n * sizeof *ctx->int_counts);
    if (!ctx->pool || !ctx->pool_bytes || !ctx->counts || !ctx->displs || !ctx->offsets || !ctx->rank_words
        || !ctx->reqs || !ctx->int_counts)
        return MPI_ERR_NO_MEM;
    return MPI_SUCCESS;
}

/* A context with its duplicate under way (blocking: made) and its arrays,
 * cached on comm. */
static int ctx_create(MPI_Comm comm, const ctx_extension *ext, int blocking, sparcml_ctx **out)
{
    sparcml_ctx *ctx = calloc(1, sizeof *ctx + ext->bytes);
    int rc;
    if (!ctx) return MPI_ERR_NO_MEM;
    ctx->comm = MPI_COMM_NULL;
    ctx->setup = MPI_REQUEST_NULL;
    ctx->ext = ext;
    ctx->pools = ext->pools;
    ext->init(ctx->extension);
    rc = blocking ? PMPI_Comm_dup(comm, &ctx->comm) : PMPI_Comm_idup(comm, &ctx->comm, &ctx->setup);
    if (rc == MPI_SUCCESS) rc = PMPI_Comm_rank(comm, &ctx->rank);
    if (rc == MPI_SUCCESS) rc = PMPI_Comm_size(comm, &ctx->size);
    if (rc == MPI_SUCCESS) rc = ctx_alloc(ctx);
    if (rc == MPI_SUCCESS) {
        ctx->placement = malloc(((size_t)ctx->size + 1) * PLACEMENT_BYTES);
        if (!ctx->placement) rc = MPI_ERR_NO_MEM;
    }
    if (rc == MPI_SUCCESS) rc = PMPI_Comm_set_attr(comm, ctx_keyval, ctx);
    if (rc != MPI_SUCCESS) {
        /* The duplicate under way must exist before it can be freed. */
        if (ctx->setup != MPI_REQUEST_NULL && PMPI_Wait(&ctx->setup, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            ctx->comm = MPI_COMM_NULL;
        ctx_destroy(ctx); /* the first error is the one to report */
        return rc;
    }
    *out = ctx;
    return MPI_SUCCESS;
}

void *ctx_setup_contribution(sparcml_ctx *ctx)
{
    void *mine = ctx->placement + (size_t)ctx->size * PLACEMENT_BYTES;
    placement_mine(mine);
    return mine;
}

void *ctx_setup_all(sparcml_ctx *ctx)
{
    return ctx->placement;
}

int ctx_setup_done(sparcml_ctx *ctx)
{
    ctx->ranks_per_core = placement_of(ctx->placement, ctx->size);
    ctx->one_node = placement_one_node(ctx->placement, ctx->size);
    free(ctx->placement);
    ctx->placement = NULL;
    ctx->ready = 1;
    /* The library checks every code on its duplicate and raises failures
     * on the application's communicator (core/op.c). */
    return PMPI_Comm_set_errhandler(ctx->comm, MPI_ERRORS_RETURN);
}

int ctx_find(MPI_Comm comm, sparcml_ctx **out)
{
    int found = 0, rc;
    void *attr = NULL;
    *out = NULL;
    pthread_once(&keyval_once, keyval_create);
    if (keyval_rc != MPI_SUCCESS) return keyval_rc;
    rc = PMPI_Comm_get_attr(comm, ctx_keyval, &attr, &found);
    if (rc == MPI_SUCCESS && found) *out = attr;
    return rc;
}

int ctx_get(MPI_Comm comm, const ctx_extension *ext, int blocking, sparcml_ctx **out)
{
    int rc = ctx_find(comm, out);
    if (rc != MPI_SUCCESS || *out) return rc;
    return ctx_create(comm, ext, blocking, out);
}



/* Open MPI treats deleting an attribute that was never set as an error
 * (fatal on MPI_COMM_SELF), MPICH does not: delete only what is there. */
static int ctx_drop(MPI_Comm comm)
{
    void *attr;
    int found = 0, rc = PMPI_Comm_get_attr(comm, ctx_keyval, &attr, &found);
    return rc == MPI_SUCCESS && found ? PMPI_Comm_delete_attr(comm, ctx_keyval) : rc;
}

int ctx_finalize(void)
{
    int rc, rc_self, rc_keyval;
    if (ctx_keyval == MPI_KEYVAL_INVALID) return MPI_SUCCESS;
    rc = ctx_drop(MPI_COMM_WORLD);
    rc_self = ctx_drop(MPI_COMM_SELF);
    rc_keyval = PMPI_Comm_free_keyval(&ctx_keyval);
    return rc != MPI_SUCCESS ? rc : rc_self != MPI_SUCCESS ? rc_self : rc_keyval;
}

/* A pool too small for `bytes` while the context is sealed: its scratch
 * bound is wrong, and a build with the sanitizers stops here. */
static void short_within_algorithm(const sparcml_ctx *ctx, int which, uint64_t bytes)
{
#ifdef SPARCML_CHECK_SCRATCH
    if (ctx->sealed) {
        fprintf(stderr, "sparcml: internal: pool %d grows to %llu bytes within an algorithm\n", which,
                (unsigned long long)bytes);
        abort();
    }
#else
    (void)ctx, (void)which, (void)bytes;
#endif
}

int ctx_holds(const sparcml_ctx *ctx, int which, uint64_t bytes)
{
    if (ctx->pool_bytes[which] >= bytes) return 1;
    short_within_algorithm(ctx, which, bytes);
    return 0;
}

void *ctx_buffer(sparcml_ctx *ctx, int which, uint64_t bytes)
{
    if (bytes < CTX_BUFFER_MIN_BYTES) bytes = CTX_BUFFER_MIN_BYTES;
    if (bytes > SIZE_MAX) return NULL;
    if (ctx->pool_bytes[which] < bytes) {
        short_within_algorithm(ctx, which, bytes);
        /* Exactly what is asked (rounded to a cache line; ctx_reserve asks
         * a quarter more than the algorithm needs): the pool only grows,
         * so a repeated call of the same size never allocates, and the
         * peak stays at the largest request (docs/design.md, Memory).
         * A pool that cannot grow keeps what it has: what the ranks agreed
         * their pools hold (core/op.c) stays true.  So while it grows the
         * old buffer and the new one are both held, for one allocation. */
        size_t want = ((size_t)bytes + 63) & ~(size_t)63;
        void *grown = aligned_alloc(64, want);
        if (!grown) return NULL;
        free(ctx->pool[which]);
        ctx->pool[which] = grown;
        ctx->pool_bytes[which] = want;
        ctx->pool_growths++;
    }
    return ctx->pool[which];
}

void ctx_capacities(const sparcml_ctx *ctx, uint64_t *capacity)
{
    for (int i = 0; i < ctx->pools; i++) capacity[i] = ctx->pool_bytes[i];
}

int ctx_reserve(sparcml_ctx *ctx, const uint64_t *need)
{
    for (int i = 0; i < ctx->pools; i++)
        if (need[i] > ctx->pool_bytes[i] && !ctx_buffer(ctx, i, need[i] + need[i] / 4)) return 0;
    return 1;
}
