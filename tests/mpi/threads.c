/* threads.c -- tagged allreduces from several threads at once.
 *
 * usage: threads [THREADS [CALLS]]   (defaults 4 and 200)
 *
 * MPI_Init_thread(MPI_THREAD_MULTIPLE); each thread gets its own duplicate
 * of MPI_COMM_WORLD (made before the threads start, in the same order on
 * every rank), creates and tags its own datatypes (concurrent
 * MPI_Type_set_name: the registry's writers race with other threads'
 * lookups), then runs CALLS tagged allreduces on its communicator, every
 * one checked exactly against the sum recomputed from every rank's inputs
 * (refsum.h).  Thread t of every rank runs the same sequence of problems
 * (dims 1..20011, densities 0..1, all value types, every other call
 * MPI_IN_PLACE).  A hang (e.g. library traffic of two threads crossing
 * between communicators) is caught by the script's timeout. */
#include <pthread.h>

#include "refsum.h"

static const uint64_t dims[] = {1, 100, 1000, 5003, 20011};
static const double densities[] = {0, 1e-3, 1e-2, 0.1, 0.5, 1};

static int rank, size, calls = 200;

typedef struct worker {
    int id;
    MPI_Comm comm;
    uint64_t failures, done;
    pthread_t thread;
} worker;

static void *run(void *arg)
{
    worker *w = arg;
    MPI_Datatype types[5];
    MPI_Count maxcount = sparcml_capacity(20011, SPARCML_DOUBLE);
    void *send = t_alloc_words(maxcount), *recv = t_alloc_words(maxcount);
    void *scratch = malloc(20011 * 16), *dense = malloc(20011 * 8);
    if (!scratch || !dense) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int v = 1; v <= 4; v++) {
        if (sparcml_type_create(v, &types[v]) != MPI_SUCCESS) {
            fprintf(stderr, "threads: rank %d thread %d: cannot tag a datatype\n", rank, w->id);
            w->failures++;
        }
    }
    for (int c = 0; c < calls; c++) {
        uint64_t h = t_rand(777 + (uint64_t)w->id, (uint64_t)c);
        rs_problem p = {((uint64_t)w->id << 32) + (uint64_t)c, dims[h % 5], 1 + (int)((h >> 8) % 4),
                        densities[(h >> 16) % 6]};
        MPI_Count count = sparcml_capacity(p.dim, p.vtype);
        int inplace = c % 2, rc;
        uint64_t bad;
        rs_build(&p, rank, inplace ? recv : send, count, scratch);
        rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : send, recv, (int)count, types[p.vtype], MPI_SUM,
                           w->comm);
        if (rc != MPI_SUCCESS) {
            if (w->failures++ < 5)
                fprintf(stderr, "threads: rank %d thread %d call %d: MPI_Allreduce failed\n", rank,
                        w->id, c);
            continue;
        }
        bad = rs_check(&p, size, recv, dense);
        if (bad && w->failures++ < 5)
            fprintf(stderr, "threads: rank %d thread %d call %d: %llu wrong entries (dim %llu)\n",
                    rank, w->id, c, (unsigned long long)bad, (unsigned long long)p.dim);
        w->done++;
    }
    for (int v = 1; v <= 4; v++) MPI_Type_free(&types[v]);
    free(send); free(recv); free(scratch); free(dense);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, nthreads = argc > 1 ? atoi(argv[1]) : 4;
    uint64_t failures = 0, done = 0;
    worker *ws;
    double t0;
    if (argc > 2) calls = atoi(argv[2]);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) fprintf(stderr, "threads: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        MPI_Finalize();
        return 1;
    }
    ws = calloc((size_t)nthreads, sizeof *ws);
    if (!ws) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int t = 0; t < nthreads; t++) {
        ws[t].id = t;
        MPI_Comm_dup(MPI_COMM_WORLD, &ws[t].comm);
        MPI_Comm_set_errhandler(ws[t].comm, MPI_ERRORS_RETURN);
    }
    t0 = MPI_Wtime();
    for (int t = 0; t < nthreads; t++)
        if (pthread_create(&ws[t].thread, NULL, run, &ws[t]) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int t = 0; t < nthreads; t++) {
        pthread_join(ws[t].thread, NULL);
        failures += ws[t].failures;
        done += ws[t].done;
        MPI_Comm_free(&ws[t].comm);
    }
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &done, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("threads: P=%d threads=%d verified_calls=%llu (%.1f s) failures=%llu\n", size,
               nthreads, (unsigned long long)done, MPI_Wtime() - t0, (unsigned long long)failures);
    free(ws);
    MPI_Finalize();
    return failures == 0 && done == (uint64_t)size * (uint64_t)nthreads * (uint64_t)calls ? 0 : 1;
}
