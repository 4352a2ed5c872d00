/* interpose.c -- the PMPI layer.  Its allreduce entry points dispatch:
 * untagged calls go straight to the vendor after one atomic load and a
 * branch; tagged ones, and with compression or in transparent mode the
 * qualifying calls on the predefined types the registry marks, to the op
 * of their kind (core/op.h), blocking, non-blocking or persistent; the
 * request calls go to the library's handles while any live.  Around
 * MPI_Init it checks the settings on all ranks (and ends the job on a bad
 * one), marks the predefined types and calibrates the cost model; it
 * wraps the type calls the registry follows and exports the library's own
 * entry point, sparcml_compress_residual. */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/errors.h"
#include "base/mpi_flavour.h" /* mpi-ext.h where the persistent allreduce is an extension */
#include "core/calibrate.h"
#include "core/compress.h"
#include "core/iallreduce.h"
#include "core/op.h"
#include "core/settings.h"
#include "core/transparent.h"
#include "runtime/progress.h"
#include "shim/persistent.h"
#include "shim/registry.h"

/* Only for a failed comparison: the ranks may not know each other's
 * verdict, and MPI_Abort is what stops them all (sparcml_abort gives the
 * message time to reach the launcher; no barrier: other ranks may be
 * fine). */
static void stop_job(void)
{
    sparcml_abort(MPI_COMM_WORLD, 1);
}

/* Ends the job on a verdict every rank knows (settings_agree's allreduce),
 * the same way on every rank and under both MPIs: finalize, then exit
 * status 1, so that the job's output is the one line (tests/scripts/
 * settings.sh).  Not MPI_Abort: the launchers add their own lines to it,
 * a varying number under MPICH, and kill ranks whose output is still in
 * flight (hence the sleep in sparcml_abort, base/errors.c).  Finalized
 * ranks have delivered their output.  _exit after flushing, as the
 * wrong-MPI check leaves: the program's atexit handlers and destructors
 * may call MPI after the finalize. */
static _Noreturn void leave_job(void)
{
    if (PMPI_Finalize() != MPI_SUCCESS) fprintf(stderr, "sparcml: MPI_Finalize failed while stopping the job\n");
    fflush(NULL);
    _exit(1);
}

/* This rank's objection to its settings ("" when none). */
static void settings_problem(const sparcml_settings *s, char *msg, size_t len)
{
    int level = MPI_THREAD_SINGLE;
    msg[0] = '\0';
    if (s->error[0]) snprintf(msg, len, "%s", s->error);
    else if (s->progress_us > 0 && (PMPI_Query_thread(&level) != MPI_SUCCESS || level < MPI_THREAD_MULTIPLE))
        snprintf(msg, len, "SPARCML_PROGRESS_US needs MPI_THREAD_MULTIPLE (MPI_Init_thread granted level %d); "
                           "unset it or initialise MPI with MPI_THREAD_MULTIPLE", level);
}

/* One line on a SCOPE_JOB variable that differs (v.differs): rank 0's
 * digest goes to every rank, and the lowest rank whose own differs names
 * the first differing variable with both values.  Should that fail, rank
 * 0 names the variable alone. */
static void report_job_difference(const sparcml_settings *s, int rank, const char *differs)
{
    char root[SETTINGS_DIGEST_BYTES], mine[SETTINGS_DIGEST_BYTES], line[2 * SETTINGS_DIGEST_BYTES];
    int me = INT_MAX, first = INT_MAX;
    settings_job_digest(s, mine);
    memcpy(root, mine, sizeof root);
    if (PMPI_Bcast(root, (int)sizeof root, MPI_CHAR, 0, MPI_COMM_WORLD) == MPI_SUCCESS) {
        if (settings_digest_difference(root, 0, mine, rank, line, sizeof line)) me = rank;
        if (PMPI_Allreduce(&me, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS) first = INT_MAX;
    }
    if (first == INT_MAX && rank == 0) snprintf(line, sizeof line, "%s differs", differs);
    if (first == rank || (first == INT_MAX && rank == 0)) {
        fprintf(stderr, "sparcml: settings differ between ranks: %s (it must be equal on all ranks: sparcml(7))\n",
                line);
        fflush(stderr);
    }
}

/* A bad SPARCML_* value stops the job at start-up with a message, rather
 * than running with a setting the user did not ask for; so do settings
 * that must be equal on all ranks and are not.  One line per job, one
 * allreduce to agree on it: the lowest rank with an objection prints it,
 * and each unknown name is warned about by the lowest rank that holds it
 * (settings_agree).  Every rank takes part, SPARCML_DISABLE or not. */
static void check_settings(void)
{
    const sparcml_settings *s = settings_get();
    settings_verdict v;
    char msg[sizeof s->error + 128];
    int rank = 0;
    if (PMPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS) rank = -1;
    settings_problem(s, msg, sizeof msg);
    if (settings_agree(s, msg[0] != '\0', MPI_COMM_WORLD, &v) != MPI_SUCCESS) {
        fprintf(stderr, "sparcml: rank %d: could not compare the settings across ranks\n", rank);
        fflush(stderr);
        stop_job();
    }
    for (int k = 0; k < s->unknown_count; k++) {
        char warning[SETTINGS_NAME_BYTES + 128];
        if (!v.warns[k]) continue;
        settings_unknown_warning(s->unknown[k], warning, sizeof warning);
        fprintf(stderr, "%s\n", warning);
        fflush(stderr);
    }
    if (v.first_objecting >= 0) {
        if (v.first_objecting == rank) {
            fprintf(stderr, "sparcml: rank %d: %s\n", rank, msg);
            fflush(stderr);
        }
        leave_job();
    }
    if (v.differs) {
        report_job_difference(s, rank, v.differs);
        leave_job();
    }
}

/* SPARCML_TRANSPARENT and SPARCML_COMPRESS: mark the predefined types
 * whose sums they may take over: C's float, double and (transparent mode
 * only) exact integers, and Fortran's REAL, DOUBLE PRECISION and INTEGER
 * at the size the vendor gives them (4 or 8 bytes). */
static void register_predefined(void)
{
    const struct { MPI_Datatype type; int is_float; } types[] = {
        {MPI_FLOAT, 1}, {MPI_DOUBLE, 1}, {MPI_REAL, 1}, {MPI_DOUBLE_PRECISION, 1},
        {MPI_INT, 0}, {MPI_INT32_T, 0}, {MPI_INT64_T, 0}, {MPI_LONG, 0}, {MPI_INTEGER, 0},
    };
    const sparcml_settings *s = settings_get();
    if ((!s->transparent && s->compress == COMPRESS_OFF) || s->disable) return;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        int size = 0;
        if (!types[i].is_float && !s->transparent) continue;
        if (types[i].type == MPI_DATATYPE_NULL || PMPI_Type_size(types[i].type, &size) != MPI_SUCCESS)
            continue; /* a vendor built without Fortran */
        if (size == 4) registry_add_predefined(types[i].type, types[i].is_float ? SPARCML_FLOAT : SPARCML_INT32);
        if (size == 8) registry_add_predefined(types[i].type, types[i].is_float ? SPARCML_DOUBLE : SPARCML_INT64);
    }
}

/* The cost model's unset parameters, measured once per job
 * (core/calibrate.h).  A failure leaves the defaults, on every rank that
 * saw it: should another rank have its measured values, the settings'
 * hash differs and every tagged call says so. */
static void calibrate_at_init(void)
{
    int rank = 0;
    if (calibrate_job(MPI_COMM_WORLD) == MPI_SUCCESS) return;
    if (PMPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS) rank = -1;
    fprintf(stderr, "sparcml: rank %d: calibration failed, the cost model keeps its defaults\n", rank);
    fflush(stderr);
}

/* The library must run with the MPI it is built for (mpi_flavour.h): with
 * the other, every handle below would be wrong.  A program linked to the
 * other MPI has it loaded before main, and not all of its calls pass
 * through MPI_Init here (Open MPI's Fortran library calls PMPI_Init
 * itself), so the library looks when it is loaded; a program that loads
 * its MPI later (mpi4py) is caught in MPI_Init and MPI_Init_thread. */
__attribute__((constructor)) static void require_own_mpi_at_load(void)
{
    flv_require_own_mpi();
}

/* What follows the vendor's MPI_Init or MPI_Init_thread (returned rc). */
static int initialised(int rc)
{
    if (rc != MPI_SUCCESS) return rc;
    check_settings();
    register_predefined();
    calibrate_at_init();
    return rc;
}

int MPI_Init(int *argc, char ***argv)
{
    flv_require_own_mpi();
    return initialised(PMPI_Init(argc, argv));
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    flv_require_own_mpi();
    return initialised(PMPI_Init_thread(argc, argv, required, provided));
}

int MPI_Finalize(void)
{
    int rc = sparcml_finalize(), rc_vendor = PMPI_Finalize();
    return rc_vendor != MPI_SUCCESS ? rc_vendor : rc;
}

int MPI_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
    if (settings_get()->disable) return PMPI_Type_set_name(datatype, type_name);
    return registry_set_name(datatype, type_name);
}

int MPI_Type_free(MPI_Datatype *datatype)
{
    if (datatype) registry_on_free(*datatype);
    return PMPI_Type_free(datatype);
}

/* Where a call on some registered datatype goes: NULL for the vendor,
 * else the kind of op, with the value type in *vtype. */
static const sparcml_op_kind *kind_of(MPI_Datatype datatype, MPI_Count count, MPI_Op op, MPI_Comm comm, int *vtype)
{
    int v = registry_find(datatype);
    if (v == 0) return NULL;
    *vtype = v & ~REGISTRY_PREDEFINED;
    if (!(v & REGISTRY_PREDEFINED)) return &sparcml_op_tagged;
    if (compress_qualifies(count, *vtype, op, comm)) return &sparcml_op_compressed;
    return transparent_qualifies(count, *vtype, op, comm) ? &sparcml_op_transparent : NULL;
}

/* Each allreduce entry point: while no datatype is registered
 * (registry_empty), straight to the vendor -- one load and a branch, then
 * the vendor's function as a tail call of an entry point that has no stack
 * frame (bench/RESULTS.md, Pass-through overhead); else its routed twin
 * asks kind_of.  The twins are never inlined: their frames would become
 * the entry points'. */
#define ROUTED_TWIN __attribute__((noinline)) static int

ROUTED_TWIN routed_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm)
{
    int vtype;
    const sparcml_op_kind *kind = kind_of(datatype, count, op, comm, &vtype);
    if (!kind) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    return sparcml_allreduce(kind, sendbuf, recvbuf, count, datatype, vtype, op, comm);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm)
{
    if (registry_empty()) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    return routed_allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

ROUTED_TWIN routed_iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm, MPI_Request *request)
{
    int vtype;
    const sparcml_op_kind *kind = kind_of(datatype, count, op, comm, &vtype);
    if (!kind) return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
    return sparcml_iallreduce(kind, sendbuf, recvbuf, count, datatype, vtype, op, comm, request, "MPI_Iallreduce");
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request)
{
    if (registry_empty()) return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
    return routed_iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}

#if HAVE_PMPI_ALLREDUCE_C /* MPI-4 (config.h, from configure) */
ROUTED_TWIN routed_allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                               MPI_Op op, MPI_Comm comm)
{
    int vtype;
    const sparcml_op_kind *kind = kind_of(datatype, count, op, comm, &vtype);
    if (!kind) return PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm);
    return sparcml_allreduce(kind, sendbuf, recvbuf, count, datatype, vtype, op, comm);
}

int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm)
{
    if (registry_empty()) return PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm);
    return routed_allreduce_c(sendbuf, recvbuf, count, datatype, op, comm);
}

ROUTED_TWIN routed_iallreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                                MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    int vtype;
    const sparcml_op_kind *kind = kind_of(datatype, count, op, comm, &vtype);
    if (!kind) return PMPI_Iallreduce_c(sendbuf, recvbuf, count, datatype, op, comm, request);
    return sparcml_iallreduce(kind, sendbuf, recvbuf, count, datatype, vtype, op, comm, request, "MPI_Iallreduce");
}

int MPI_Iallreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                     MPI_Comm comm, MPI_Request *request)
{
    if (registry_empty()) return PMPI_Iallreduce_c(sendbuf, recvbuf, count, datatype, op, comm, request);
    return routed_iallreduce_c(sendbuf, recvbuf, count, datatype, op, comm, request);
}
#endif

/* Persistent calls, of both kinds. */
#if HAVE_PMPI_ALLREDUCE_INIT
ROUTED_TWIN routed_allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                  MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    int vtype;
    const sparcml_op_kind *kind = kind_of(datatype, count, op, comm, &vtype);
    if (!kind) return PMPI_Allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, info, request);
    return sparcml_allreduce_init(kind, sendbuf, recvbuf, count, datatype, vtype, op, comm, request,
                                  "MPI_Allreduce_init");
}

int MPI_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    if (registry_empty()) return PMPI_Allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, info, request);
    return routed_allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, info, request);
}

ROUTED_TWIN routed_allreduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                                    MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    int vtype;
    const sparcml_op_kind *kind = kind_of(datatype, count, op, comm, &vtype);
    if (!kind) return PMPI_Allreduce_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request);
    return sparcml_allreduce_init(kind, sendbuf, recvbuf, count, datatype, vtype, op, comm, request,
                                  "MPI_Allreduce_init");
}

int MPI_Allreduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                         MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    if (registry_empty()) return PMPI_Allreduce_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request);
    return routed_allreduce_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request);
}
#elif HAVE_PMPIX_ALLREDUCE_INIT
ROUTED_TWIN routed_allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                  MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    int vtype;
    const sparcml_op_kind *kind = kind_of(datatype, count, op, comm, &vtype);
    if (!kind) return PMPIX_Allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, info, request);
    return sparcml_allreduce_init(kind, sendbuf, recvbuf, count, datatype, vtype, op, comm, request,
                                  "MPIX_Allreduce_init");
}

int MPIX_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                        MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    if (registry_empty()) return PMPIX_Allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, info, request);
    return routed_allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, info, request);
}
#endif

/* The library's own entry point (sparcml.h, sparcml(7) COMPRESSION): a
 * program finds it with dlsym, as it is never linked to the library. */
sparcml_compress_residual_fn sparcml_compress_residual;
int sparcml_compress_residual(MPI_Comm comm, const void *recvbuf, MPI_Count count, MPI_Datatype datatype, void *out)
{
    return compress_residual(comm, recvbuf, count, datatype, out);
}

/* The calls that take requests: the library's persistent handles stand for
 * running calls (persistent.h); none live, straight to the vendor. */
int MPI_Start(MPI_Request *request)
{
    return sparcml_completion_taken() ? sparcml_start(request) : PMPI_Start(request);
}

int MPI_Startall(int n, MPI_Request requests[])
{
    return sparcml_completion_taken() ? sparcml_startall(n, requests) : PMPI_Startall(n, requests);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    return sparcml_completion_taken() ? sparcml_wait(request, status) : PMPI_Wait(request, status);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    return sparcml_completion_taken() ? sparcml_test(request, flag, status) : PMPI_Test(request, flag, status);
}

int MPI_Waitall(int n, MPI_Request requests[], MPI_Status statuses[])
{
    return sparcml_completion_taken() ? sparcml_waitall(n, requests, statuses) : PMPI_Waitall(n, requests, statuses);
}

int MPI_Testall(int n, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    return sparcml_completion_taken() ? sparcml_testall(n, requests, flag, statuses)
                                     : PMPI_Testall(n, requests, flag, statuses);
}

int MPI_Waitany(int n, MPI_Request requests[], int *index, MPI_Status *status)
{
    return sparcml_completion_taken() ? sparcml_waitany(n, requests, index, status)
                                     : PMPI_Waitany(n, requests, index, status);
}

int MPI_Testany(int n, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    return sparcml_completion_taken() ? sparcml_testany(n, requests, index, flag, status)
                                     : PMPI_Testany(n, requests, index, flag, status);
}

int MPI_Waitsome(int n, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    return sparcml_completion_taken() ? sparcml_waitsome(n, requests, outcount, indices, statuses)
                                     : PMPI_Waitsome(n, requests, outcount, indices, statuses);
}

int MPI_Testsome(int n, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    return sparcml_completion_taken() ? sparcml_testsome(n, requests, outcount, indices, statuses)
                                     : PMPI_Testsome(n, requests, outcount, indices, statuses);
}

int MPI_Request_free(MPI_Request *request)
{
    return sparcml_completion_taken() ? sparcml_request_free_handle(request) : PMPI_Request_free(request);
}

/* MPICH never polls a generalized request here: make progress first. */
int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    progress_pass();
    return sparcml_completion_taken() ? sparcml_request_get_status(request, flag, status)
                                     : PMPI_Request_get_status(request, flag, status);
}
