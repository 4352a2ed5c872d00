/* interpose.c -- the PMPI layer.  It only dispatches: untagged calls go
 * straight to the vendor after one atomic load and a branch; tagged ones to
 * sparcml_allreduce().  Nothing else lives here. */
#include "config.h"

#include <stdio.h>
#include <time.h>

#include "allreduce.h"
#include "comm_ctx.h"
#include "registry.h"
#include "settings.h"
#include "stats.h"

/* A bad SPARCML_* value stops the job at start-up with a message, rather
 * than running with a setting the user did not ask for. */
static void check_settings(void)
{
    const sparcml_settings *s = settings_get();
    int rank = 0;
    if (!s->error[0]) return;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "sparcml: rank %d: %s\n", rank, s->error);
    fflush(stderr);
    /* The launcher tears down output forwarding when a rank aborts: give the
     * message time to reach it (no barrier: other ranks may be fine). */
    nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
    PMPI_Abort(MPI_COMM_WORLD, 1);
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) check_settings();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) check_settings();
    return rc;
}

int MPI_Finalize(void)
{
    if (settings_get()->stats) stats_report();
    ctx_finalize();
    return PMPI_Finalize();
}

int MPI_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
    int rc = PMPI_Type_set_name(datatype, type_name);
    if (rc != MPI_SUCCESS || settings_get()->disable) return rc;
    return registry_on_set_name(datatype, type_name);
}

int MPI_Type_free(MPI_Datatype *datatype)
{
    if (datatype) registry_on_free(*datatype);
    return PMPI_Type_free(datatype);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm)
{
    int vtype = registry_value_type(datatype);
    if (vtype == 0) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    return sparcml_allreduce(sendbuf, recvbuf, count, datatype, vtype, op, comm);
}

int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm)
{
    int vtype = registry_value_type(datatype);
    if (vtype == 0) return PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm);
    return sparcml_allreduce(sendbuf, recvbuf, count, datatype, vtype, op, comm);
}
