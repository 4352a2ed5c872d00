/* timed.c -- timed multiples of the model's prices (timed.h).
 *
 * A run is timed from the start of its exchange (the agreement's, where
 * the data rode on it) to its conclusion.  A sparse algorithm's multiple
 * is kept per density band: how far its price is off depends on how much
 * of the vector its messages and merges carry (a split exchange of dense
 * slices through memory, not of a few entries), and a program's density
 * may move (a sparsification schedule) while its counts stay.  The dense
 * algorithm and the vendor's route move every value whatever the density:
 * one multiple each.  A rank
 * looks its band up by its own input's entries and stores by the agreed
 * largest; the agreement's minimum over ranks makes the verdict alike
 * wherever the ranks' bands differ.  The rationing of trials (timed.h)
 * counts a key's calls whatever their band: its share is of the calls the
 * program makes. */
#include "config.h"

#include "core/timed.h"

_Static_assert(COST_ROUTES <= 32, "the known routes fit an unsigned's bits");

int timed_band(uint64_t dim, uint64_t k)
{
    int band = 0;
    if (k == 0) return TIMED_BANDS - 1;
    while (band < TIMED_BANDS - 1 && k <= dim / 4) {
        dim /= 4;
        band++;
    }
    return band;
}

/* The multiple of `route` in `band`: the dense algorithm's and the
 * vendor's in every band. */
static uint64_t *slot_ppm(struct timed_slot *t, int band, cost_route route)
{
    if (route == COST_VENDOR) return &t->vendor_ppm;
    return sparcml_algorithms[route]->sparse ? &t->ppm[band][route] : &t->dense_ppm;
}

static int same_key(const struct timed_slot *t, timed_key key)
{
    return t->key.kind == key.kind && t->key.count == key.count && t->key.vtype == key.vtype;
}

/* The key's slot; where it has none, NULL, or with `add` the oldest slot
 * made the key's. */
static struct timed_slot *slot_of(timed_table *table, timed_key key, int add)
{
    struct timed_slot *t;
    for (int i = 0; i < TIMED_SLOTS; i++)
        if (same_key(&table->slot[i], key)) return &table->slot[i];
    if (!add) return NULL;
    t = &table->slot[table->next];
    table->next = (table->next + 1) % TIMED_SLOTS;
    *t = (struct timed_slot){.key = key, .ran = SPARCML_ALG_AUTO, .trying = SPARCML_ALG_AUTO};
    return t;
}

static void lower(uint64_t *ppm, uint64_t to)
{
    if (to && (!*ppm || to < *ppm)) *ppm = to;
}

void timed_lookup(timed_table *table, timed_key key, uint64_t dim, uint64_t nnz, uint64_t ppm[COST_ROUTES])
{
    struct timed_slot *t = slot_of(table, key, 0);
    int band = timed_band(dim, nnz);
    for (int a = 0; a < COST_ROUTES; a++) ppm[a] = t && a != SPARCML_ALG_AUTO ? *slot_ppm(t, band, a) : 0;
}

int timed_may_start(uint64_t calls, uint64_t trials)
{
    return trials == 0 || TIMED_TRIAL_SHARE * (trials + TIMED_TRIAL_CALLS - 1) <= calls;
}

timed_trial timed_lower(timed_table *table, timed_key key, uint64_t dim, uint64_t k_max,
                        const uint64_t agreed[COST_ROUTES])
{
    struct timed_slot *t = slot_of(table, key, 1);
    int band = timed_band(dim, k_max);
    t->known = 0;
    for (int a = SPARCML_ALG_AUTO + 1; a < COST_ROUTES; a++) {
        lower(slot_ppm(t, band, a), agreed[a]);
        if (agreed[a]) t->known |= 1u << a;
    }
    t->agreed = 1;
    /* A trial ends after its calls, not at its route's first multiple:
     * that is one run's (where pools grew in all but its first run, the
     * route stays untimed and may be tried again later). */
    if (t->tried >= TIMED_TRIAL_CALLS) t->trying = SPARCML_ALG_AUTO;
    return (timed_trial){.may_start = timed_may_start(t->calls + 1, t->trials), .trying = t->trying};
}

/* A call ran `route`: a trial call where it runs the trial under way's
 * route (with or without an agreement: transparent mode's calls after a
 * vendor choice have none), or where its agreement carried some multiple
 * but none of the route's (the start of a trial); any other run ends a
 * trial. */
static void count_call(struct timed_slot *t, cost_route route)
{
    int trial = t->trying == route || (t->agreed && t->known && !(t->known >> route & 1));
    t->calls++;
    t->agreed = 0;
    if (!trial) {
        t->trying = SPARCML_ALG_AUTO;
        return;
    }
    t->trials++;
    t->tried = t->trying == route ? t->tried + 1 : 1;
    t->trying = route;
}

void timed_note_run(timed_table *table, const timed_run *run)
{
    struct timed_slot *t = slot_of(table, run->key, 1);
    count_call(t, run->route);
    if (t->ran == run->route && t->growths == run->growths_before && run->growths_after == run->growths_before &&
        run->price > 0) {
        double ppm = 1e6 * run->seconds / run->price;
        lower(slot_ppm(t, timed_band(run->dim, run->k_max), run->route),
              ppm >= 0x1p62 ? (uint64_t)1 << 62 : ppm < 1 ? 1 : (uint64_t)ppm);
    }
    t->ran = run->route;
    t->growths = run->growths_after;
}
