"""MPI test of python/sparcml/ through mpi4py, run by tests/scripts/python.sh:

    mpirun -n P -x LD_PRELOAD=libsparcml.so python3 mpi_allreduce.py
        sparcml.active() is True; every value type, in place and not,
        sparse and dense results: the sum against a reference each rank
        recomputes from every rank's input (exact for integers, within
        P eps sum|x| for floats), bitwise the same on all ranks; a malformed
        stream on one rank raises MPI.Exception with MPI.ERR_ARG on every
        rank; sparcml.iallreduce (in place and not, two requests
        outstanding at once) gives the blocking results bit for bit (Debian
        12's mpi4py 3.1 has no persistent collectives); a loop that passes
        its recvbuf allocates nothing of the dense size per call
        (tracemalloc), where recvbuf=None does
    mpirun -n P python3 mpi_allreduce.py --expect-no-shim
        without the library sparcml.active() is False, allreduce and
        iallreduce raise RuntimeError naming libsparcml.so and LD_PRELOAD
        on every rank, and the bare tagged MPI call fails (MPI_ERR_OP),
        never a result
    mpirun -n P -x LD_PRELOAD=libsparcml.so -x SPARCML_DISABLE=1 python3 mpi_allreduce.py --expect-disabled
        sparcml.active() is False, the calls raise RuntimeError naming
        SPARCML_DISABLE
Prints "python mpi_allreduce: P=.. cases=.. failures=.." on rank 0."""
import os
import sys
import tracemalloc
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


def stream_bytes(buf):
    """The bytes of the stream in buf (the rest of the buffer, up to the
    end of its last word too, is not the result's: the library writes the
    stream only)."""
    h = sparcml.header(buf)
    nbytes = (sparcml.dense_bytes(h["dim"], h["value_type"]) if h["format"] == sparcml.DENSE
              else sparcml.sparse_bytes(h["dim"], h["value_type"], h["nnz"]))
    return buf.view(np.uint8)[:nbytes]


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
    if not same_everywhere(stream_bytes(out)):
        fail("%s d=%g inplace=%d: result differs between ranks" % (np.dtype(dt), density, inplace))
    return sparcml.header(out)["format"]


def nonblocking_case(dt, density, seed):
    """sparcml.iallreduce gives the blocking call's bytes, with a short
    sendbuf, in place, and with two requests outstanding at once."""
    global cases
    cases += 1
    idx, vals = rank_input(rank, dt, density, seed)
    vt = sparcml.value_type_of(dt)
    send = sparcml.from_sorted(idx, vals, DIM)  # just large enough
    want = sparcml.allreduce(comm, send)
    req1, got1 = sparcml.iallreduce(comm, send)
    got2 = sparcml.from_sorted(idx, vals, DIM, out=sparcml.empty(DIM, vt))
    req2, same = sparcml.iallreduce(comm, MPI.IN_PLACE, got2)
    if not isinstance(req1, MPI.Request) or same is not got2:
        fail("iallreduce returns %r, not (MPI.Request, recvbuf)" % ((type(req1), type(same)),))
    MPI.Request.Waitall([req1, req2])
    n = sparcml.capacity(DIM, vt)
    for what, got in (("sendbuf", got1), ("in place", got2)):
        if got.size != n or not np.array_equal(got, want):
            fail("%s d=%g: iallreduce (%s) differs from allreduce" % (np.dtype(dt), density, what))


def reuse_case():
    """A loop that passes its recvbuf allocates nothing of the dense size
    per call (tracemalloc traces NumPy's buffers); recvbuf=None allocates
    one per call, which the same measurement sees."""
    global cases
    cases += 1
    dim, nnz = 1 << 20, 200
    dense = 8 * sparcml.capacity(dim, sparcml.FLOAT)  # 4 MiB
    rng = np.random.default_rng([99, rank])
    idx = np.sort(rng.choice(dim, nnz, replace=False))
    vals = np.ones(nnz, np.float32)
    recv = sparcml.empty(dim, sparcml.FLOAT)

    def loop(reuse, calls=10):
        for _ in range(calls):
            if reuse:
                sparcml.allreduce(comm, sparcml.from_sorted(idx, vals, dim), recv)
                sparcml.allreduce(comm, MPI.IN_PLACE, sparcml.from_sorted(idx, vals, dim, out=recv))
            else:
                sparcml.allreduce(comm, sparcml.from_sorted(idx, vals, dim))

    loop(True, 2)  # first calls: mpi4py's and the module's one-time set-up
    for reuse in (True, False):
        tracemalloc.start()
        loop(reuse)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        if reuse and peak >= dense // 8:
            fail("20 calls with recvbuf allocated %d bytes at peak (dense size %d)" % (peak, dense))
        if not reuse and peak < dense:
            fail("recvbuf=None: peak %d bytes, the measurement misses the dense buffer (%d)" % (peak, dense))
    gi, gv = sparcml.to_pairs(recv)
    ref = np.zeros(dim, np.float32)
    for r in range(P):
        ref[np.sort(np.random.default_rng([99, r]).choice(dim, nnz, replace=False))] += 1
    if not np.array_equal(gi, np.flatnonzero(ref)) or not np.array_equal(gv, ref[gi]):
        fail("the reused recvbuf holds a wrong sum")


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


def tagged_calls_refused(reason):
    """active() is False; allreduce and iallreduce raise RuntimeError
    matching reason, before any MPI call."""
    global cases
    cases += 1
    if sparcml.active() is not False:
        fail("sparcml.active() is %r, not False" % (sparcml.active(),))
    buf = sparcml.from_sorted([1], np.ones(1, np.float32), DIM)
    for call in (sparcml.allreduce, sparcml.iallreduce):
        try:
            out = call(comm, buf)
            fail("%s returned %r" % (call.__name__, out))
        except MPI.Exception as e:  # a RuntimeError too: caught first
            fail("%s: the MPI's error %r, not the module's" % (call.__name__, str(e)))
        except RuntimeError as e:
            if not all(w in str(e) for w in reason):
                fail("%s: %r does not name %s" % (call.__name__, str(e), " and ".join(reason)))


def no_shim():
    global cases
    tagged_calls_refused(("libsparcml.so", "LD_PRELOAD="))
    # The MPI itself, called without the module, fails (never a result).
    cases += 1
    buf = sparcml.from_sorted([1], np.ones(1, np.float32), DIM, out=sparcml.empty(DIM, sparcml.FLOAT))
    t, count = sparcml.tagged_type(sparcml.FLOAT), buf.size
    try:
        comm.Allreduce(MPI.IN_PLACE, [buf, count, t], op=MPI.SUM)
        fail("without the library the bare tagged call returned %r" % sparcml.header(buf))
    except MPI.Exception as e:
        if e.Get_error_class() != MPI.ERR_OP:
            fail("without the library: error class %d, not MPI_ERR_OP" % e.Get_error_class())


if "--expect-no-shim" in sys.argv:
    no_shim()
elif "--expect-disabled" in sys.argv:
    tagged_calls_refused(("SPARCML_DISABLE=1",))
else:
    cases += 1
    if sparcml.active() is not True:
        fail("sparcml.active() is %r under the preload" % (sparcml.active(),))
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
    reuse_case()
    malformed_on_last_rank()

total = comm.allreduce(failures, op=MPI.SUM)
if rank == 0:
    print("python mpi_allreduce: P=%d cases=%d failures=%d" % (P, cases, total), flush=True)
sys.exit(1 if total else 0)
