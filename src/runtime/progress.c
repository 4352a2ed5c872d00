/* progress.c -- the progress engine (progress.h).
 *
 * Every pending item is on one list, in the order it was added, under
 * `lock`; `npending` lets callers that find nothing pending skip the
 * lock. */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "runtime/progress.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static progress_item *queue;
static progress_item **queue_tail = &queue;
static atomic_int npending;

/* No item added earlier on the same lane is still pending. */
static int oldest_on_its_lane(const progress_item *item)
{
    for (const progress_item *q = queue; q != item; q = q->next)
        if (q->lane == item->lane) return 0;
    return 1;
}

/* Advance what may run; repeat while an item completes (its successor on
 * the lane may start at once). */
static void pass(void)
{
    int completed;
    do {
        completed = 0;
        for (progress_item **pp = &queue; *pp;) {
            progress_item *item = *pp;
            int done = 0;
            if (oldest_on_its_lane(item)) sched_progress(item->s, &done);
            if (!done) {
                pp = &item->next;
                continue;
            }
            *pp = item->next;
            if (queue_tail == &item->next) queue_tail = pp;
            atomic_fetch_sub(&npending, 1);
            atomic_fetch_sub(item->lane, 1);
            item->done(item);
            completed = 1;
        }
    } while (completed);
}

void progress_pass(void)
{
    if (atomic_load(&npending) == 0 || pthread_mutex_trylock(&lock) != 0) return;
    pass();
    pthread_mutex_unlock(&lock);
}

void progress_add(progress_item *item)
{
    item->next = NULL;
    pthread_mutex_lock(&lock);
    *queue_tail = item;
    queue_tail = &item->next;
    atomic_fetch_add(&npending, 1);
    atomic_fetch_add(item->lane, 1);
    pthread_mutex_unlock(&lock);
    progress_pass();
}

void progress_drain(const atomic_int *lane)
{
    while (lane ? atomic_load(lane) != 0 : atomic_load(&npending) != 0) {
        progress_pass();
        sched_yield(); /* another thread's pass may be running */
    }
}

/* The progress thread: a pass every period while items are pending, so
 * that they advance while the application computes without calling MPI. */
static pthread_once_t thread_once = PTHREAD_ONCE_INIT;
static pthread_t thread;
static atomic_uint_fast64_t thread_period_us;
static atomic_int thread_running, thread_stop;

static void *thread_main(void *arg)
{
    uint64_t us = atomic_load(&thread_period_us);
    struct timespec period = {.tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000};
    (void)arg;
    while (!atomic_load(&thread_stop)) {
        progress_pass();
        nanosleep(&period, NULL);
    }
    return NULL;
}

static void thread_create(void)
{
    if (atomic_load(&thread_period_us) == 0) return;
    atomic_store(&thread_running, pthread_create(&thread, NULL, thread_main, NULL) == 0);
}

void progress_thread_start(uint64_t period_us)
{
    uint_fast64_t unset = 0;
    atomic_compare_exchange_strong(&thread_period_us, &unset, period_us);
    pthread_once(&thread_once, thread_create);
}

void progress_finalize(void)
{
    if (atomic_load(&thread_running)) {
        atomic_store(&thread_stop, 1);
        pthread_join(thread, NULL);
        atomic_store(&thread_running, 0);
    }
    progress_drain(NULL);
}
