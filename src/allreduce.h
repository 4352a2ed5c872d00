/* allreduce.h -- entry point of a tagged allreduce (called by interpose.c). */
#ifndef SPARCML_ALLREDUCE_H
#define SPARCML_ALLREDUCE_H

#include <mpi.h>

/* MPI_Allreduce on a datatype tagged with value type vtype. */
int sparcml_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                      int vtype, MPI_Op op, MPI_Comm comm);

/* The steps of a call, shared with transparent.c (which builds its input
 * stream from a dense buffer and chooses between these and the vendor). */
#include "call.h"
#include "settings.h"

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

#endif
