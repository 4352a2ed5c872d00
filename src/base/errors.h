/* errors.h -- why a tagged allreduce failed, and how that is reported.
 *
 * Every failure has a reason code.  Reasons travel in the agreement step
 * (agree.c) so that all ranks of a call learn of a failure on any rank
 * together; each maps to a standard MPI error class and a message. */
#ifndef SPARCML_ERRORS_H
#define SPARCML_ERRORS_H

#include <mpi.h>

enum sparcml_reason {
    SPARCML_R_OK = 0,
    /* the local stream (checked on the rank that owns it) */
    SPARCML_R_NULL_BUFFER,
    SPARCML_R_UNALIGNED,
    SPARCML_R_SHORT_BUFFER,     /* count too small for even a header */
    SPARCML_R_BAD_MAGIC,
    SPARCML_R_BAD_VERSION,
    SPARCML_R_BAD_VALUE_TYPE,
    SPARCML_R_VALUE_TYPE_TAG,   /* header value type differs from the tag */
    SPARCML_R_DIM_TOO_LARGE,
    SPARCML_R_BAD_INDEX_WIDTH,
    SPARCML_R_BAD_FORMAT,
    SPARCML_R_BAD_RESERVED,
    SPARCML_R_NNZ_GT_DIM,
    SPARCML_R_DENSE_NNZ,        /* dense stream with nnz != dim */
    SPARCML_R_STREAM_OVERFLOW,  /* stream longer than count words */
    SPARCML_R_INDEX_GE_DIM,
    SPARCML_R_UNSORTED,
    SPARCML_R_DUPLICATE,
    SPARCML_R_NEGATIVE_COUNT,
    SPARCML_R_ALIASED,          /* sendbuf == recvbuf without MPI_IN_PLACE */
    SPARCML_R_OP,               /* an op other than MPI_SUM */
    SPARCML_R_INTERCOMM,
    /* across ranks (found by the agreement step) */
    SPARCML_R_DIM_MISMATCH,
    SPARCML_R_VALUE_TYPE_MISMATCH,
    SPARCML_R_COUNT_MISMATCH,
    SPARCML_R_CONFIG_MISMATCH,
    SPARCML_R_HISTORY_MISMATCH, /* earlier calls ended differently on some rank */
    /* while running */
    SPARCML_R_CAPACITY,         /* the result does not fit recvbuf */
    SPARCML_R_NOMEM,
    SPARCML_R_CONFIG_INVALID,
    SPARCML_R_ACTIVE_REQUEST,   /* MPI_Start of a persistent call still active */
    SPARCML_R_COUNT_
};

/* Short name of a reason ("index >= dim", ...). */
const char *sparcml_reason_text(int reason);

/* The MPI error class a reason is reported with. */
int sparcml_reason_class(int reason);

/* Print one line "sparcml: MPI_Allreduce: rank R: <text>[: detail]" on
 * stderr (R: the rank in the call's communicator).  Only the rank that
 * found a problem prints it (sparcml(7), ERRORS). */
void sparcml_print_error(int rank, int reason, const char *detail);

/* Invoke comm's error handler with the library's error code for the
 * reason and return that code (what MPI_Allreduce returns when the handler
 * returns).  The code belongs to the reason's class (MPI_Error_class), and
 * MPI_Error_string gives the line of the problem: the rank at fault (rank
 * < 0: none, a mismatch every rank finds), the reason, the detail if this
 * rank knows it. */
int sparcml_raise(MPI_Comm comm, int reason, int rank, const char *detail);

/* Invoke comm's error handler with an MPI error code (the MPI's own, or a
 * class) and return the code: how every entry point fails.  A handler
 * that cannot be invoked (comm no longer valid) changes nothing: the
 * caller still gets the code. */
int sparcml_raise_code(MPI_Comm comm, int code);

#endif
