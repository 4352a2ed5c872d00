/* errors.h -- why a call of the library failed, and how that is reported.
 *
 * Every failure the library finds has a reason code; each maps to a
 * standard MPI error class and a message.  What became of a call is one
 * sparcml_outcome, decided once (agreed by every rank where the failure is
 * a collective one: core/op.c) and raised once, at the boundary, by the
 * call the program made or the one that completes its request: the
 * communicator's error handler gets the code, or, where that handler
 * aborts (MPI_ERRORS_ARE_FATAL, MPI_ERRORS_ABORT), the rank prints the
 * call's line and aborts the job itself, so that the message names the
 * program's call and the problem rather than an MPI function the program
 * never called. */
#ifndef SPARCML_ERRORS_H
#define SPARCML_ERRORS_H

#include <mpi.h>
#include <stddef.h>

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
    SPARCML_R_INTERNAL,         /* an invariant of the library does not hold */
    SPARCML_R_COUNT_
};

/* Short name of a reason ("index >= dim", ...). */
const char *sparcml_reason_text(int reason);

/* The MPI error class a reason is reported with. */
int sparcml_reason_class(int reason);

enum { SPARCML_DETAIL_BYTES = 192 };

/* What became of one call.  Success: reason SPARCML_R_OK and code
 * MPI_SUCCESS.  A problem the library found: its reason, the rank it is
 * about (-1: every rank finds it alike) and what that rank knows of it
 * (detail, possibly empty).  An MPI function the library called failed:
 * reason SPARCML_R_OK and that function's code.  `printed`: this rank has
 * printed the call's line. */
typedef struct sparcml_outcome {
    int reason;
    int code;
    int rank;
    int printed;
    char detail[SPARCML_DETAIL_BYTES];
} sparcml_outcome;

static inline int sparcml_outcome_failed(const sparcml_outcome *st)
{
    return st->reason != 0 || st->code != MPI_SUCCESS;
}

/* An outcome of `reason` about `rank` (-1: every rank's alike), with an
 * optional detail (NULL: none). */
void sparcml_outcome_set(sparcml_outcome *st, int reason, int rank, const char *detail);

/* An outcome of an MPI code returned to this rank (`rank`) by a function
 * the library called; MPI_SUCCESS leaves st as it is. */
void sparcml_outcome_set_code(sparcml_outcome *st, int code, int rank);

/* Print the call's line, "sparcml: CALL: rank R: <reason>[: detail]" (R:
 * the rank at fault, in the call's communicator, else `self`, the rank
 * that speaks, if >= 0; for an MPI code, the MPI's string of the code),
 * on stderr in one write (the lines of several ranks do not interleave),
 * and mark it printed. */
void sparcml_outcome_print(sparcml_outcome *st, const char *call, int self);

/* Whether comm's error handler aborts the job (MPI_ERRORS_ARE_FATAL,
 * MPI_ERRORS_ABORT); an invalid comm: no. */
int sparcml_handler_aborts(MPI_Comm comm);

/* The MPI code a call that ends with st returns (see sparcml_raise),
 * raising nothing. */
int sparcml_outcome_code(const sparcml_outcome *st, const char *call);

/* The boundary: raise a failed outcome once, from the program's call
 * `call` on comm, and return the MPI code that call returns.  Where comm's
 * handler aborts, prints the line (unless printed) and aborts the job with
 * the code's class; otherwise invokes the handler with the code.  The code
 * of a reason belongs to the reason's class (MPI_Error_class) and, where
 * the MPI gives the string of an added code back (Open MPI),
 * MPI_Error_string gives the line; elsewhere (MPICH 4.0.2, which answers
 * codes added to a predefined class with an unrelated message) it is the
 * bare class (sparcml(7), ERRORS). */
int sparcml_raise(MPI_Comm comm, const char *call, sparcml_outcome *st);

/* The same from a call that completes several requests (MPI_Waitall,
 * ...), of which the one that ended with st failed first: the handler
 * gets MPI_ERR_IN_STATUS, which is returned (the statuses hold the codes);
 * a handler that aborts, as above. */
int sparcml_raise_in_status(MPI_Comm comm, const char *call, sparcml_outcome *st);

/* The same for an MPI code alone (the vendor's, or a class). */
int sparcml_raise_code(MPI_Comm comm, const char *call, int code);

/* End the job from this rank with exit status `code`: what a handler that
 * aborts does, after what was printed had time to reach the launcher. */
_Noreturn void sparcml_abort(MPI_Comm comm, int code);

#endif
