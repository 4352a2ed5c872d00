/* registry.h -- which datatypes are tagged sparse-stream types.
 *
 * MPI_Type_set_name is intercepted; a name in the grammar
 *     "sparcml:v1:" ( "float" | "double" | "int32" | "int64" )
 * on a datatype of size 8 and extent 8 registers it.  Renaming or freeing
 * the type unregisters it.  The lookup on every MPI_Allreduce is lock-free:
 * one atomic load and a branch while nothing is tagged, a short scan of a
 * small table otherwise -- no lock, no allocation, no string work. */
#ifndef SPARCML_REGISTRY_H
#define SPARCML_REGISTRY_H

#include <mpi.h>
#include <stdatomic.h>

/* Parse a datatype name: the value type (enum sparcml_value_type) when it
 * is a valid tag, 0 when the name is not ours at all, -1 when it starts
 * with "sparcml:" but is malformed (worth an error: the user meant to tag). */
int registry_parse_name(const char *name);

/* Called after a successful PMPI_Type_set_name: (un)registers the type.
 * Returns MPI_SUCCESS, or an MPI error class after printing why. */
int registry_on_set_name(MPI_Datatype type, const char *name);

/* Transparent mode (SPARCML_TRANSPARENT): the predefined types whose sums
 * the library may take over are registered with this bit on their value
 * type, so that the untagged fast path stays one load and a branch when
 * the mode is off. */
#define REGISTRY_TRANSPARENT 0x100
int registry_add_transparent(MPI_Datatype type, int vtype);

/* Called before PMPI_Type_free. */
void registry_on_free(MPI_Datatype type);

extern atomic_uint registry_used_slots;
int registry_find(MPI_Datatype type, unsigned used);

/* Value type of a tagged datatype, 0 for any other. */
static inline int registry_value_type(MPI_Datatype type)
{
    unsigned used = atomic_load_explicit(&registry_used_slots, memory_order_acquire);
    return used == 0 ? 0 : registry_find(type, used);
}

#endif
