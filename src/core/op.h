/* allreduce.h -- entry point of a tagged allreduce (called by interpose.c). */
#ifndef SPARCML_ALLREDUCE_H
#define SPARCML_ALLREDUCE_H

#include <mpi.h>

/* MPI_Allreduce on a datatype tagged with value type vtype. */
int sparcml_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                      int vtype, MPI_Op op, MPI_Comm comm);

/* The steps of a call, shared with transparent.c (which builds its input
 * stream from a dense buffer and chooses between these and the vendor). */
#include "runtime/call.h"
#include "core/settings.h"

/* The agreement step (records only unless local->piggyback); it fills in
 * local->union_part and, once agreed, learns from the previous call. */
int sparcml_agree(sparcml_call *c, sparcml_local *local, sparcml_agreed *agreed);

/* QSGD settings of a call (floating-point values only). */
void sparcml_call_quantization(sparcml_call *c, const sparcml_settings *s);

/* Raise an agreed failure on every rank; the rank that found it prints
 * the line (rank 0 for what all ranks find alike). */
int sparcml_fail(MPI_Comm comm, int rank, const sparcml_agreed *a, int local_reason,
                 const char *detail);

/* The problem the selector sees for an agreed call. */
sparcml_problem sparcml_problem_of(const sparcml_call *c, const sparcml_agreed *a);

/* Run algorithm alg on an agreed call, then learn, count and report. */
int sparcml_run(const sparcml_settings *s, sparcml_call *c, const sparcml_agreed *a, MPI_Comm comm,
                sparcml_algorithm alg);

/* A call as one schedule (the blocking call runs it at once, request.c
 * step by step): start validates this rank's part and prepares the
 * schedule, or says the vendor takes the call (an invalid communicator:
 * the vendor reports it) or that it is done already (result set, error
 * raised); finish, once the schedule has ended, returns the call's result
 * (an MPI error the schedule met is raised here). */
#include "runtime/schedule.h"

typedef struct sparcml_op {
    sched s;
    sparcml_call c;
    sparcml_local local;
    sparcml_agreed agreed;
    const sparcml_settings *set;
    MPI_Comm comm;             /* the application's */
    int rank;
    sv input;                  /* hidden while records only travel */
    sparcml_algorithm alg;
    double t0;
    int result;
    char detail[sizeof ((sparcml_settings *)0)->error];
} sparcml_op;

enum { SPARCML_OP_SCHEDULED, SPARCML_OP_VENDOR, SPARCML_OP_DONE };

int sparcml_op_start(sparcml_op *op, const void *sendbuf, void *recvbuf, MPI_Count count, int vtype,
                     MPI_Op mop, MPI_Comm comm, int blocking);
int sparcml_op_finish(sparcml_op *op);

#endif
