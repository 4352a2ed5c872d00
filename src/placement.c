/* placement.c -- ranks per core, from an allgather of (machine, CPUs).
 *
 * A machine is identified by the kernel's boot id, not the host name: the
 * ranks of the benchmark rig run in separate network namespaces of one
 * kernel (and MPI may see them as separate hosts), while containers on
 * different machines may share a host name.  Without a boot id the host
 * name stands in. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "placement.h"

static uint64_t fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static uint64_t machine_id(void)
{
    char buf[256] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
        fclose(f);
    }
    if (!buf[0] && gethostname(buf, sizeof buf - 1) != 0) buf[0] = '\0';
    return fnv1a(buf, 1469598103934665603ull);
}

int placement_ranks_per_core(MPI_Comm comm, double *out)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t mine[2] = {machine_id(), cpus > 0 ? (uint64_t)cpus : 1}, *all;
    int size, rc;
    *out = 1;
    PMPI_Comm_size(comm, &size);
    all = malloc((size_t)size * sizeof mine);
    if (!all) return MPI_ERR_NO_MEM;
    rc = PMPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, comm);
    /* For each machine (first rank seen on it): its ranks over its CPUs.
     * O(P^2) once per communicator, in integer arithmetic until the end. */
    for (int i = 0; rc == MPI_SUCCESS && i < size; i++) {
        uint64_t ranks = 0, fewest_cpus = all[2 * i + 1];
        int first = 1;
        for (int j = 0; j < size && first; j++) {
            if (all[2 * j] != all[2 * i]) continue;
            if (j < i) first = 0; /* counted with rank j */
            ranks++;
            if (all[2 * j + 1] < fewest_cpus) fewest_cpus = all[2 * j + 1];
        }
        if (first && (double)ranks / (double)fewest_cpus > *out) *out = (double)ranks / (double)fewest_cpus;
    }
    free(all);
    return rc;
}
