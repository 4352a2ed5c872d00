/* registry.c -- the table of tagged datatypes. */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "registry.h"
#include "sparcml.h"

/* A handle is stored as its bit pattern (MPI_Datatype is an int in MPICH and
 * a pointer in Open MPI); 0 marks a free slot, which no valid handle is. */
_Static_assert(sizeof(MPI_Datatype) <= sizeof(uint64_t), "datatype handle fits 64 bits");

#define REGISTRY_SLOTS 256

static struct slot {
    atomic_uint_fast64_t key;
    atomic_int vtype;
} slots[REGISTRY_SLOTS];

atomic_uint registry_used_slots; /* slots [0, used) may be occupied */
static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t key_of(MPI_Datatype type)
{
    uint64_t k = 0;
    memcpy(&k, &type, sizeof type);
    return k;
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

int registry_find(MPI_Datatype type, unsigned used)
{
    uint64_t k = key_of(type);
    for (unsigned i = 0; i < used; i++)
        if (atomic_load_explicit(&slots[i].key, memory_order_acquire) == k)
            return atomic_load_explicit(&slots[i].vtype, memory_order_relaxed);
    return 0;
}

static void registry_remove_locked(uint64_t k)
{
    unsigned used = atomic_load_explicit(&registry_used_slots, memory_order_relaxed);
    for (unsigned i = 0; i < used; i++)
        if (atomic_load_explicit(&slots[i].key, memory_order_relaxed) == k)
            atomic_store_explicit(&slots[i].key, 0, memory_order_release);
    while (used > 0 && atomic_load_explicit(&slots[used - 1].key, memory_order_relaxed) == 0) used--;
    atomic_store_explicit(&registry_used_slots, used, memory_order_release);
}

static int registry_insert_locked(uint64_t k, int vtype)
{
    unsigned used = atomic_load_explicit(&registry_used_slots, memory_order_relaxed);
    for (unsigned i = 0; i < REGISTRY_SLOTS; i++) {
        if (atomic_load_explicit(&slots[i].key, memory_order_relaxed) != 0) continue;
        atomic_store_explicit(&slots[i].vtype, vtype, memory_order_relaxed);
        atomic_store_explicit(&slots[i].key, k, memory_order_release);
        if (i + 1 > used) atomic_store_explicit(&registry_used_slots, i + 1, memory_order_release);
        return 0;
    }
    return -1;
}

/* A stream type must be 8 bytes of data spanning exactly 8 bytes. */
static int type_is_word(MPI_Datatype type)
{
    MPI_Count size, lb, extent;
    if (PMPI_Type_size_x(type, &size) != MPI_SUCCESS) return 0;
    if (PMPI_Type_get_extent_x(type, &lb, &extent) != MPI_SUCCESS) return 0;
    return size == 8 && lb == 0 && extent == 8;
}

static int tag_error(const char *name, const char *why)
{
    fprintf(stderr, "sparcml: MPI_Type_set_name: cannot tag a datatype as '%s': %s\n", name, why);
    fflush(stderr);
    PMPI_Comm_call_errhandler(MPI_COMM_SELF, MPI_ERR_TYPE);
    return MPI_ERR_TYPE;
}

int registry_on_set_name(MPI_Datatype type, const char *name)
{
    int vtype = registry_parse_name(name);
    uint64_t k = key_of(type);
    int rc = 0;
    if (vtype < 0)
        return tag_error(name, "malformed tag (expected sparcml:v1:float, double, int32 or int64)");
    if (vtype > 0 && !type_is_word(type))
        return tag_error(name, "the datatype must have size 8 and extent 8 (e.g. 8 x MPI_BYTE)");
    pthread_mutex_lock(&writer_lock);
    registry_remove_locked(k); /* a rename replaces any earlier tag */
    if (vtype > 0) rc = registry_insert_locked(k, vtype);
    pthread_mutex_unlock(&writer_lock);
    if (rc != 0) return tag_error(name, "too many tagged datatypes (limit 256)");
    return MPI_SUCCESS;
}

void registry_on_free(MPI_Datatype type)
{
    if (atomic_load_explicit(&registry_used_slots, memory_order_acquire) == 0) return;
    pthread_mutex_lock(&writer_lock);
    registry_remove_locked(key_of(type));
    pthread_mutex_unlock(&writer_lock);
}

int registry_add_transparent(MPI_Datatype type, int vtype)
{
    int rc;
    pthread_mutex_lock(&writer_lock);
    registry_remove_locked(key_of(type));
    rc = registry_insert_locked(key_of(type), vtype | REGISTRY_TRANSPARENT);
    pthread_mutex_unlock(&writer_lock);
    return rc;
}
