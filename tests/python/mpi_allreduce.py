"""MPI test of python/sparcml.py through mpi4py, run by tests/scripts/python.sh:

    mpirun -n P -x LD_PRELOAD=libsparcml.so python3 mpi_allreduce.py
        every value type, in place and not, sparse and dense results: the
        sum against a reference each rank recomputes from every rank's input
        (exact for integers, within P eps sum|x| for floats), bitwise the
        same on all ranks; a malformed stream on one rank raises
        MPI.Exception with MPI.ERR_ARG on every rank; the same sums through
        comm.Iallreduce + Wait, bitwise equal to the blocking results
        (Debian 12's mpi4py 3.1 has no persistent collectives)
    mpirun -n P python3 mpi_allreduce.py --expect-no-shim
        without the library the tagged call raises MPI.Exception (ERR_OP)
        on every rank, never a result
Prints "python mpi_allreduce: P=.. cases=.. failures=.." on rank 0."""
import os
import sys
import zlib

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import sparcml  # noqa: E402

comm = MPI.COMM_WORLD
rank, P = comm.Get_rank(), comm.Get_size()
DIM = 5000
failures = 0
cases = 0


def fail(what):
    global failures
    failures += 1
    print("FAIL rank %d: %s" % (rank, what), file=sys.stderr, flush=True)


def rank_input(r, dt, density, seed):
    """Rank r's (indices, values): the same on every rank that computes it."""
    rng = np.random.default_rng([seed, r])
    nnz = int(DIM * density)
    idx = np.sort(rng.choice(DIM, nnz, replace=False))
    vals = rng.integers(-1000, 1000, nnz)
    vals[vals == 0] = 1
    return idx, vals.astype(dt)


def same_everywhere(arr):
    h = zlib.crc32(arr.tobytes())
    return comm.allreduce(h, op=MPI.MAX) == comm.allreduce(h, op=MPI.MIN)


def run_case(dt, density, inplace, seed):
    global cases
    cases += 1
    idx, vals = rank_input(rank, dt, density, seed)
    vt = sparcml.value_type_of(dt)
    if inplace:
        buf = sparcml.from_sorted(idx, vals, DIM, out=sparcml.empty(DIM, vt))
        out = sparcml.allreduce(comm, MPI.IN_PLACE, buf)
    else:
        out = sparcml.allreduce(comm, sparcml.from_sorted(idx, vals, DIM))
    got = sparcml.to_dense(out)
    ref = np.zeros(DIM, np.float64 if np.issubdtype(dt, np.floating) else np.int64)
    mag = np.zeros(DIM)
    for r in range(P):
        i, v = rank_input(r, dt, density, seed)
        ref[i] += v
        mag[i] += np.abs(v.astype(np.float64))
    if np.issubdtype(dt, np.floating):
        ok = np.all(np.abs(got.astype(np.float64) - ref) <= P * np.finfo(dt).eps * mag)
    else:
        ok = np.array_equal(got.astype(np.int64), ref)
    if not ok:
        fail("%s d=%g inplace=%d: wrong sum" % (np.dtype(dt), density, inplace))
    if not same_everywhere(out[:sparcml.capacity(DIM, vt)]):
        fail("%s d=%g inplace=%d: result differs between ranks" % (np.dtype(dt), density, inplace))
    return sparcml.header(out)["format"]


def nonblocking_case(dt, density, seed):
    """comm.Iallreduce gives the blocking call's bytes."""
    global cases
    cases += 1
    idx, vals = rank_input(rank, dt, density, seed)
    vt = sparcml.value_type_of(dt)
    send = sparcml.from_sorted(idx, vals, DIM, out=sparcml.empty(DIM, vt))
    want = sparcml.allreduce(comm, send)
    t, count = sparcml.tagged_type(vt), want.size
    got = np.zeros(count, np.uint64)
    comm.Iallreduce([send, count, t], [got, count, t], op=MPI.SUM).Wait()
    if not np.array_equal(got, want):
        fail("%s d=%g: Iallreduce differs from Allreduce" % (np.dtype(dt), density))


def malformed_on_last_rank():
    global cases
    cases += 1
    buf = sparcml.from_sorted([1, 2], np.ones(2, np.float32), DIM, out=sparcml.empty(DIM, sparcml.FLOAT))
    if rank == P - 1:
        buf.view(np.uint8)[0] ^= 0xFF  # bad magic
    try:
        sparcml.allreduce(comm, MPI.IN_PLACE, buf)
        fail("a malformed stream on rank %d gave no error" % (P - 1))
    except MPI.Exception as e:
        if e.Get_error_class() != MPI.ERR_ARG:
            fail("malformed stream: error class %d, not MPI_ERR_ARG" % e.Get_error_class())
        want = "sparcml: MPI_Allreduce: rank %d: bad magic" % (P - 1)
        if not str(e).startswith(want):
            fail("malformed stream: the exception says %r, not %r..." % (str(e), want))


def no_shim():
    global cases
    cases += 1
    buf = sparcml.from_sorted([1], np.ones(1, np.float32), DIM)
    try:
        out = sparcml.allreduce(comm, buf)
        fail("without the library the tagged call returned %r" % sparcml.header(out))
    except MPI.Exception as e:
        if e.Get_error_class() != MPI.ERR_OP:
            fail("without the library: error class %d, not MPI_ERR_OP" % e.Get_error_class())


if "--expect-no-shim" in sys.argv:
    no_shim()
else:
    formats = set()
    seed = 7
    for dt in (np.float32, np.float64, np.int32, np.int64):
        for density in (0.001, 0.05, 0.6):
            for inplace in (0, 1):
                formats.add(run_case(dt, density, inplace, seed))
                seed += 1
    if formats != {sparcml.SPARSE, sparcml.DENSE}:
        fail("results were not both sparse and dense: %r" % formats)
    for dt in (np.float32, np.int64):
        for density in (0.001, 0.6):
            nonblocking_case(dt, density, seed)
            seed += 1
    malformed_on_last_rank()

total = comm.allreduce(failures, op=MPI.SUM)
if rank == 0:
    print("python mpi_allreduce: P=%d cases=%d failures=%d" % (P, cases, total), flush=True)
sys.exit(1 if total else 0)
