/* progress.h -- the progress engine of schedules that run without blocking.
 *
 * A pending schedule is a progress_item: the schedule, its lane, and the
 * function to call once it has ended.  Items of one lane (the calls on one
 * communicator) run one after the other, in the order they were added
 * (the same on every rank, as MPI requires of collective calls), so they
 * may share the lane's scratch and their messages never cross.  A pass
 * advances, for every lane, its oldest item -- every lane, not only the
 * one a caller waits for, or two ranks waiting for two calls in opposite
 * orders would wait forever -- and completes the items whose schedules
 * ended, in the same pass starting their successors.
 *
 * The engine holds no algorithm or call state: an item's `done` function
 * owns what happens at its end.  With a period set (progress_thread_start)
 * a thread runs a pass every so many microseconds while items are pending
 * (needs MPI_THREAD_MULTIPLE). */
#ifndef SPARCML_PROGRESS_H
#define SPARCML_PROGRESS_H

#include <stdatomic.h>
#include <stdint.h>

#include "runtime/schedule.h"

typedef struct progress_item progress_item;
struct progress_item {
    sched *s;
    atomic_int *lane;             /* counts the lane's pending items; names the lane */
    void (*done)(progress_item *item); /* the schedule has ended: called in the pass */
    progress_item *next;
};

/* Queue an item behind its lane's pending ones and run a pass (so that
 * its first messages go out now). */
void progress_add(progress_item *item);

/* One pass (thread-safe; a pass that finds another thread's pass running
 * returns at once). */
void progress_pass(void);

/* Run passes until the lane has nothing pending (lane NULL: nothing at
 * all).  Takes no lock of its own when nothing is pending, so it may run
 * inside MPI_Comm_free's attribute callback. */
void progress_drain(const atomic_int *lane);

/* Start the progress thread with this period (once per process; 0: none). */
void progress_thread_start(uint64_t period_us);

/* Stop the progress thread, then complete every pending item. */
void progress_finalize(void);

#endif
