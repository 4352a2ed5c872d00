/* memo.c -- the prediction of the next call's ride (memo.h). */
#include "config.h"

#include "core/memo.h"

static int memo_find(const sparcml_memo *m, uint64_t count, int vtype)
{
    for (int i = 0; i < m->used; i++)
        if (m->count[i] == count && m->vtype[i] == vtype) return i;
    return -1;
}

int memo_hit(const sparcml_memo *m, uint64_t count, int vtype, uint64_t *dim, uint64_t *k_max)
{
    int i = memo_find(m, count, vtype);
    if (i < 0) return 0;
    if (dim) *dim = m->dim[i];
    if (k_max) *k_max = m->k_max[i];
    return 1;
}

sparcml_algorithm memo_keeps(cost_route route, int chunks, int data_rides)
{
    if (route == COST_VENDOR) return SPARCML_ALG_AUTO;
    if (sparcml_algorithms[route]->ride == ALG_RIDES_EXCHANGE && chunks <= 1) return route;
    return data_rides ? route : SPARCML_ALG_AUTO;
}

/* Drop slot i: the last slot moves into the hole. */
static void memo_drop(sparcml_memo *m, int i)
{
    m->used--;
    m->count[i] = m->count[m->used];
    m->vtype[i] = m->vtype[m->used];
    m->dim[i] = m->dim[m->used];
    m->k_max[i] = m->k_max[m->used];
    if (m->next > m->used) m->next = m->used;
}

void memo_note(sparcml_memo *m, uint64_t count, const sparcml_problem *p, cost_route route, int chunks,
               int data_rides)
{
    sparcml_algorithm kept = memo_keeps(route, chunks, data_rides);
    alg_ride ride = sparcml_algorithms[kept]->ride;
    int pipelined = ride == ALG_RIDES_EXCHANGE && chunks > 1;
    int i = memo_find(m, count, p->vtype);
    m->latest = (memo_latest){.alg = pipelined || ride == ALG_RIDES_PHASE ? kept : SPARCML_ALG_AUTO,
                              .chunks = pipelined ? chunks : 1,
                              .count = count, .dim = p->dim, .k_max = p->k_max, .vtype = p->vtype};
    if (ride != ALG_RIDES_EXCHANGE || pipelined) {
        if (i >= 0) memo_drop(m, i);
        return;
    }
    if (i < 0 && m->used < MEMO_SLOTS) i = m->used++;
    else if (i < 0) { i = m->next; m->next = (m->next + 1) % MEMO_SLOTS; }
    m->count[i] = count;
    m->vtype[i] = p->vtype;
    m->dim[i] = p->dim;
    m->k_max[i] = p->k_max;
}

void memo_forget(sparcml_memo *m)
{
    *m = (sparcml_memo){.latest = {.alg = SPARCML_ALG_AUTO, .chunks = 1}};
}
