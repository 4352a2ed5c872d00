/* feedback.c -- the error-feedback memory (feedback.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

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
        t->bytes -= e->bytes;
        t->live--;
        free(e->eps);
        free(e);
    }
}

static feedback_outcome create(feedback_table *t, const void *buf, MPI_Count count, MPI_Datatype type,
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
    *e = (feedback_entry){.next = t->head, .buf = buf, .count = count, .type = type, .bytes = bytes,
                          .last_use = t->clock, .eps = bytes ? calloc(1, (size_t)bytes) : NULL};
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

feedback_outcome feedback_lookup(feedback_table *t, const void *buf, MPI_Count count, MPI_Datatype type,
                                 uint64_t bytes, uint64_t cap, feedback_entry **out)
{
    uint64_t interval;
    feedback_entry *e;
    t->clock++;
    forget_idle(t);
    e = feedback_find(t, buf, count, type);
    if (!e) return create(t, buf, count, type, bytes, cap, out);
    *out = e;
    interval = t->clock - e->last_use;
    e->last_use = t->clock;
    if (e->interval == 0 || e->interval == interval) {
        e->interval = interval;
        return FEEDBACK_FOUND;
    }
    e->interval = interval;
    if (!e->eps) return FEEDBACK_FOUND; /* nothing held to drop */
    memset(e->eps, 0, (size_t)e->bytes);
    return FEEDBACK_RESET;
}

void feedback_table_free(feedback_table *t)
{
    while (t->head) {
        feedback_entry *e = t->head;
        t->head = e->next;
        free(e->eps);
        free(e);
    }
    *t = (feedback_table){0};
}
