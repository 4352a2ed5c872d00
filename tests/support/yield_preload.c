/* yield_preload.c -- test support only (never part of libsparcml).
 *
 * MPICH ch4:ucx busy-polls ucp_worker_progress while a rank waits.  With 8
 * ranks on 2 cores the waiting ranks starve the ones with work to do, and an
 * 8-byte allreduce takes ~25 ms.  Preloading this wrapper makes a rank that
 * polled ~20 times in vain give up its core (sched_yield), which brings that
 * down to tens of microseconds.  MPIR_CVAR_POLLS_BEFORE_YIELD does not
 * apply to ch4, hence the wrapper. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <sched.h>

typedef unsigned (*progress_fn)(void *worker);

unsigned ucp_worker_progress(void *worker);

unsigned ucp_worker_progress(void *worker)
{
    static __thread progress_fn real;
    static __thread unsigned idle;
    unsigned n;
    if (!real) real = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
    n = real(worker);
    if (n) {
        idle = 0;
    } else if (++idle >= 20) {
        idle = 0;
        sched_yield();
    }
    return n;
}
