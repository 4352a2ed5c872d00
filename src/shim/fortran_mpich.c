/* fortran_mpich.c -- Fortran `use mpi_f08` programs under MPICH.
 *
 * MPICH's mpif.h and `use mpi` bindings call the C MPI_* functions, and so
 * does its mpi_f08 MPI_Allreduce; but its mpi_f08 MPI_Init,
 * MPI_Init_thread, MPI_Finalize, MPI_Type_set_name and MPI_Type_free call
 * PMPI_* directly, so a datatype tagged from mpi_f08 would never be
 * registered.  This file, built for MPICH only, takes those module
 * procedures' names and forwards them to the C functions the shim
 * interposes.  Their Fortran calling convention: every argument by
 * reference (a type(MPI_Datatype) is its integer MPI_VAL), the optional
 * ierror NULL when absent, a string's length appended as a size_t. */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include <mpi.h>

static void set_ierror(MPI_Fint *ierror, int rc)
{
    if (ierror) *ierror = (MPI_Fint)rc;
}

void mpi_init_f08_(MPI_Fint *ierror);
void mpi_init_f08_(MPI_Fint *ierror) { set_ierror(ierror, MPI_Init(NULL, NULL)); }

void mpi_init_thread_f08_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierror);
void mpi_init_thread_f08_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierror)
{
    int got = 0, rc = MPI_Init_thread(NULL, NULL, (int)*required, &got);
    *provided = (MPI_Fint)got;
    set_ierror(ierror, rc);
}

void mpi_finalize_f08_(MPI_Fint *ierror);
void mpi_finalize_f08_(MPI_Fint *ierror) { set_ierror(ierror, MPI_Finalize()); }

/* A Fortran string: `len` characters, blank-padded, not terminated. */
void mpi_type_set_name_f08_(MPI_Fint *datatype, const char *name, MPI_Fint *ierror, size_t len);
void mpi_type_set_name_f08_(MPI_Fint *datatype, const char *name, MPI_Fint *ierror, size_t len)
{
    char cname[MPI_MAX_OBJECT_NAME];
    size_t n = len;
    while (n > 0 && name[n - 1] == ' ') n--;
    if (n >= MPI_MAX_OBJECT_NAME) n = MPI_MAX_OBJECT_NAME - 1; /* as MPICH truncates */
    memcpy(cname, name, n);
    cname[n] = '\0';
    set_ierror(ierror, MPI_Type_set_name(MPI_Type_f2c(*datatype), cname));
}

void mpi_type_free_f08_(MPI_Fint *datatype, MPI_Fint *ierror);
void mpi_type_free_f08_(MPI_Fint *datatype, MPI_Fint *ierror)
{
    MPI_Datatype t = MPI_Type_f2c(*datatype);
    int rc = MPI_Type_free(&t);
    if (rc == MPI_SUCCESS) *datatype = MPI_Type_c2f(t);
    set_ierror(ierror, rc);
}
