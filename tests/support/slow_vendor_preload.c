/* slow_vendor_preload.c -- test support only (never part of libsparcml).
 *
 * A vendor whose allreduce of large float buffers is slow: PMPI_Allreduce
 * (and PMPI_Allreduce_c where the MPI has it) of MPI_FLOAT with at least
 * SLOW_VENDOR_MIN_COUNT values (default 1000) sleeps SLOW_VENDOR_MS
 * milliseconds (default 20) before the real one runs.  Preloaded before libsparcml.so, it is the vendor the library
 * calls, so a test can tell how the library learns the vendor's time
 * (tests/scripts/transparent.sh) without timing anything itself: the
 * sleep is a lower bound on every such call, whatever the machine. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <mpi.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

typedef int (*allreduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
#if MPI_VERSION >= 4
typedef int (*allreduce_c_fn)(const void *, void *, MPI_Count, MPI_Datatype, MPI_Op, MPI_Comm);
static allreduce_c_fn real_c;
#endif

static allreduce_fn real;
static long sleep_ms = 20, min_count = 1000;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    const char *ms = getenv("SLOW_VENDOR_MS"), *count = getenv("SLOW_VENDOR_MIN_COUNT");
    real = (allreduce_fn)dlsym(RTLD_NEXT, "PMPI_Allreduce");
#if MPI_VERSION >= 4
    real_c = (allreduce_c_fn)dlsym(RTLD_NEXT, "PMPI_Allreduce_c");
#endif
    if (ms) sleep_ms = atol(ms);
    if (count) min_count = atol(count);
}

static void slow_down(MPI_Datatype type, MPI_Count count)
{
    pthread_once(&once, load);
    if (type == MPI_FLOAT && count >= min_count && sleep_ms > 0) {
        struct timespec t = {.tv_sec = sleep_ms / 1000, .tv_nsec = sleep_ms % 1000 * 1000000};
        nanosleep(&t, NULL);
    }
}

int PMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    slow_down(type, count);
    return real(sendbuf, recvbuf, count, type, op, comm);
}

#if MPI_VERSION >= 4
int PMPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                     MPI_Comm comm)
{
    slow_down(type, count);
    return real_c(sendbuf, recvbuf, count, type, op, comm);
}
#endif
