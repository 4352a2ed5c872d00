/* feedback.c -- the error-feedback memory (feedback.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "sparcml.h"
#include "core/feedback.h"

/* Calls a buffer may stay idle before it is forgotten, with `live` buffers:
 * a training loop uses each of its buffers once per step of at most
 * `live` calls. */
static uint64_t idle_limit(int live)
{
    return 2 * (uint64_t)live + 16;
}

static void forget_idle(feedback_table *t)
{
    feedback_entry **p = &t->head;
    while (*p) {
        feedback_entry *e = *p;
        if (t->clock - e->last_use <= idle_limit(t->live)) {
            p = &e->next;
            continue;
        }
        *p = e->next;
        t->bytes -= e->bytes * (e->held ? 2 : 1);
        t->live--;
        free(e->eps);
        free(e->held);
        free(e);
    }
}

static feedback_outcome create(feedback_table *t, const void *buf, MPI_Count count, MPI_Datatype type, int vtype,
                               uint64_t bytes, uint64_t cap, feedback_entry **out)
{
    feedback_entry *e;
    *out = NULL;
    if (bytes > cap || t->bytes > cap - bytes) {
        t->capped++;
        return FEEDBACK_CAPPED;
    }
    e = malloc(sizeof *e);
    if (!e || bytes > SIZE_MAX) {
        free(e);
        return FEEDBACK_NOMEM;
    }
    *e = (feedback_entry){.next = t->head, .buf = buf, .count = count, .type = type, .vtype = vtype, .bytes = bytes,
                          .last_use = t->clock, .eps = bytes ? calloc(1, (size_t)bytes) : NULL, .zero = 1};
    if (bytes && !e->eps) {
        free(e);
        return FEEDBACK_NOMEM;
    }
    t->head = e;
    t->bytes += bytes;
    t->live++;
    *out = e;
    return FEEDBACK_CREATED;
}

feedback_entry *feedback_find(const feedback_table *t, const void *buf, MPI_Count count, MPI_Datatype type)
{
    feedback_entry *e = t->head;
    while (e && (e->buf != buf || e->count != count || e->type != type)) e = e->next;
    return e;
}

/* The buffer's second use: its first residual is put aside (the caller
 * adds it back once the rhythm is confirmed) and a zero one starts. */
static feedback_outcome hold(feedback_table *t, feedback_entry *e, uint64_t cap, feedback_entry **out)
{
    void *fresh;
    if (e->bytes > cap || t->bytes > cap - e->bytes) {
        t->capped++;
        return FEEDBACK_CAPPED;
    }
    fresh = calloc(1, (size_t)e->bytes);
    if (!fresh) return FEEDBACK_NOMEM;
    e->held = e->eps;
    e->eps = fresh;
    e->zero = 1;
    t->bytes += e->bytes;
    *out = e;
    return FEEDBACK_FOUND;
}

static void drop(feedback_table *t, feedback_entry *e)
{
    memset(e->eps, 0, (size_t)e->bytes);
    e->zero = 1;
    if (!e->held) return;
    free(e->held);
    e->held = NULL;
    t->bytes -= e->bytes;
}

feedback_outcome feedback_lookup(feedback_table *t, const void *buf, MPI_Count count, MPI_Datatype type, int vtype,
                                 int keep, uint64_t cap, feedback_entry **out)
{
    uint64_t gap, bytes = keep ? (uint64_t)count * sparcml_value_size(vtype) : 0;
    feedback_entry *e;
    *out = NULL;
    t->clock++;
    forget_idle(t);
    e = feedback_find(t, buf, count, type);
    if (!e) return create(t, buf, count, type, vtype, bytes, cap, out);
    gap = t->clock - e->last_use;
    if (e->interval == 0 && e->eps) {
        feedback_outcome held = hold(t, e, cap, out);
        if (held != FEEDBACK_FOUND) return held; /* this call only: the entry is as it was */
    }
    *out = e;
    e->last_use = t->clock;
    if (e->interval == 0 || e->interval == gap) {
        e->confirmed = e->interval != 0;
        e->interval = gap;
        return FEEDBACK_FOUND;
    }
    e->interval = gap;
    if (!e->eps) return FEEDBACK_FOUND; /* nothing held to drop */
    drop(t, e);
    return FEEDBACK_RESET;
}

void feedback_release_held(feedback_table *t, feedback_entry *e)
{
    free(e->held);
    e->held = NULL;
    t->bytes -= e->bytes;
}

void feedback_table_free(feedback_table *t)
{
    while (t->head) {
        feedback_entry *e = t->head;
        t->head = e->next;
        free(e->eps);
        free(e->held);
        free(e);
    }
    *t = (feedback_table){0};
}
