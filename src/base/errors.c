/* errors.c -- reason texts, their MPI error classes, a call's status and
 * its raising (errors.h). */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/errors.h"
#include "base/mpi_flavour.h"

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
    [SPARCML_R_INTERNAL] = {"internal error of the library (please report it)", MPI_ERR_INTERN},
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

void sparcml_outcome_set(sparcml_outcome *st, int reason, int rank, const char *detail)
{
    *st = (sparcml_outcome){.reason = reason, .code = MPI_SUCCESS, .rank = rank};
    if (detail) snprintf(st->detail, sizeof st->detail, "%s", detail);
}

void sparcml_outcome_set_code(sparcml_outcome *st, int code, int rank)
{
    if (code != MPI_SUCCESS) *st = (sparcml_outcome){.reason = SPARCML_R_OK, .code = code, .rank = rank};
}

/* Append to buf (`n` bytes used so far, possibly more than len: cut). */
static size_t append(char *buf, size_t len, size_t n, const char *fmt, const char *a, const char *b)
{
    int w;
    if (n >= len) return n;
    w = snprintf(buf + n, len - n, fmt, a, b);
    return w < 0 ? len : n + (size_t)w;
}

static void outcome_line(const sparcml_outcome *st, const char *call, int self, char *buf, size_t len)
{
    char rank[32] = "", mpi[MPI_MAX_ERROR_STRING] = "";
    int mpi_len = 0, who = st->rank >= 0 ? st->rank : self;
    size_t n = 0;
    if (who >= 0) snprintf(rank, sizeof rank, "rank %d: ", who);
    n = append(buf, len, n, "sparcml: %s: %s", call, rank);
    if (st->reason == SPARCML_R_OK) {
        if (PMPI_Error_string(st->code, mpi, &mpi_len) != MPI_SUCCESS) snprintf(mpi, sizeof mpi, "code %d", st->code);
        n = append(buf, len, n, "%s%s", "MPI error: ", mpi);
    } else {
        n = append(buf, len, n, "%s%s", sparcml_reason_text(st->reason), "");
        if (st->detail[0]) n = append(buf, len, n, "%s%s", ": ", st->detail);
    }
    (void)n;
}

void sparcml_outcome_print(sparcml_outcome *st, const char *call, int self)
{
    char line[MPI_MAX_ERROR_STRING + SPARCML_DETAIL_BYTES];
    outcome_line(st, call, self, line, sizeof line);
    fprintf(stderr, "%s\n", line);
    fflush(stderr);
    st->printed = 1;
}

int sparcml_handler_aborts(MPI_Comm comm)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    int aborts;
    if (comm == MPI_COMM_NULL || PMPI_Comm_get_errhandler(comm, &eh) != MPI_SUCCESS) return 0;
    aborts = flv_errhandler_aborts(eh);
    if (PMPI_Errhandler_free(&eh) != MPI_SUCCESS) return aborts; /* a predefined handle: nothing leaks */
    return aborts;
}

/* One error code per reason, added to the MPI under the reason's class on
 * its first use; its string is the latest line of that reason, so that
 * MPI_Error_string (and what a language binding shows) says what happened.
 * Where the MPI does not give the string back for such a code (MPICH 4.0.2
 * answers with an unrelated message for codes added to a predefined
 * class), the first use finds out and the library returns the bare class:
 * programs compare classes with the predefined ones, which a class of the
 * library's own (MPI_Add_error_class) would break.
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

static int reason_code(int reason, const char *line)
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

_Noreturn void sparcml_abort(MPI_Comm comm, int code)
{
    /* The launcher tears down output forwarding when a rank aborts: give
     * what this rank printed time to reach it. */
    fflush(stderr);
    nanosleep(&(struct timespec){.tv_nsec = 300 * 1000 * 1000}, NULL);
    (void)PMPI_Abort(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, code);
    _Exit(code); /* MPI_Abort does not return; should it, this rank still ends */
}

int sparcml_outcome_code(const sparcml_outcome *st, const char *call)
{
    char line[MPI_MAX_ERROR_STRING];
    if (st->reason == SPARCML_R_OK) return st->code;
    outcome_line(st, call, -1, line, sizeof line);
    return reason_code(st->reason, line);
}

/* Where comm's handler aborts: the line (once) and the end of the job. */
static void abort_if_fatal(MPI_Comm comm, const char *call, sparcml_outcome *st)
{
    int cls = MPI_ERR_OTHER, self = -1;
    if (!sparcml_handler_aborts(comm)) return;
    if (PMPI_Comm_rank(comm, &self) != MPI_SUCCESS) self = -1;
    if (!st->printed) sparcml_outcome_print(st, call, self);
    if (PMPI_Error_class(sparcml_outcome_code(st, call), &cls) != MPI_SUCCESS) cls = MPI_ERR_OTHER;
    sparcml_abort(comm, cls);
}

/* Its own failure (comm no longer valid) leaves nothing more to do: the
 * caller gets the code either way. */
static int call_handler(MPI_Comm comm, int code)
{
    if (comm != MPI_COMM_NULL) (void)PMPI_Comm_call_errhandler(comm, code);
    return code;
}

int sparcml_raise(MPI_Comm comm, const char *call, sparcml_outcome *st)
{
    abort_if_fatal(comm, call, st);
    return call_handler(comm, sparcml_outcome_code(st, call));
}

int sparcml_raise_in_status(MPI_Comm comm, const char *call, sparcml_outcome *st)
{
    abort_if_fatal(comm, call, st);
    return call_handler(comm, MPI_ERR_IN_STATUS);
}

int sparcml_raise_code(MPI_Comm comm, const char *call, int code)
{
    sparcml_outcome st = {.code = code, .rank = -1};
    if (PMPI_Comm_rank(comm, &st.rank) != MPI_SUCCESS) st.rank = -1;
    return sparcml_raise(comm, call, &st);
}
