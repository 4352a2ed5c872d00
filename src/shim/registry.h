/* registry.h -- which datatypes are tagged sparse-stream types.
 *
 * MPI_Type_set_name is intercepted; a name in the grammar
 *     "sparcml:v1:" ( "float" | "double" | "int32" | "int64" )
 * on a datatype of size 8 and extent 8 registers it.  The name is checked
 * before it is set, so a datatype's name and its tag never disagree: a
 * rejected name leaves both as they were.  Renaming to another name or
 * freeing the type unregisters it.  There is no limit on the number of
 * tagged types (the table grows).
 *
 * The lookup on every MPI_Allreduce is lock-free: one atomic load and a
 * branch while nothing is registered, else a probe of an open-addressing
 * hash table -- no lock, no allocation, no string work.  Writers take a
 * mutex; a table that grows is copied and the old one is kept (never freed
 * while the process runs), so a concurrent reader never touches freed
 * memory. */
#ifndef SPARCML_REGISTRY_H
#define SPARCML_REGISTRY_H

#include <mpi.h>
#include <stdatomic.h>

/* Parse a datatype name: the value type (enum sparcml_value_type) when it
 * is a valid tag, 0 when the name is not ours at all, -1 when it starts
 * with "sparcml:" but is malformed (worth an error: the user meant to tag). */
int registry_parse_name(const char *name);

/* MPI_Type_set_name: validate the name, set it (PMPI_Type_set_name) and
 * (un)register the type.  Returns MPI_SUCCESS or an MPI error class after
 * printing why; on an error the name and the tag are unchanged. */
int registry_set_name(MPI_Datatype type, const char *name);

/* Transparent mode and compression (SPARCML_TRANSPARENT, SPARCML_COMPRESS):
 * the predefined types whose sums the library may take over are registered
 * with this bit on their value type, so that the untagged fast path stays
 * one load and a branch when both are off.  Renaming or freeing them does
 * not unregister them. */
#define REGISTRY_PREDEFINED 0x100
int registry_add_predefined(MPI_Datatype type, int vtype);

/* Called before PMPI_Type_free. */
void registry_on_free(MPI_Datatype type);

/* Registered types, predefined ones included: 0 while nothing is tagged
 * and transparent mode and compression are off.  Hidden, as is the
 * lookup: the library reaches both without the GOT or the PLT. */
extern atomic_uint registry_live __attribute__((visibility("hidden")));

/* Value type of a registered datatype (with REGISTRY_PREDEFINED for the
 * predefined types of transparent mode and compression), 0 for any other. */
int registry_find(MPI_Datatype type) __attribute__((visibility("hidden")));

/* Whether no datatype is registered: then every call is the vendor's. */
static inline int registry_empty(void)
{
    return __builtin_expect(atomic_load_explicit(&registry_live, memory_order_acquire) == 0, 1);
}

#endif
