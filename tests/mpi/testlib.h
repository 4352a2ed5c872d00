/* testlib.h -- shared helpers of the MPI test programs.  These programs are
 * plain MPI applications: built with mpicc, never linked to libsparcml; the
 * scripts preload the shim.  Only include/sparcml.h (header-only) is used. */
#ifndef SPARCML_TESTLIB_H
#define SPARCML_TESTLIB_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparcml.h"

static inline uint64_t t_mix(uint64_t z) /* splitmix64 finaliser */
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A counter-based generator: the same (seed, i) gives the same number on
 * every rank, so each rank can regenerate every other rank's input. */
static inline uint64_t t_rand(uint64_t seed, uint64_t i) { return t_mix(t_mix(seed) ^ t_mix(i + 1)); }

/* A hash of n bytes, to compare buffers between ranks and calls: four
 * independent lanes over 8-byte words, each step (lane ^ word) times an odd
 * constant (a bijection of the lane, so a buffer that differs in one word
 * always hashes differently), the tail byte by byte, the lanes finalised.
 * Word-wise in four chains: a byte-serial hash (one multiply per byte, all
 * in one chain) takes a sixth of a case-matrix run's CPU. */
static inline uint64_t t_hash(const void *p, size_t n)
{
    const unsigned char *c = p;
    uint64_t lane[4] = {1, 2, 3, 4}, h = n;
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, c + i + 8 * (size_t)k, 8);
            lane[k] = (lane[k] ^ w) * 1099511628211ull;
        }
    for (; i < n; i++) lane[0] = (lane[0] ^ c[i]) * 1099511628211ull;
    for (int k = 0; k < 4; k++) h = t_mix(h ^ lane[k]);
    return h;
}

/* 1 when the 64-bit value v is the same on every rank of comm: its
 * largest and smallest value (the largest of ~v) in one allreduce. */
static inline int t_same_everywhere(uint64_t v, MPI_Comm comm)
{
    uint64_t in[2] = {v, ~v}, mx[2];
    MPI_Allreduce(in, mx, 2, MPI_UINT64_T, MPI_MAX, comm);
    return mx[0] == ~mx[1];
}

/* MPI_Allreduce_c where the MPI has it (MPI-4: MPICH 4), else MPI_Allreduce
 * (Open MPI 4.1 has no large-count functions). */
static inline int t_allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                                MPI_Op op, MPI_Comm comm)
{
#if MPI_VERSION >= 4
    return MPI_Allreduce_c(sendbuf, recvbuf, count, type, op, comm);
#else
    return MPI_Allreduce(sendbuf, recvbuf, (int)count, type, op, comm);
#endif
}

/* MPI_Iallreduce_c where the MPI has it, else MPI_Iallreduce (as above). */
static inline int t_iallreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype type,
                                 MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
#if MPI_VERSION >= 4
    return MPI_Iallreduce_c(sendbuf, recvbuf, count, type, op, comm, request);
#else
    return MPI_Iallreduce(sendbuf, recvbuf, (int)count, type, op, comm, request);
#endif
}

static inline void *t_alloc_words(MPI_Count words)
{
    void *p = aligned_alloc(64, ((size_t)words * 8 + 63) & ~(size_t)63);
    if (!p) { fprintf(stderr, "out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    return p;
}

#endif
