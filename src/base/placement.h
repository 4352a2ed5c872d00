/* placement.h -- how many ranks of a communicator share each core.
 *
 * The cost model's alpha and gamma are for a rank with a core of its own.
 * Where ranks share cores (8 ranks on a 2-core machine, or more ranks than
 * cores on a node), CPU work takes proportionally longer and a message
 * waits for its receiver to be scheduled: the model scales both by the
 * number of ranks per core (core/select.c).  Ranks that MPI places on one
 * node exchange their bytes through shared memory, copied by the cores
 * that merge.  Both are detected once per communicator, collectively and
 * identically on every rank. */
#ifndef SPARCML_PLACEMENT_H
#define SPARCML_PLACEMENT_H


/* This rank's contribution (PLACEMENT_BYTES bytes, to be allgathered by
 * the communicator's set-up, runtime/comm_ctx.h), and from every rank's
 * contributions the largest ratio, over the machines the ranks run on, of
 * ranks on that machine to the CPUs they may use there (the union of their
 * affinity masks); at least 1, the same on every rank. */
enum { PLACEMENT_BYTES = 16 + 128 };
void placement_mine(void *buf);
double placement_of(const void *all, int P);
/* 1 where every rank has the same MPI processor name (the node MPI places
 * it on) and network namespace: shared-memory transport; else 0; the same
 * on every rank. */
int placement_one_node(const void *all, int P);

#endif
