/* mpi_flavour.c -- the calls of mpi_flavour.h, one body per MPI: the
 * large-count calls (passed through to the _c functions, or the MPI-3
 * stand-ins in chunks and blocks), generalized requests that run the
 * library's progress pass (MPICH's request classes, Open MPI's progress
 * callback), the check that the process runs the MPI the library is built
 * for, and the vendor's allgather threshold the cost model prices. */
#include "config.h"

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/mpi_flavour.h"

uint64_t flv_allgather_ring_bytes(int P)
{
    return (P & (P - 1)) == 0 ? 524288 : 81920;
}

/* MPI-3 functions both libraries have. */
int flv_message_bytes(const MPI_Status *status, MPI_Count *bytes)
{
    return PMPI_Get_elements_x(status, MPI_BYTE, bytes);
}

/* --- the MPI-3 stand-ins, their int limit a parameter (tests/mpi/flavour.c
 * runs them with small limits in either build) ---------------------------- */

/* A byte count as (count, type): bytes up to the limit; beyond it, blocks
 * of `limit` bytes and the remaining bytes, as one element of a type made
 * for the call and freed after it (release_type): exactly the bytes,
 * whatever their number below (limit + 1) limit (2^62 with INT_MAX), so every send
 * and receive of the library's exchanges works at any size.  Its type
 * signature is `bytes` MPI_BYTEs, so a receive posted for more takes a
 * shorter message, as with plain bytes. */
static int as_elements(MPI_Count bytes, MPI_Count limit, int *count, MPI_Datatype *type)
{
    MPI_Count blocks = bytes / limit, tail = bytes % limit;
    MPI_Datatype block = MPI_BYTE;
    int rc, rc_free;
    *type = MPI_BYTE;
    if (bytes <= limit) {
        *count = (int)bytes;
        return MPI_SUCCESS;
    }
    if (blocks > limit) return MPI_ERR_COUNT;
    rc = PMPI_Type_contiguous((int)limit, MPI_BYTE, &block);
    if (rc != MPI_SUCCESS) return rc;
    if (tail == 0) {
        *count = (int)blocks;
        *type = block;
    } else {
        int lengths[2] = {(int)blocks, (int)tail};
        MPI_Aint displs[2] = {0, (MPI_Aint)(blocks * limit)};
        MPI_Datatype types[2] = {block, MPI_BYTE};
        *count = 1;
        rc = PMPI_Type_create_struct(2, lengths, displs, types, type);
        if (rc != MPI_SUCCESS) *type = MPI_BYTE; /* nothing to free */
        rc_free = PMPI_Type_free(&block); /* the struct keeps what it needs */
        if (rc == MPI_SUCCESS) rc = rc_free;
    }
    if (rc == MPI_SUCCESS) rc = PMPI_Type_commit(type);
    return rc;
}

/* Free a type of as_elements (a pending send keeps its own reference). */
static int release_type(MPI_Datatype *type, int rc)
{
    if (*type != MPI_BYTE) {
        int frc = PMPI_Type_free(type);
        if (rc == MPI_SUCCESS) rc = frc;
    }
    return rc;
}

int flv3_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                   MPI_Comm comm, MPI_Count limit)
{
    MPI_Aint lb, extent;
    MPI_Count done = 0;
    int rc = PMPI_Type_get_extent(type, &lb, &extent);
    if (rc != MPI_SUCCESS) return rc;
    do { /* one call for count 0 too: the vendor checks the arguments */
        int n = count - done > limit ? (int)limit : (int)(count - done);
        const void *in = sendbuf == MPI_IN_PLACE ? MPI_IN_PLACE : (const char *)sendbuf + done * extent;
        rc = PMPI_Allreduce(in, (char *)recvbuf + done * extent, n, type, op, comm);
        done += n;
    } while (rc == MPI_SUCCESS && done < count);
    return rc;
}

int flv3_isend_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm, MPI_Request *req,
                     MPI_Count limit)
{
    int n, rc;
    MPI_Datatype t;
    rc = as_elements(bytes, limit, &n, &t);
    if (rc == MPI_SUCCESS) rc = PMPI_Isend(buf, n, t, dest, tag, comm, req);
    return release_type(&t, rc);
}

int flv3_irecv_bytes(void *buf, MPI_Count bytes, int src, int tag, MPI_Comm comm, MPI_Request *req,
                     MPI_Count limit)
{
    int n, rc;
    MPI_Datatype t;
    rc = as_elements(bytes, limit, &n, &t);
    if (rc == MPI_SUCCESS) rc = PMPI_Irecv(buf, n, t, src, tag, comm, req);
    return release_type(&t, rc);
}

int flv3_mrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg, MPI_Count limit)
{
    int n, rc;
    MPI_Datatype t;
    rc = as_elements(bytes, limit, &n, &t);
    if (rc == MPI_SUCCESS) rc = PMPI_Mrecv(buf, n, t, msg, MPI_STATUS_IGNORE);
    return release_type(&t, rc);
}

/* Counts and displacements in one unit (bytes, or words when they are all
 * whole words); 0 when neither fits the limit. */
static int allgather_unit(const MPI_Count *counts, const MPI_Aint *displs, int P, MPI_Count limit)
{
    int bytes_fit = 1, words_fit = 1;
    for (int r = 0; r < P; r++) {
        bytes_fit &= counts[r] <= limit && displs[r] <= limit;
        words_fit &= counts[r] % 8 == 0 && displs[r] % 8 == 0 && counts[r] / 8 <= limit && displs[r] / 8 <= limit;
    }
    return bytes_fit ? 1 : words_fit ? 8 : 0;
}

/* counts and displs in the unit allgather_unit picks, into ints[0..2P),
 * and the matching type (a word type to release after the call). */
static int allgather_ints(const MPI_Count *counts, const MPI_Aint *displs, MPI_Comm comm, MPI_Count limit,
                          int *ints, int *unit, MPI_Datatype *t)
{
    int P, rc = PMPI_Comm_size(comm, &P);
    *t = MPI_BYTE;
    if (rc != MPI_SUCCESS) return rc;
    *unit = allgather_unit(counts, displs, P, limit);
    if (*unit == 0) return MPI_ERR_COUNT;
    for (int r = 0; r < P; r++) {
        ints[r] = (int)(counts[r] / *unit);
        ints[P + r] = (int)(displs[r] / *unit);
    }
    if (*unit == 1) return MPI_SUCCESS;
    rc = PMPI_Type_contiguous(8, MPI_BYTE, t);
    if (rc != MPI_SUCCESS) *t = MPI_BYTE;
    else rc = PMPI_Type_commit(t);
    return rc;
}

int flv3_allgatherv_bytes(const void *sendbuf, MPI_Count sendbytes, void *recvbuf, const MPI_Count *counts,
                          const MPI_Aint *displs, MPI_Comm comm, MPI_Count limit)
{
    int P, unit = 1, rc = PMPI_Comm_size(comm, &P), *ints;
    MPI_Datatype t = MPI_BYTE;
    if (rc != MPI_SUCCESS) return rc;
    ints = malloc(2 * (size_t)P * sizeof *ints);
    if (!ints) return MPI_ERR_NO_MEM;
    rc = allgather_ints(counts, displs, comm, limit, ints, &unit, &t);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Allgatherv(sendbuf, (int)(sendbytes / unit), t, recvbuf, ints, ints + P, t, comm);
    free(ints);
    return release_type(&t, rc);
}

int flv3_iallgatherv_bytes(const void *sendbuf, MPI_Count sendbytes, void *recvbuf, const MPI_Count *counts,
                           const MPI_Aint *displs, MPI_Comm comm, int *ints, MPI_Request *req, MPI_Count limit)
{
    int P, unit = 1, rc = PMPI_Comm_size(comm, &P);
    MPI_Datatype t = MPI_BYTE;
    if (rc == MPI_SUCCESS) rc = allgather_ints(counts, displs, comm, limit, ints, &unit, &t);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Iallgatherv(sendbuf, (int)(sendbytes / unit), t, recvbuf, ints, ints + P, t, comm, req);
    return release_type(&t, rc);
}

int flv3_iallreduce(void *buf, MPI_Count count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *reqs,
                    int max_reqs, int *nreqs, MPI_Count limit)
{
    MPI_Aint lb, extent;
    MPI_Count done = 0;
    int rc = PMPI_Type_get_extent(type, &lb, &extent);
    *nreqs = 0;
    if (rc != MPI_SUCCESS) return rc;
    if ((count + limit - 1) / limit > max_reqs) return MPI_ERR_COUNT;
    do { /* one call for count 0 too, as flv3_allreduce */
        int n = count - done > limit ? (int)limit : (int)(count - done);
        rc = PMPI_Iallreduce(MPI_IN_PLACE, (char *)buf + done * extent, n, type, op, comm, &reqs[*nreqs]);
        if (rc == MPI_SUCCESS) ++*nreqs;
        done += n;
    } while (rc == MPI_SUCCESS && done < count);
    return rc;
}

int flv3_imrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg, MPI_Request *req, MPI_Count limit)
{
    int n, rc;
    MPI_Datatype t;
    rc = as_elements(bytes, limit, &n, &t);
    if (rc == MPI_SUCCESS) rc = PMPI_Imrecv(buf, n, t, msg, req);
    return release_type(&t, rc);
}

#if HAVE_PMPI_ALLREDUCE_C /* MPI-4 large counts (MPICH 4) */

int flv_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    return PMPI_Allreduce_c(sendbuf, recvbuf, count, type, op, comm);
}

int flv_isend_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
    return PMPI_Isend_c(buf, bytes, MPI_BYTE, dest, tag, comm, req);
}

int flv_irecv_bytes(void *buf, MPI_Count bytes, int src, int tag, MPI_Comm comm, MPI_Request *req)
{
    return PMPI_Irecv_c(buf, bytes, MPI_BYTE, src, tag, comm, req);
}

int flv_mrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg)
{
    return PMPI_Mrecv_c(buf, bytes, MPI_BYTE, msg, MPI_STATUS_IGNORE);
}

int flv_allgatherv_bytes(const void *sendbuf, MPI_Count sendbytes, void *recvbuf, const MPI_Count *counts,
                         const MPI_Aint *displs, MPI_Comm comm)
{
    return PMPI_Allgatherv_c(sendbuf, sendbytes, MPI_BYTE, recvbuf, counts, displs, MPI_BYTE, comm);
}

int flv_iallgatherv_bytes(const void *sendbuf, MPI_Count sendbytes, void *recvbuf, const MPI_Count *counts,
                          const MPI_Aint *displs, MPI_Comm comm, int *ints, MPI_Request *req)
{
    (void)ints; /* the counts are MPI_Count already */
    return PMPI_Iallgatherv_c(sendbuf, sendbytes, MPI_BYTE, recvbuf, counts, displs, MPI_BYTE, comm, req);
}

int flv_iallreduce(void *buf, MPI_Count count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *reqs,
                   int max_reqs, int *nreqs)
{
    int rc;
    *nreqs = 0;
    if (max_reqs < 1) return MPI_ERR_INTERN;
    rc = PMPI_Iallreduce_c(MPI_IN_PLACE, buf, count, type, op, comm, reqs);
    if (rc == MPI_SUCCESS) *nreqs = 1;
    return rc;
}

int flv_imrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg, MPI_Request *req)
{
    return PMPI_Imrecv_c(buf, bytes, MPI_BYTE, msg, req);
}

#else /* MPI-3 counts (Open MPI 4.1): the stand-ins at INT_MAX */

int flv_allreduce(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    return flv3_allreduce(sendbuf, recvbuf, count, type, op, comm, INT_MAX);
}

int flv_isend_bytes(const void *buf, MPI_Count bytes, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
    return flv3_isend_bytes(buf, bytes, dest, tag, comm, req, INT_MAX);
}

int flv_irecv_bytes(void *buf, MPI_Count bytes, int src, int tag, MPI_Comm comm, MPI_Request *req)
{
    return flv3_irecv_bytes(buf, bytes, src, tag, comm, req, INT_MAX);
}

int flv_mrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg)
{
    return flv3_mrecv_bytes(buf, bytes, msg, INT_MAX);
}

int flv_allgatherv_bytes(const void *sendbuf, MPI_Count sendbytes, void *recvbuf, const MPI_Count *counts,
                         const MPI_Aint *displs, MPI_Comm comm)
{
    return flv3_allgatherv_bytes(sendbuf, sendbytes, recvbuf, counts, displs, comm, INT_MAX);
}

int flv_iallgatherv_bytes(const void *sendbuf, MPI_Count sendbytes, void *recvbuf, const MPI_Count *counts,
                          const MPI_Aint *displs, MPI_Comm comm, int *ints, MPI_Request *req)
{
    return flv3_iallgatherv_bytes(sendbuf, sendbytes, recvbuf, counts, displs, comm, ints, req, INT_MAX);
}

int flv_iallreduce(void *buf, MPI_Count count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *reqs,
                   int max_reqs, int *nreqs)
{
    return flv3_iallreduce(buf, count, type, op, comm, reqs, max_reqs, nreqs, INT_MAX);
}

int flv_imrecv_bytes(void *buf, MPI_Count bytes, MPI_Message *msg, MPI_Request *req)
{
    return flv3_imrecv_bytes(buf, bytes, msg, req, INT_MAX);
}

#endif

/* --- generalized requests with a progress hook ---------------------------- */

#if HAVE_MPIX_GREQUEST_CLASS || defined(OPEN_MPI)
/* The caller's functions, the same for every request of the process. */
static _Atomic(const flv_grequest_fns *) grequest_fns;

static void run_progress(void)
{
    const flv_grequest_fns *fns = atomic_load(&grequest_fns);
    if (fns) fns->progress();
}
#endif

#if HAVE_MPIX_GREQUEST_CLASS
/* MPICH runs poll_fn from MPI_Wait/Test/Waitany/Waitsome/Test{all,any,some}
 * and wait_fn (only) from MPI_Waitall, looping until the request is
 * complete: one progress pass each is enough. */
static int grequest_poll(void *state, MPI_Status *status)
{
    (void)state; (void)status;
    run_progress();
    return MPI_SUCCESS;
}

static int grequest_wait(int count, void **states, double timeout, MPI_Status *status)
{
    (void)count; (void)states; (void)timeout; (void)status;
    run_progress();
    return MPI_SUCCESS;
}

/* A collective cannot be taken back (cancelling one is erroneous). */
static int grequest_cancel(void *state, int complete)
{
    (void)state; (void)complete;
    return MPI_SUCCESS;
}

/* Written once, under pthread_once, before any request exists. */
static MPIX_Grequest_class grequest_class;
static int grequest_class_rc = MPI_ERR_INTERN;
static pthread_once_t grequest_once = PTHREAD_ONCE_INIT;

static void grequest_class_create(void)
{
    const flv_grequest_fns *fns = atomic_load(&grequest_fns);
    grequest_class_rc = PMPIX_Grequest_class_create(fns->query, fns->free, grequest_cancel, grequest_poll,
                                                    grequest_wait, &grequest_class);
}

int flv_grequest_start(void *state, const flv_grequest_fns *fns, MPI_Request *req)
{
    const flv_grequest_fns *none = NULL;
    atomic_compare_exchange_strong(&grequest_fns, &none, fns);
    pthread_once(&grequest_once, grequest_class_create);
    if (grequest_class_rc != MPI_SUCCESS) return grequest_class_rc;
    return PMPIX_Grequest_class_allocate(grequest_class, state, req);
}
#elif defined(OPEN_MPI)
/* Open MPI 4.1 has no progress hook in its generalized requests, but its
 * completion calls (and every other call that makes progress) run the
 * callbacks of opal_progress_register: the library's is registered with
 * the first non-blocking call.  The symbol is internal to libopen-pal,
 * hence looked up, not linked against. */
static int progress_callback(void)
{
    run_progress();
    return 0;
}

static int grequest_cancel(void *state, int complete)
{
    (void)state; (void)complete;
    return MPI_SUCCESS; /* a collective cannot be taken back */
}

static int progress_rc = MPI_ERR_INTERN;
static pthread_once_t progress_once = PTHREAD_ONCE_INIT;

static void progress_register(void)
{
    int (*reg)(int (*)(void));
    *(void **)&reg = dlsym(RTLD_DEFAULT, "opal_progress_register");
    if (reg && reg(progress_callback) == 0) progress_rc = MPI_SUCCESS;
}

int flv_grequest_start(void *state, const flv_grequest_fns *fns, MPI_Request *req)
{
    const flv_grequest_fns *none = NULL;
    atomic_compare_exchange_strong(&grequest_fns, &none, fns);
    pthread_once(&progress_once, progress_register);
    if (progress_rc != MPI_SUCCESS) return progress_rc;
    return PMPI_Grequest_start(fns->query, fns->free, grequest_cancel, state, req);
}
#else
int flv_grequest_start(void *state, const flv_grequest_fns *fns, MPI_Request *req)
{
    (void)state; (void)fns; (void)req;
    return MPI_ERR_INTERN; /* FLV_HAVE_NONBLOCKING is 0: never called */
}
#endif

int flv_iallreduce_vendor(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type, MPI_Op op,
                          MPI_Comm comm, MPI_Request *req)
{
#if HAVE_PMPI_ALLREDUCE_C
    return PMPI_Iallreduce_c(sendbuf, recvbuf, count, type, op, comm, req);
#else
    if (count > INT_MAX) /* only from the library's own counts: the application's are ints here */
        return MPI_ERR_COUNT;
    return PMPI_Iallreduce(sendbuf, recvbuf, (int)count, type, op, comm, req);
#endif
}

/* --- the MPI the process runs ---------------------------------------------
 *
 * An MPI library is a loaded object that itself defines PMPI_Init; its kind
 * is Open MPI when it (or its dependencies) define ompi_mpi_comm_world, the
 * object Open MPI's MPI_COMM_WORLD points to, MPICH when it defines
 * MPIR_Err_create_code (MPICH and its derivatives), else unknown.  Every
 * loaded object is looked at, not only the global scope: mpi4py loads its
 * MPI with RTLD_LOCAL.  That some symbol resolves is not enough: the
 * preloaded library brings its own MPI along as a dependency, so the
 * question is whether an MPI of the OTHER kind is loaded too -- only the
 * program can have brought it. */

enum family { FAM_OPEN_MPI, FAM_MPICH, FAM_OTHER };
static const char *const family_name[] = {"Open MPI", "MPICH", "another MPI"};
/* Where scripts/setup.sh builds the library for each kind: the hint of a
 * library that runs from a source tree's build. */
static const char *const family_build[] = {
    "scripts/setup.sh builds it as build-openmpi/src/.libs/libsparcml.so",
    "scripts/setup.sh builds it as build/src/.libs/libsparcml.so",
    "configure MPICC=<that MPI's mpicc>",
};

#if defined(OPEN_MPI)
static const enum family built_for = FAM_OPEN_MPI;
#elif defined(MPICH_VERSION)
static const enum family built_for = FAM_MPICH;
#else
static const enum family built_for = FAM_OTHER;
#endif

/* Open MPI's handles are its own; an MPICH build cannot tell an unknown MPI
 * from an MPICH-ABI one (Intel MPI, MVAPICH), so only Open MPI is foreign
 * to it; a build for an unknown MPI checks nothing. */
static int foreign(enum family f)
{
    switch (built_for) {
    case FAM_OPEN_MPI: return f != FAM_OPEN_MPI;
    case FAM_MPICH: return f == FAM_OPEN_MPI;
    default: return 0;
    }
}

typedef struct loaded {
    const char *name; /* "" for the program */
    ElfW(Addr) base;
    const ElfW(Phdr) *phdr;
    ElfW(Half) phnum;
} loaded;

typedef struct loaded_list {
    loaded *obj;
    size_t n, cap;
} loaded_list;

/* The objects are listed first and opened afterwards: dlopen is not called
 * while dl_iterate_phdr holds the loader's lock. */
static int list_object(struct dl_phdr_info *info, size_t size, void *data)
{
    loaded_list *l = data;
    (void)size;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        loaded *obj = realloc(l->obj, cap * sizeof *obj);
        if (!obj) return 1; /* look at the objects listed so far */
        l->obj = obj;
        l->cap = cap;
    }
    l->obj[l->n++] = (loaded){.name = info->dlpi_name ? info->dlpi_name : "",
                              .base = info->dlpi_addr,
                              .phdr = info->dlpi_phdr,
                              .phnum = info->dlpi_phnum};
    return 0;
}

/* Whether address p lies in one of the object's segments, i.e. the symbol
 * found from its handle is its own and not a dependency's. */
static int defines(const loaded *o, const void *p)
{
    ElfW(Addr) a = (ElfW(Addr))p;
    for (ElfW(Half) i = 0; i < o->phnum; i++) {
        const ElfW(Phdr) *ph = &o->phdr[i];
        if (ph->p_type == PT_LOAD && a >= o->base + ph->p_vaddr && a < o->base + ph->p_vaddr + ph->p_memsz)
            return 1;
    }
    return 0;
}

/* The first loaded MPI library of a foreign kind: its kind and file name;
 * 0 when there is none. */
static int find_foreign(enum family *kind, char *name, size_t len)
{
    loaded_list l = {.obj = NULL};
    int found = 0;
    dl_iterate_phdr(list_object, &l);
    for (size_t i = 0; i < l.n && !found; i++) {
        void *h = dlopen(l.obj[i].name[0] ? l.obj[i].name : NULL, RTLD_LAZY | RTLD_NOLOAD);
        void *init;
        if (!h) continue; /* the vDSO */
        init = dlsym(h, "PMPI_Init");
        if (init && defines(&l.obj[i], init)) {
            enum family f = dlsym(h, "ompi_mpi_comm_world")    ? FAM_OPEN_MPI
                            : dlsym(h, "MPIR_Err_create_code") ? FAM_MPICH
                                                               : FAM_OTHER;
            if (foreign(f)) {
                const char *slash = strrchr(l.obj[i].name, '/');
                snprintf(name, len, "%s", slash ? slash + 1 : l.obj[i].name[0] ? l.obj[i].name : "the program");
                *kind = f;
                found = 1;
            }
        }
        dlclose(h);
    }
    free(l.obj);
    return found;
}

/* This process's rank as the launcher tells it before MPI_Init (either
 * MPI's launcher, PMIx, Slurm), -1 when none says. */
static int launcher_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long r;
        if (!v || !*v) continue;
        r = strtol(v, &end, 10);
        if (*end == '\0' && r >= 0 && r <= INT_MAX) return (int)r;
    }
    return -1;
}

/* Libtool keeps a build's shared library in a .libs directory; anywhere
 * else the library was installed (make install, with or without DESTDIR,
 * or copied), and a hint into a source tree would mean nothing. */
static int runs_from_build_tree(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash && slash - path >= 6 && strncmp(slash - 6, "/.libs", 6) == 0;
}

/* How to get the right library: from a build tree, where setup.sh builds
 * it; installed, a build for that MPI under a prefix of its own, as this
 * one's (SPARCML_PREFIX, configure's --prefix) is. */
static void right_library_hint(enum family kind, const char *self, char *hint, size_t len)
{
    const char *mpi = kind == FAM_OTHER ? "that MPI" : family_name[kind];
    if (runs_from_build_tree(self)) snprintf(hint, len, "%s", family_build[kind]);
    else
        snprintf(hint, len, "this one is installed under %s; install one built with %s's mpicc under a prefix of its "
                 "own (configure --prefix=<dir> MPICC=<%s's mpicc>) and preload <dir>/lib/libsparcml.so",
                 SPARCML_PREFIX, mpi, mpi);
}

void flv_require_own_mpi(void)
{
    enum family kind = FAM_OTHER;
    char lib[256], hint[512];
    Dl_info self;
    const char *path;
    if (!find_foreign(&kind, lib, sizeof lib)) return;
    if (launcher_rank() <= 0) {
        path = dladdr((void *)flv_require_own_mpi, &self) && self.dli_fname ? self.dli_fname : "libsparcml.so";
        right_library_hint(kind, path, hint, sizeof hint);
        fprintf(stderr, "sparcml: %s is built for %s but the program runs %s (%s): preload the libsparcml.so "
                        "built for %s instead (%s)\n",
                path, family_name[built_for], family_name[kind], lib,
                kind == FAM_OTHER ? "that MPI" : family_name[kind], hint);
        fflush(stderr);
    } else {
        /* Rank 0 speaks for the job; the launcher stops the other ranks
         * when the first one ends, so they give its line time to arrive. */
        nanosleep(&(struct timespec){.tv_nsec = 300 * 1000 * 1000}, NULL);
    }
    /* Not MPI_Abort: neither MPI is initialised, and the program's MPI
     * cannot be given a communicator (the library only has its own MPI's
     * handles).  Not exit(): atexit handlers and both MPIs' destructors
     * would run in a process that holds two MPIs.  The launcher sees a rank
     * end with status 1 before MPI_Init and ends the job. */
    _exit(1);
}
