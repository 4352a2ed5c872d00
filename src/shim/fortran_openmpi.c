/* fortran_openmpi.c -- Fortran programs under Open MPI.
 *
 * MPICH's Fortran bindings call the C MPI_* functions, which the shim
 * interposes.  Open MPI's call PMPI_* directly, so the shim would never see
 * a Fortran program there.  This file, built for Open MPI only, takes the
 * names of the Fortran entry points the shim needs -- every mangling
 * libmpi_mpifh exports for mpif.h and `use mpi` (mpi_allreduce_,
 * mpi_allreduce__, mpi_allreduce, MPI_ALLREDUCE) and the ompi_*_f functions
 * the `use mpi_f08` module calls -- and forwards each to the C function,
 * so that both languages take the same path.  Handles are converted with
 * the standard f2c/c2f functions; MPI_IN_PLACE and MPI_BOTTOM arrive as the
 * addresses of Open MPI's Fortran sentinels. */
#include "config.h"

#include <string.h>

#include <mpi.h>

/* Open MPI's Fortran sentinels (libmpi). */
extern int mpi_fortran_in_place_, mpi_fortran_bottom_;

static void *c_buffer(void *fortran_buf)
{
    if (fortran_buf == (void *)&mpi_fortran_in_place_) return MPI_IN_PLACE;
    if (fortran_buf == (void *)&mpi_fortran_bottom_) return MPI_BOTTOM;
    return fortran_buf;
}

/* Every spelling a Fortran compiler may look for, and Open MPI's own name. */
#define FORTRAN_NAMES(lower, upper, ompi, params, args)                        \
    void lower##_(params) { ompi(args); }                                      \
    void lower##__(params) { ompi(args); }                                     \
    void lower(params) { ompi(args); }                                         \
    void upper(params) { ompi(args); }

#define COMMA ,

void ompi_init_f(MPI_Fint *ierr);
void ompi_init_f(MPI_Fint *ierr) { *ierr = (MPI_Fint)MPI_Init(NULL, NULL); }
void mpi_init_(MPI_Fint *ierr);
void mpi_init__(MPI_Fint *ierr);
void mpi_init(MPI_Fint *ierr);
void MPI_INIT(MPI_Fint *ierr);
FORTRAN_NAMES(mpi_init, MPI_INIT, ompi_init_f, MPI_Fint *ierr, ierr)

void ompi_init_thread_f(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);
void ompi_init_thread_f(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    int got = 0;
    *ierr = (MPI_Fint)MPI_Init_thread(NULL, NULL, (int)*required, &got);
    *provided = (MPI_Fint)got;
}
void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);
void mpi_init_thread__(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);
void mpi_init_thread(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);
void MPI_INIT_THREAD(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);
FORTRAN_NAMES(mpi_init_thread, MPI_INIT_THREAD, ompi_init_thread_f,
              MPI_Fint *required COMMA MPI_Fint *provided COMMA MPI_Fint *ierr, required COMMA provided COMMA ierr)

void ompi_finalize_f(MPI_Fint *ierr);
void ompi_finalize_f(MPI_Fint *ierr) { *ierr = (MPI_Fint)MPI_Finalize(); }
void mpi_finalize_(MPI_Fint *ierr);
void mpi_finalize__(MPI_Fint *ierr);
void mpi_finalize(MPI_Fint *ierr);
void MPI_FINALIZE(MPI_Fint *ierr);
FORTRAN_NAMES(mpi_finalize, MPI_FINALIZE, ompi_finalize_f, MPI_Fint *ierr, ierr)

void ompi_allreduce_f(char *sendbuf, char *recvbuf, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *op,
                      MPI_Fint *comm, MPI_Fint *ierr);
void ompi_allreduce_f(char *sendbuf, char *recvbuf, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *op,
                      MPI_Fint *comm, MPI_Fint *ierr)
{
    *ierr = (MPI_Fint)MPI_Allreduce(c_buffer(sendbuf), c_buffer(recvbuf), (int)*count, MPI_Type_f2c(*datatype),
                                    MPI_Op_f2c(*op), MPI_Comm_f2c(*comm));
}
#define ALLREDUCE_PARAMS                                                       \
    char *sendbuf COMMA char *recvbuf COMMA MPI_Fint *count COMMA MPI_Fint *datatype COMMA MPI_Fint *op \
        COMMA MPI_Fint *comm COMMA MPI_Fint *ierr
#define ALLREDUCE_ARGS sendbuf COMMA recvbuf COMMA count COMMA datatype COMMA op COMMA comm COMMA ierr
void mpi_allreduce_(ALLREDUCE_PARAMS);
void mpi_allreduce__(ALLREDUCE_PARAMS);
void mpi_allreduce(ALLREDUCE_PARAMS);
void MPI_ALLREDUCE(ALLREDUCE_PARAMS);
FORTRAN_NAMES(mpi_allreduce, MPI_ALLREDUCE, ompi_allreduce_f, ALLREDUCE_PARAMS, ALLREDUCE_ARGS)

/* A Fortran string: `len` characters, blank-padded, not terminated. */
void ompi_type_set_name_f(MPI_Fint *type, char *name, MPI_Fint *ierr, int len);
void ompi_type_set_name_f(MPI_Fint *type, char *name, MPI_Fint *ierr, int len)
{
    char cname[MPI_MAX_OBJECT_NAME];
    int n = len;
    while (n > 0 && name[n - 1] == ' ') n--;
    if (n >= MPI_MAX_OBJECT_NAME) n = MPI_MAX_OBJECT_NAME - 1; /* as Open MPI truncates */
    memcpy(cname, name, (size_t)n);
    cname[n] = '\0';
    *ierr = (MPI_Fint)MPI_Type_set_name(MPI_Type_f2c(*type), cname);
}
#define SET_NAME_PARAMS MPI_Fint *type COMMA char *name COMMA MPI_Fint *ierr COMMA int len
#define SET_NAME_ARGS type COMMA name COMMA ierr COMMA len
void mpi_type_set_name_(SET_NAME_PARAMS);
void mpi_type_set_name__(SET_NAME_PARAMS);
void mpi_type_set_name(SET_NAME_PARAMS);
void MPI_TYPE_SET_NAME(SET_NAME_PARAMS);
FORTRAN_NAMES(mpi_type_set_name, MPI_TYPE_SET_NAME, ompi_type_set_name_f, SET_NAME_PARAMS, SET_NAME_ARGS)

void ompi_type_free_f(MPI_Fint *type, MPI_Fint *ierr);
void ompi_type_free_f(MPI_Fint *type, MPI_Fint *ierr)
{
    MPI_Datatype t = MPI_Type_f2c(*type);
    *ierr = (MPI_Fint)MPI_Type_free(&t);
    if (*ierr == MPI_SUCCESS) *type = MPI_Type_c2f(t);
}
void mpi_type_free_(MPI_Fint *type, MPI_Fint *ierr);
void mpi_type_free__(MPI_Fint *type, MPI_Fint *ierr);
void mpi_type_free(MPI_Fint *type, MPI_Fint *ierr);
void MPI_TYPE_FREE(MPI_Fint *type, MPI_Fint *ierr);
FORTRAN_NAMES(mpi_type_free, MPI_TYPE_FREE, ompi_type_free_f, MPI_Fint *type COMMA MPI_Fint *ierr, type COMMA ierr)
