/* errors.c -- reason texts, their MPI error classes, and reporting. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/errors.h"

static const struct {
    const char *text;
    int mpi_class;
} reasons[SPARCML_R_COUNT_] = {
    [SPARCML_R_OK] = {"success", MPI_SUCCESS},
    [SPARCML_R_NULL_BUFFER] = {"null buffer", MPI_ERR_BUFFER},
    [SPARCML_R_UNALIGNED] = {"buffer not 8-byte aligned", MPI_ERR_BUFFER},
    [SPARCML_R_SHORT_BUFFER] = {"count too small to hold a stream header", MPI_ERR_COUNT},
    [SPARCML_R_BAD_MAGIC] = {"bad magic (not a sparcml stream)", MPI_ERR_ARG},
    [SPARCML_R_BAD_VERSION] = {"unsupported stream version", MPI_ERR_ARG},
    [SPARCML_R_BAD_VALUE_TYPE] = {"unknown value type in stream header", MPI_ERR_ARG},
    [SPARCML_R_VALUE_TYPE_TAG] = {"stream value type differs from the datatype's tag", MPI_ERR_TYPE},
    [SPARCML_R_DIM_TOO_LARGE] = {"dim exceeds 2^56", MPI_ERR_ARG},
    [SPARCML_R_BAD_INDEX_WIDTH] = {"index width does not match dim", MPI_ERR_ARG},
    [SPARCML_R_BAD_FORMAT] = {"unknown format flag (neither sparse nor dense)", MPI_ERR_ARG},
    [SPARCML_R_BAD_RESERVED] = {"reserved header field is not zero", MPI_ERR_ARG},
    [SPARCML_R_NNZ_GT_DIM] = {"nnz > dim", MPI_ERR_ARG},
    [SPARCML_R_DENSE_NNZ] = {"dense stream with nnz != dim", MPI_ERR_ARG},
    [SPARCML_R_STREAM_OVERFLOW] = {"stream is longer than count words", MPI_ERR_COUNT},
    [SPARCML_R_INDEX_GE_DIM] = {"index >= dim", MPI_ERR_ARG},
    [SPARCML_R_UNSORTED] = {"indices not sorted", MPI_ERR_ARG},
    [SPARCML_R_DUPLICATE] = {"duplicate index", MPI_ERR_ARG},
    [SPARCML_R_NEGATIVE_COUNT] = {"negative count", MPI_ERR_COUNT},
    [SPARCML_R_ALIASED] = {"sendbuf == recvbuf (use MPI_IN_PLACE)", MPI_ERR_BUFFER},
    [SPARCML_R_OP] = {"only MPI_SUM is defined on sparse streams", MPI_ERR_OP},
    [SPARCML_R_INTERCOMM] = {"inter-communicators are not supported for sparse streams", MPI_ERR_COMM},
    [SPARCML_R_DIM_MISMATCH] = {"dim differs between ranks", MPI_ERR_ARG},
    [SPARCML_R_VALUE_TYPE_MISMATCH] = {"value type differs between ranks", MPI_ERR_TYPE},
    [SPARCML_R_COUNT_MISMATCH] = {"count differs between ranks", MPI_ERR_COUNT},
    [SPARCML_R_CONFIG_MISMATCH] = {"SPARCML_* settings differ between ranks", MPI_ERR_OTHER},
    [SPARCML_R_HISTORY_MISMATCH] = {"ranks disagree on the outcome of earlier calls on this communicator",
                                    MPI_ERR_OTHER},
    [SPARCML_R_CAPACITY] = {"recv capacity too small for the result", MPI_ERR_TRUNCATE},
    [SPARCML_R_NOMEM] = {"out of memory", MPI_ERR_NO_MEM},
    [SPARCML_R_CONFIG_INVALID] = {"invalid SPARCML_* setting", MPI_ERR_OTHER},
    [SPARCML_R_ACTIVE_REQUEST] = {"MPI_Start of a persistent allreduce that is still active", MPI_ERR_REQUEST},
};

const char *sparcml_reason_text(int reason)
{
    if (reason <= 0 || reason >= SPARCML_R_COUNT_) return "unknown error";
    return reasons[reason].text;
}

int sparcml_reason_class(int reason)
{
    if (reason <= 0 || reason >= SPARCML_R_COUNT_) return MPI_ERR_OTHER;
    return reasons[reason].mpi_class;
}

/* "sparcml: MPI_Allreduce: [rank R: ]<text>[: detail]" */
static void error_line(char *buf, size_t len, int rank, int reason, const char *detail)
{
    int n = snprintf(buf, len, "sparcml: MPI_Allreduce: ");
    if (rank >= 0 && n >= 0 && (size_t)n < len) n += snprintf(buf + n, len - (size_t)n, "rank %d: ", rank);
    if (n >= 0 && (size_t)n < len) n += snprintf(buf + n, len - (size_t)n, "%s", sparcml_reason_text(reason));
    if (detail && *detail && n >= 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, ": %s", detail);
}

void sparcml_print_error(int rank, int reason, const char *detail)
{
    char line[MPI_MAX_ERROR_STRING];
    error_line(line, sizeof line, rank, reason, detail);
    /* One write per line so that lines of different ranks do not interleave. */
    fprintf(stderr, "%s\n", line);
    fflush(stderr);
}

/* One error code per reason, added to the MPI under the reason's class on
 * its first use; its string is the latest line of that reason, so that
 * MPI_Error_string (and what a language binding shows) says what happened.
 * Where the MPI does not give the string back for such a code (MPICH 4.0.2
 * answers with an unrelated message for codes added to a predefined
 * class), the first use finds out and the library returns the bare class.
 * Under `lock`: codes are added and strings replaced by any thread. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int codes[SPARCML_R_COUNT_];
static int strings_work = -1; /* unknown until the first code is added */

/* Whether MPI_Error_string of code gives line back. */
static int string_comes_back(int code, const char *line)
{
    char got[MPI_MAX_ERROR_STRING];
    int len = 0;
    return PMPI_Error_string(code, got, &len) == MPI_SUCCESS && strcmp(got, line) == 0;
}

static int code_of(int reason, const char *line)
{
    int cls = sparcml_reason_class(reason), code = 0;
    if (reason <= 0 || reason >= SPARCML_R_COUNT_) return cls;
    pthread_mutex_lock(&lock);
    if (strings_work != 0) {
        if (!codes[reason] && PMPI_Add_error_code(cls, &code) == MPI_SUCCESS) codes[reason] = code;
        code = codes[reason];
        if (code && PMPI_Add_error_string(code, line) != MPI_SUCCESS) code = 0;
        if (code && strings_work < 0) strings_work = string_comes_back(code, line);
        if (!strings_work) code = 0;
    }
    pthread_mutex_unlock(&lock);
    return code ? code : cls;
}

int sparcml_raise(MPI_Comm comm, int reason, int rank, const char *detail)
{
    char line[MPI_MAX_ERROR_STRING];
    int code;
    error_line(line, sizeof line, rank, reason, detail);
    code = code_of(reason, line);
    return comm != MPI_COMM_NULL ? sparcml_raise_code(comm, code) : code;
}

int sparcml_raise_code(MPI_Comm comm, int code)
{
    /* Its own failure (comm no longer valid) leaves nothing more to do:
     * the caller gets the code either way. */
    (void)PMPI_Comm_call_errhandler(comm, code);
    return code;
}
