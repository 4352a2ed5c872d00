/* soak.c -- many tagged allreduces: no leak, no fd leak, no corruption.
 *
 * usage: soak [CALLS [COMM_ITERATIONS [RSS_LIMIT_KB]]]
 *        (defaults 10000, 3000 and RSS_SLACK_KB; a negative limit only
 *        reports the RSS numbers, for the sanitizer build, where ASan's
 *        quarantine keeps freed memory resident by design).
 * SOAK_TRACE=N prints every rank's RSS and descriptors every N calls.
 *
 * Part 1: CALLS tagged allreduces on MPI_COMM_WORLD, each with its own
 * problem: the first 120 sweep every (dim, density, value type), so that
 * every scratch pool has reached its largest size by the end of the
 * warm-up (the first CALLS/5 calls); the rest draw them at random (the same
 * draw on every rank).  Every third call is MPI_IN_PLACE, and `count` is the
 * capacity of that call's dim (so it varies too).  Every result is checked
 * exactly against the sum recomputed from every rank's inputs (refsum.h).
 *
 * Part 2: COMM_ITERATIONS times MPI_Comm_dup(MPI_COMM_WORLD), one verified
 * tagged allreduce on the duplicate (the library creates its private
 * duplicate and scratch pool there), MPI_Comm_free (its attribute delete
 * callback must free both).  3000 iterations, more than MPICH 4.0 has
 * context ids (2048): a library that leaked its private duplicates would
 * fail here outright, not merely grow (tried: with the delete callback
 * emptied, MPI_Comm_dup fails after ~2000 iterations and RSS grows by
 * 11 MB; the real library: 0-8 kB).
 *
 * Resident memory (/proc/self/statm) and open file descriptors
 * (/proc/self/fd) are read after the warm-up and at the end of each part,
 * on every rank; the largest growth over the ranks is printed and must be
 * at most RSS_SLACK_KB (and 0 descriptors).  Why that slack: after the
 * warm-up the library allocates nothing (pools only grow, to the largest
 * request, which the warm-up reached), so any steady growth is a leak; the
 * slack only absorbs allocator and MPI noise (page-granular heap
 * fluctuation, MPICH request/UCX pools: one-time steps of up to ~0.9 MB in
 * the first ~2000 calls, measured on Debian 12 / MPICH 4.0.2, then flat to
 * within 30 kB), while leaking 128 bytes per call would add 1 MiB over
 * part 1's 8000 measured calls, and each leaked private duplicate (an
 * MPICH communicator plus the context and its pool) ~4 kB per iteration of
 * part 2 (2700 measured). */
#include <dirent.h>
#include <unistd.h>

#include "refsum.h"

#define RSS_SLACK_KB 1024

static const uint64_t dims[] = {64, 1000, 4096, 20011, 65536};
static const double densities[] = {0, 1e-3, 1e-2, 0.1, 0.5, 1};
enum { NDIMS = 5, NDENS = 6, NTYPES = 4 };

static long rss_kb(void)
{
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
    if (f) fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static int fd_count(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

static int rank, size;
static uint64_t failures;
static MPI_Datatype types[NTYPES + 1];
static void *sendb, *recvb, *scratch, *dense;

static void one_call(const rs_problem *p, int inplace, MPI_Comm comm, int P)
{
    MPI_Count count = sparcml_capacity(p->dim, p->vtype);
    void *in = inplace ? recvb : sendb;
    int rc;
    if (rs_build(p, rank, in, count, scratch) != SPARCML_OK) {
        fprintf(stderr, "soak: test bug: cannot build input\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (!inplace) memset(recvb, 0xA5, (size_t)count * 8);
    rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : sendb, recvb, (int)count, types[p->vtype],
                       MPI_SUM, comm);
    if (rc != MPI_SUCCESS) {
        if (failures++ < 10) fprintf(stderr, "soak: rank %d: MPI_Allreduce failed\n", rank);
        return;
    }
    uint64_t bad = rs_check(p, P, recvb, dense);
    if (bad && failures++ < 10)
        fprintf(stderr, "soak: rank %d: %llu wrong entries (dim %llu, density %g, type %d)\n", rank,
                (unsigned long long)bad, (unsigned long long)p->dim, p->density, p->vtype);
}

/* Largest value of x over the ranks. */
static long max_all(long x)
{
    long m;
    MPI_Allreduce(&x, &m, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

int main(int argc, char **argv)
{
    long calls = argc > 1 ? atol(argv[1]) : 10000, iters = argc > 2 ? atol(argv[2]) : 3000;
    long limit = argc > 3 ? atol(argv[3]) : RSS_SLACK_KB;
    long trace = getenv("SOAK_TRACE") ? atol(getenv("SOAK_TRACE")) : 0;
    long warm = calls / 5 > 120 ? calls / 5 : 120, rss0, rss1, crss0 = 0, crss1 = 0;
    int fd0, fd1, cfd0 = 0, cfd1 = 0, ok;
    double t0, t1, t2;
    MPI_Count maxcount = sparcml_capacity(65536, SPARCML_DOUBLE);

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int v = 1; v <= NTYPES; v++) sparcml_type_create(v, &types[v]);
    sendb = t_alloc_words(maxcount);
    recvb = t_alloc_words(maxcount);
    scratch = malloc(65536 * 16);
    dense = malloc(65536 * 8);
    if (!scratch || !dense) MPI_Abort(MPI_COMM_WORLD, 2);

    /* Part 1. */
    t0 = MPI_Wtime();
    rss0 = rss1 = 0;
    fd0 = fd1 = 0;
    for (long c = 0; c < calls; c++) {
        rs_problem p;
        uint64_t h = t_rand(12345, (uint64_t)c);
        if (c < NDIMS * NDENS * NTYPES) { /* the sweep */
            p.dim = dims[c % NDIMS];
            p.density = densities[c / NDIMS % NDENS];
            p.vtype = 1 + (int)(c / (NDIMS * NDENS));
        } else {
            p.dim = dims[h % NDIMS];
            p.density = densities[(h >> 8) % NDENS];
            p.vtype = 1 + (int)((h >> 16) % NTYPES);
        }
        p.seed = (uint64_t)c;
        one_call(&p, c % 3 == 0, MPI_COMM_WORLD, size);
        if (trace && (c + 1) % trace == 0) printf("soak: rank %d: call %ld: RSS %ld kB, fds %d\n", rank, c + 1, rss_kb(), fd_count());
        if (c == warm - 1) {
            rss0 = rss_kb();
            fd0 = fd_count();
        }
    }
    rss1 = rss_kb();
    fd1 = fd_count();
    t1 = MPI_Wtime();

    /* Part 2. */
    for (long k = 0; k < iters; k++) {
        MPI_Comm d;
        rs_problem p = {1000000 + (uint64_t)k, 1000, 1 + (int)(k % NTYPES), 0.01};
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
        one_call(&p, k % 2, d, size);
        MPI_Comm_free(&d);
        if (k == iters / 10 - 1 || (iters < 10 && k == 0)) {
            crss0 = rss_kb();
            cfd0 = fd_count();
        }
    }
    crss1 = rss_kb();
    cfd1 = fd_count();
    t2 = MPI_Wtime();

    /* Report the worst rank. */
    {
        long grow = max_all(rss1 - rss0), cgrow = max_all(crss1 - crss0);
        long fdg = max_all(fd1 - fd0), cfdg = max_all(cfd1 - cfd0);
        long rmax0 = max_all(rss0), rmax1 = max_all(rss1), cmax0 = max_all(crss0), cmax1 = max_all(crss1);
        MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        ok = failures == 0 && rss0 > 0 && fd0 > 0 && fdg == 0 && cfdg == 0
             && (limit < 0 || (grow <= limit && cgrow <= limit));
        if (rank == 0) {
            printf("soak: P=%d calls=%ld (%.1f s) max RSS after warm-up %ld kB, at end %ld kB, "
                   "growth %ld kB (limit %ld); fds %d -> %d (growth on any rank %ld)\n",
                   size, calls, t1 - t0, rmax0, rmax1, grow, limit, fd0, fd1, fdg);
            printf("soak: comm dup+allreduce+free x%ld (%.1f s): max RSS %ld kB -> %ld kB, growth "
                   "%ld kB; fds %d -> %d (growth on any rank %ld)\n",
                   iters, t2 - t1, cmax0, cmax1, cgrow, cfd0, cfd1, cfdg);
            printf("soak: wrong results %llu: %s\n", (unsigned long long)failures, ok ? "PASS" : "FAIL");
        }
    }
    for (int v = 1; v <= NTYPES; v++) MPI_Type_free(&types[v]);
    free(sendb); free(recvb); free(scratch); free(dense);
    MPI_Finalize();
    return ok ? 0 : 1;
}
