/* feedback.h -- the error-feedback memory of compressed calls
 * (core/compress.c): per communicator, what each rank held back of each
 * gradient buffer.
 *
 * A buffer is known by its receive buffer's address, count and datatype:
 * what an MPI library sees of a tensor.  A program that reduces each
 * tensor into a buffer it keeps (in place or not) gets that tensor's
 * residual back on its next call.  Two guards keep a residual from
 * reaching the wrong tensor when addresses are reused:
 *  - a buffer comes back at a steady rhythm in a training loop (the same
 *    number of compressed calls on the communicator between its uses);
 *    when the rhythm changes, the residual is dropped (a reset, counted
 *    by SPARCML_STATS and told by SPARCML_VERBOSE), so two tensors that
 *    take turns at one address never inherit each other's residual;
 *  - a buffer idle for more than 2 L + 16 compressed calls (L buffers
 *    live) is forgotten and its memory freed: fresh temporaries do not
 *    pile up.
 * The memory is count * value size per buffer; a buffer that would take
 * the total above the cap (SPARCML_COMPRESS_MAX_BYTES) gets none. */
#ifndef SPARCML_FEEDBACK_H
#define SPARCML_FEEDBACK_H

#include <mpi.h>
#include <stdint.h>

typedef struct feedback_entry {
    struct feedback_entry *next;
    const void *buf;      /* the receive buffer */
    MPI_Count count;
    MPI_Datatype type;
    void *eps;            /* count values: what this rank held back (NULL: no feedback kept) */
    uint64_t bytes;
    uint64_t sequence;    /* calls on this buffer, as agreed by every rank */
    uint64_t last_use;    /* the table's clock at its previous call */
    uint64_t interval;    /* compressed calls between its last two uses (0: unknown) */
} feedback_entry;

typedef struct feedback_table {
    feedback_entry *head;
    uint64_t bytes;       /* the residuals' total */
    uint64_t clock;       /* compressed calls on the communicator */
    uint64_t capped;      /* calls that found no room under the cap */
    int live;
} feedback_table;

typedef enum {
    FEEDBACK_FOUND,   /* its residual, as the previous call left it */
    FEEDBACK_CREATED, /* a new buffer: zero residual */
    FEEDBACK_RESET,   /* known, but its rhythm changed: residual dropped */
    FEEDBACK_CAPPED,  /* no room under the cap: *out is NULL */
    FEEDBACK_NOMEM    /* the allocation failed: *out is NULL */
} feedback_outcome;

/* Advance the clock by one call and find (or make) the entry of the
 * buffer, whose residual takes `bytes` (0: the entry only counts calls). */
feedback_outcome feedback_lookup(feedback_table *t, const void *buf, MPI_Count count, MPI_Datatype type,
                                 uint64_t bytes, uint64_t cap, feedback_entry **out);

/* The entry of the buffer, if any (the clock stands still). */
feedback_entry *feedback_find(const feedback_table *t, const void *buf, MPI_Count count, MPI_Datatype type);

/* Free every residual (the communicator goes). */
void feedback_table_free(feedback_table *t);

#endif
