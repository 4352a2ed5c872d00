/* placement.c -- ranks per core: the ranks of comm on each machine over the
 * CPUs they may run on there.
 *
 * A machine is identified by the kernel's boot id, not the host name: the
 * ranks of the benchmark rig run in separate network namespaces of one
 * kernel (and MPI may see them as separate hosts), while containers on
 * different machines may share a host name.  Without a boot id the host
 * name stands in.  The CPUs are the union of the ranks' affinity masks on
 * that machine, so ranks pinned to a few cores of a large node count as
 * sharing those few.  One allgather every rank calls, whatever its
 * settings: nothing here can leave a rank behind. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "config.h"

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "base/fnv.h"
#include "base/placement.h"

static uint64_t machine_id(void)
{
    char buf[256] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
        fclose(f);
    }
    if (!buf[0] && gethostname(buf, sizeof buf - 1) != 0) buf[0] = '\0';
    return fnv_bytes(FNV_OFFSET, buf, strlen(buf));
}

static void usable_cpus(cpu_set_t *mask)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof *mask, mask) == 0 && CPU_COUNT(mask) > 0) return;
    CPU_ZERO(mask);
    for (long i = 0; i < (n > 0 ? n : 1) && i < CPU_SETSIZE; i++) CPU_SET((int)i, mask);
}

/* This rank's node (a hash): MPI's name for it and the network namespace
 * the rank runs in.  A simulator's ranks each have a host of their own on
 * one machine; the emulated rig's ranks share one machine and its host
 * name, each in a network namespace of its own, and MPI runs TCP between
 * them: ranks in different network namespaces talk through a network
 * stack, not through shared memory. */
static uint64_t node_id(void)
{
    char name[MPI_MAX_PROCESSOR_NAME + 1] = "", net[64];
    int len = 0;
    ssize_t net_len = readlink("/proc/self/ns/net", net, sizeof net);
    if (PMPI_Get_processor_name(name, &len) != MPI_SUCCESS || len < 0 || len > MPI_MAX_PROCESSOR_NAME) len = 0;
    return fnv_bytes(fnv_bytes(FNV_OFFSET, name, (size_t)len), net, net_len > 0 ? (size_t)net_len : 0);
}

/* What each rank contributes: its machine, its node and the CPUs it may
 * run on. */
typedef struct where {
    uint64_t machine;
    uint64_t node;
    cpu_set_t cpus;
} where;

/* The ranks on machine m over the CPUs they may use together. */
static double machine_load(const where *all, int P, uint64_t m)
{
    cpu_set_t cpus;
    int ranks = 0;
    CPU_ZERO(&cpus);
    for (int r = 0; r < P; r++) {
        if (all[r].machine != m) continue;
        CPU_OR(&cpus, &cpus, &all[r].cpus);
        ranks++;
    }
    return CPU_COUNT(&cpus) > 0 ? (double)ranks / CPU_COUNT(&cpus) : 1;
}

_Static_assert(sizeof(where) == PLACEMENT_BYTES, "placement.h's PLACEMENT_BYTES is the size of a contribution");

void placement_mine(void *buf)
{
    where *mine = buf;
    *mine = (where){.machine = machine_id(), .node = node_id()};
    usable_cpus(&mine->cpus);
}

/* Every rank computes the same maximum from the same data (a machine's
 * load is computed once per rank of it: O(P^2 / ranks per machine) work,
 * negligible next to the collective at the sizes communicators have). */
double placement_of(const void *contributions, int P)
{
    const where *all = contributions;
    double out = 1;
    for (int r = 0; r < P; r++) {
        int seen = 0; /* each machine once */
        for (int q = 0; q < r && !seen; q++) seen = all[q].machine == all[r].machine;
        if (!seen) {
            double load = machine_load(all, P, all[r].machine);
            if (load > out) out = load;
        }
    }
    return out;
}

int placement_one_node(const void *contributions, int P)
{
    const where *all = contributions;
    int one = 1;
    for (int r = 1; r < P; r++) one &= all[r].node == all[0].node;
    return one;
}
