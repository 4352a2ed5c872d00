"""SPARCML_COMPRESS from an unmodified mpi4py program.

The program is what a training loop does: comm.Allreduce(MPI.IN_PLACE, grad)
on one NumPy array reused across steps, no sparcml import.  Run with the
shim preloaded, SPARCML_COMPRESS=topk and a small SPARCML_COMPRESS_MIN_BYTES;
every rank computes the reference itself (every rank's gradient comes from
a seeded generator): acc = eps + g, the k entries of largest |acc| (lower
index first on ties), eps = acc - selection; the buffer's first residual
waits aside at its second call and joins at its third (sparcml(7): the
rhythm of its calls is confirmed then).  Gradients are small integers,
so every comparison is exact.  Checks each step's result against the
reference, the library's residual (sparcml_compress_residual, through
ctypes) against the reference's, and at the end that the results plus the
residuals of all ranks add up to the inputs.  Prints failures=N.
"""
import ctypes
import math
import os
import sys

import numpy as np
from mpi4py import MPI

N, STEPS = 16384, 6


def gradient(step, rank):
    rng = np.random.default_rng(1000 * step + rank)
    g = rng.integers(-7, 8, size=N).astype(np.float32)
    g[rng.random(N) < 0.5] = 0
    return g


def top_k(acc, k):
    nz = np.flatnonzero(acc)
    # Largest magnitude first, then the lower index: lexsort's last key leads.
    order = np.lexsort((nz, -np.abs(acc[nz].astype(np.float64))))
    chosen = np.zeros(N, dtype=bool)
    chosen[nz[order[:k]]] = True
    return chosen


def residual_function():
    lib = ctypes.CDLL(None)
    try:
        f = lib.sparcml_compress_residual
    except AttributeError:
        return None
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p]
    return f


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    density = float(os.environ.get("SPARCML_COMPRESS_DENSITY", "0.01"))
    k = min(N, max(1, math.ceil(density * N)))
    residual_of = residual_function()
    failures = 0
    if residual_of is None:
        print("libsparcml.so is not loaded", file=sys.stderr)
        comm.Abort(2)
    grad = np.empty(N, dtype=np.float32)  # reused across steps
    eps = np.zeros((size, N), dtype=np.float32)
    held = np.zeros((size, N), dtype=np.float32)
    inputs = np.zeros(N, dtype=np.float64)
    results = np.zeros(N, dtype=np.float64)
    mine = np.empty(N, dtype=np.float32)
    for step in range(STEPS):
        grad[:] = gradient(step, rank)
        comm.Allreduce(MPI.IN_PLACE, grad)
        expected = np.zeros(N, dtype=np.float64)
        if step == 1:
            held, eps = eps, np.zeros_like(eps)
        elif step == 2:
            eps, held = eps + held, np.zeros_like(held)
        for r in range(size):
            g = gradient(step, r)
            inputs += g
            acc = eps[r] + g
            chosen = top_k(acc, k)
            expected[chosen] += acc[chosen]
            eps[r] = np.where(chosen, 0, acc)
        results += grad
        if not np.array_equal(grad.astype(np.float64), expected):
            failures += 1
            print(f"rank {rank} step {step}: result differs from the reference", file=sys.stderr)
        rc = residual_of(MPI._handleof(comm), grad.ctypes.data, N, MPI._handleof(MPI.FLOAT), mine.ctypes.data)
        if rc != MPI.SUCCESS or not np.array_equal(mine, eps[rank] + held[rank]):
            failures += 1
            print(f"rank {rank} step {step}: residual differs (rc {rc})", file=sys.stderr)
    kept = np.zeros(N, dtype=np.float64)
    comm.Reduce(mine.astype(np.float64), kept, op=MPI.SUM, root=0)
    if rank == 0 and not np.array_equal(results + kept, inputs):
        failures += 1
        print("results and residuals do not add up to the inputs", file=sys.stderr)
    total = comm.allreduce(failures)
    if rank == 0:
        print(f"steps={STEPS} k={k} failures={total}")


main()
