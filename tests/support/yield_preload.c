/* yield_preload.c -- test support only (never part of libsparcml).
 *
 * MPICH ch4:ucx busy-polls ucp_worker_progress while a rank waits.  With 8
 * ranks on 2 cores the waiting ranks starve the ones with work to do, and an
 * 8-byte allreduce takes ~25 ms.  Preloading this wrapper makes a rank that
 * polled ~20 times in vain give up its core (sched_yield), which brings that
 * down to tens of microseconds.  MPIR_CVAR_POLLS_BEFORE_YIELD does not
 * apply to ch4, hence the wrapper.
 *
 * sched_yield only moves a rank behind the others on its core: a rank that
 * waits long still spins at its fair share, half the CPU of an 8-rank job
 * on 2 cores, taken from the ranks with work and from a second job run
 * beside it.  With YIELD_SLEEP_US=n (the test scripts set it; the benchmarks
 * do not, so their latencies stay the ones measured), a rank whose last
 * YIELDS_BEFORE_SLEEP yields found nothing sleeps n microseconds at a time
 * instead, until a message arrives: one P = 8 run of the tagged-allreduce
 * case matrix beside a CPU-bound process takes half the time and less than
 * half the CPU (alone, about the same time).  The latency each wait adds (at most
 * n) changes no result, only how long a test takes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

enum { IDLE_POLLS_PER_YIELD = 20, YIELDS_BEFORE_SLEEP = 10 };

typedef unsigned (*progress_fn)(void *worker);

unsigned ucp_worker_progress(void *worker);

static progress_fn real;
static long sleep_ns; /* 0: yield only */

static void load(void)
{
    const char *us = getenv("YIELD_SLEEP_US");
    real = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
    sleep_ns = us ? 1000 * atol(us) : 0;
    if (sleep_ns < 0 || sleep_ns >= 1000000000) sleep_ns = 0;
}

unsigned ucp_worker_progress(void *worker)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    static __thread unsigned idle, yields;
    unsigned n;
    pthread_once(&once, load);
    n = real(worker);
    if (n) {
        idle = yields = 0;
    } else if (++idle >= IDLE_POLLS_PER_YIELD) {
        idle = 0;
        if (sleep_ns > 0 && ++yields >= YIELDS_BEFORE_SLEEP) {
            struct timespec t = {.tv_sec = 0, .tv_nsec = sleep_ns};
            nanosleep(&t, NULL);
        } else {
            sched_yield();
        }
    }
    return n;
}
