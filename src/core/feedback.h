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
 *    when the gap differs from the one before, the residual is dropped (a
 *    reset, counted by SPARCML_STATS and told by SPARCML_VERBOSE), so
 *    tensors that take turns at one address between other calls carry
 *    nothing into each other's calls (two equal tensors alternating alone
 *    at one address look like one tensor called twice a step: sparcml(7)
 *    says so).  The first gap is known only at the buffer's second use:
 *    the first call's residual waits aside (`held`) until the third use
 *    confirms the gap, then joins the residual, or is dropped;
 *  - a buffer idle for more than 2 L + 16 compressed calls (L buffers
 *    live) is forgotten and its memory freed: fresh temporaries do not
 *    pile up.
 * The memory is count * value size per buffer (twice that between its
 * second and third use); a buffer that would take the total above the cap
 * (SPARCML_COMPRESS_MAX_BYTES) gets none. */
#ifndef SPARCML_FEEDBACK_H
#define SPARCML_FEEDBACK_H

#include <mpi.h>
#include <stdint.h>

typedef struct feedback_entry {
    struct feedback_entry *next;
    const void *buf;      /* the receive buffer */
    MPI_Count count;
    MPI_Datatype type;
    int vtype;            /* its values' (sparcml.h) */
    void *eps;            /* count values: what this rank held back (NULL: no feedback kept) */
    void *held;           /* the first call's residual while the rhythm is unknown (or NULL) */
    int confirmed;        /* the gap is confirmed: held joins at this call */
    int zero;             /* eps is all zeros (as made, dropped or summed whole) */
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
 * buffer, of count values of vtype; with `keep` 0 the entry only counts
 * calls (no residual). */
feedback_outcome feedback_lookup(feedback_table *t, const void *buf, MPI_Count count, MPI_Datatype type, int vtype,
                                 int keep, uint64_t cap, feedback_entry **out);

/* The entry of the buffer, if any (the clock stands still). */
feedback_entry *feedback_find(const feedback_table *t, const void *buf, MPI_Count count, MPI_Datatype type);

/* The caller has added e->held into e->eps: free it. */
void feedback_release_held(feedback_table *t, feedback_entry *e);

/* Free every residual (the communicator goes). */
void feedback_table_free(feedback_table *t);

#endif
