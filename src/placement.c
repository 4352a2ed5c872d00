/* placement.c -- ranks per core: the ranks of comm on each machine over the
 * CPUs they may run on there.
 *
 * A machine is identified by the kernel's boot id, not the host name: the
 * ranks of the benchmark rig run in separate network namespaces of one
 * kernel (and MPI may see them as separate hosts), while containers on
 * different machines may share a host name.  Without a boot id the host
 * name stands in.  The CPUs are the union of the ranks' affinity masks on
 * that machine, so ranks pinned to a few cores of a large node count as
 * sharing those few.  Only collectives every rank calls, in the same order,
 * whatever its settings: nothing here can leave a rank behind. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "config.h"

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "placement.h"

static uint64_t fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int machine_color(void)
{
    char buf[256] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
        fclose(f);
    }
    if (!buf[0] && gethostname(buf, sizeof buf - 1) != 0) buf[0] = '\0';
    return (int)(fnv1a(buf, 1469598103934665603ull) & 0x7fffffff); /* a split color: >= 0 */
}

static void usable_cpus(cpu_set_t *mask)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof *mask, mask) == 0 && CPU_COUNT(mask) > 0) return;
    CPU_ZERO(mask);
    for (long i = 0; i < (n > 0 ? n : 1) && i < CPU_SETSIZE; i++) CPU_SET((int)i, mask);
}

int placement_ranks_per_core(MPI_Comm comm, double *out)
{
    MPI_Comm machine;
    cpu_set_t cpus;
    double mine = 1;
    int rank, ranks, rc;
    *out = 1;
    usable_cpus(&cpus);
    PMPI_Comm_rank(comm, &rank);
    rc = PMPI_Comm_split(comm, machine_color(), rank, &machine);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Allreduce(MPI_IN_PLACE, &cpus, (int)sizeof cpus, MPI_BYTE, MPI_BOR, machine);
    PMPI_Comm_size(machine, &ranks);
    if (rc == MPI_SUCCESS && CPU_COUNT(&cpus) > 0) mine = (double)ranks / CPU_COUNT(&cpus);
    PMPI_Comm_free(&machine);
    if (rc == MPI_SUCCESS) rc = PMPI_Allreduce(&mine, out, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (*out < 1) *out = 1;
    return rc;
}
