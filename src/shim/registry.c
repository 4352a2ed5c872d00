/* registry.c -- the table of tagged datatypes (registry.h). */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "shim/registry.h"
#include "sparcml.h"

/* A handle is stored as its bit pattern (MPI_Datatype is an int in MPICH and
 * a pointer in Open MPI); 0 marks a free slot and ~0 a deleted one, which
 * no valid handle is. */
_Static_assert(sizeof(MPI_Datatype) <= sizeof(uint64_t), "datatype handle fits 64 bits");
#define KEY_FREE 0
#define KEY_DELETED UINT64_MAX

typedef struct slot {
    atomic_uint_fast64_t key;
    atomic_int vtype;
} slot;

/* Open addressing, linear probing; capacity a power of two, at most half
 * full of keys (live or deleted), so a probe always meets a free slot. */
typedef struct table {
    size_t mask;
    size_t used; /* live and deleted keys (writers only) */
    struct table *retired; /* the tables it replaced, kept for readers */
    slot slots[];
} table;

enum { FIRST_CAPACITY = 64 };

atomic_uint registry_live;
static _Atomic(table *) current;
static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t key_of(MPI_Datatype type)
{
    uint64_t k = 0;
    memcpy(&k, &type, sizeof type);
    return k;
}

static size_t hash(uint64_t k, size_t mask)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & mask;
}

int registry_parse_name(const char *name)
{
    static const char *const vtypes[] = {"", "float", "double", "int32", "int64"};
    size_t plen = strlen(SPARCML_NAME_PREFIX);
    if (strncmp(name, "sparcml:", 8) != 0) return 0;
    if (strncmp(name, SPARCML_NAME_PREFIX, plen) != 0) return -1;
    for (int v = SPARCML_FLOAT; v <= SPARCML_INT64; v++)
        if (strcmp(name + plen, vtypes[v]) == 0) return v;
    return -1;
}

/* The slot holding k, or NULL. */
static slot *lookup(table *t, uint64_t k)
{
    for (size_t i = hash(k, t->mask);; i = (i + 1) & t->mask) {
        uint64_t s = atomic_load_explicit(&t->slots[i].key, memory_order_acquire);
        if (s == k) return &t->slots[i];
        if (s == KEY_FREE) return NULL;
    }
}

int registry_find(MPI_Datatype type)
{
    table *t = atomic_load_explicit(&current, memory_order_acquire);
    slot *s = t ? lookup(t, key_of(type)) : NULL;
    return s ? atomic_load_explicit(&s->vtype, memory_order_relaxed) : 0;
}

static void put_locked(table *t, uint64_t k, int vtype)
{
    size_t i = hash(k, t->mask);
    while (atomic_load_explicit(&t->slots[i].key, memory_order_relaxed) != KEY_FREE) i = (i + 1) & t->mask;
    atomic_store_explicit(&t->slots[i].vtype, vtype, memory_order_relaxed);
    atomic_store_explicit(&t->slots[i].key, k, memory_order_release);
    t->used++;
}

/* Room for one more key: a fresh table (live keys only) when half full.
 * Returns -1 when out of memory (nothing changed). */
static int reserve_locked(void)
{
    table *old = atomic_load_explicit(&current, memory_order_relaxed), *t;
    size_t cap = FIRST_CAPACITY, live = atomic_load_explicit(&registry_live, memory_order_relaxed);
    if (old && 2 * (old->used + 1) <= old->mask + 1) return 0;
    while (cap < 4 * (live + 1)) cap *= 2;
    t = calloc(1, sizeof *t + cap * sizeof(slot));
    if (!t) return -1;
    t->mask = cap - 1;
    t->retired = old;
    for (size_t i = 0; old && i <= old->mask; i++) {
        uint64_t k = atomic_load_explicit(&old->slots[i].key, memory_order_relaxed);
        if (k != KEY_FREE && k != KEY_DELETED)
            put_locked(t, k, atomic_load_explicit(&old->slots[i].vtype, memory_order_relaxed));
    }
    atomic_store_explicit(&current, t, memory_order_release);
    return 0;
}

/* Unregister k unless it is one of the predefined types (registry.h). */
static void remove_locked(uint64_t k)
{
    table *t = atomic_load_explicit(&current, memory_order_relaxed);
    slot *s = t ? lookup(t, k) : NULL;
    if (!s || (atomic_load_explicit(&s->vtype, memory_order_relaxed) & REGISTRY_PREDEFINED)) return;
    atomic_store_explicit(&s->key, KEY_DELETED, memory_order_release);
    atomic_fetch_sub_explicit(&registry_live, 1, memory_order_release);
}

static void insert_locked(uint64_t k, int vtype)
{
    table *t = atomic_load_explicit(&current, memory_order_relaxed);
    slot *s = lookup(t, k);
    if (s) { /* already there: only transparent mode's own types */
        atomic_store_explicit(&s->vtype, vtype, memory_order_release);
        return;
    }
    put_locked(t, k, vtype);
    atomic_fetch_add_explicit(&registry_live, 1, memory_order_release);
}

/* A stream type must be 8 bytes of data spanning exactly 8 bytes. */
static int type_is_word(MPI_Datatype type)
{
    MPI_Count size, lb, extent;
    if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS) return 0;
    if (PMPI_Type_get_extent_x(type, &lb, &extent) != MPI_SUCCESS) return 0;
    return size == 8 && lb == 0 && extent == 8;
}

static int tag_error(const char *name, const char *why, int cls)
{
    sparcml_outcome st = {.code = cls, .rank = -1, .printed = 1};
    fprintf(stderr, "sparcml: MPI_Type_set_name: cannot tag a datatype as '%s': %s\n", name, why);
    fflush(stderr);
    return sparcml_raise(MPI_COMM_SELF, "MPI_Type_set_name", &st);
}

int registry_set_name(MPI_Datatype type, const char *name)
{
    int vtype = registry_parse_name(name), rc;
    if (vtype < 0)
        return tag_error(name, "malformed tag (expected sparcml:v1:float, double, int32 or int64)",
                         MPI_ERR_TYPE);
    if (vtype > 0 && !type_is_word(type))
        return tag_error(name, "the datatype must have size 8 and extent 8 (e.g. 8 x MPI_BYTE)", MPI_ERR_TYPE);
    pthread_mutex_lock(&writer_lock);
    if (vtype > 0 && reserve_locked() != 0) {
        pthread_mutex_unlock(&writer_lock);
        return tag_error(name, "out of memory for the table of tagged datatypes", MPI_ERR_NO_MEM);
    }
    rc = PMPI_Type_set_name(type, name); /* the vendor's verdict, before the tag changes */
    if (rc == MPI_SUCCESS) {
        remove_locked(key_of(type)); /* a rename replaces any earlier tag */
        if (vtype > 0) insert_locked(key_of(type), vtype);
    }
    pthread_mutex_unlock(&writer_lock);
    return rc;
}

int registry_add_predefined(MPI_Datatype type, int vtype)
{
    int rc;
    pthread_mutex_lock(&writer_lock);
    rc = reserve_locked();
    if (rc == 0) insert_locked(key_of(type), vtype | REGISTRY_PREDEFINED);
    pthread_mutex_unlock(&writer_lock);
    return rc;
}

void registry_on_free(MPI_Datatype type)
{
    if (atomic_load_explicit(&registry_live, memory_order_acquire) == 0) return;
    pthread_mutex_lock(&writer_lock);
    remove_locked(key_of(type));
    pthread_mutex_unlock(&writer_lock);
}
