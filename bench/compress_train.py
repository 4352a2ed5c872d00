"""A PyTorch training loop that averages its gradient with mpi4py's
MPI_Allreduce, as a data-parallel program without DDP does, run twice side
by side in one job: replica A's allreduce goes through the interposed
MPI_Allreduce (the library, compressed where SPARCML_COMPRESS says so),
replica B's straight to the MPI library (PMPI_Allreduce), step by step in
alternating order, so both see the same machine.

    mpirun.openmpi -n 4 --allow-run-as-root --oversubscribe \\
        -x LD_PRELOAD=build-openmpi/src/.libs/libsparcml.so -x SPARCML_COMPRESS=topk \\
        /usr/bin/python3 bench/compress_train.py --steps 300

The model: an MLP (784 -> 1024 -> 363 -> 10, 1,179,555 parameters: a
4.5 MiB float32 gradient) on random batches of 64 (the same on every rank
and replica; a step's compute is the same for both).  Its gradients are
views into one flat buffer that the allreduce sums in place, the same
buffer every step (as DDP's bucket), then divided by P for plain SGD.
Each rank times every allreduce (after a barrier, so no rank's compute
lags into it); rank 0 prints, per replica, the largest over ranks of the
summed allreduce times, the median step's slowest rank, and the final
loss:
    replica=library comm_s=... median_ms=... loss=...
    replica=vendor comm_s=... median_ms=... loss=...
    ratio library/vendor comm_s=... median=..."""
import argparse
import ctypes
import time

import numpy as np
import torch
from mpi4py import MPI


def model():
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 363),
                               torch.nn.ReLU(), torch.nn.Linear(363, 10))


class Replica:
    """A model whose gradients live in one flat buffer, and how it sums it."""

    def __init__(self, allreduce):
        self.net = model()
        params = list(self.net.parameters())
        self.flat = torch.zeros(sum(p.numel() for p in params))
        at = 0
        for p in params:
            p.grad = self.flat[at:at + p.numel()].view_as(p)
            at += p.numel()
        self.allreduce = allreduce
        self.times = []
        self.loss = 0.0

    def step(self, x, y, comm, lr=0.05):
        self.flat.zero_()
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        loss.backward()
        self.loss = float(loss)
        buf = self.flat.numpy()
        comm.Barrier()
        t = time.perf_counter()
        self.allreduce(buf)
        self.times.append(time.perf_counter() - t)
        with torch.no_grad():
            self.flat.div_(comm.Get_size())
            for p in self.net.parameters():
                p.sub_(lr * p.grad)


def allreduce_via(name, comm):
    """In-place float sum through the C symbol `name` (MPI_Allreduce: the
    library where preloaded; PMPI_Allreduce: the MPI library)."""
    fn = getattr(ctypes.CDLL(None), name)
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                   ctypes.c_void_p]
    fn.restype = ctypes.c_int
    handles = [ctypes.c_void_p(MPI._handleof(h)) for h in (MPI.FLOAT, MPI.SUM, comm)]
    in_place = ctypes.c_void_p(int(MPI.IN_PLACE))

    def call(buf):
        rc = fn(in_place, buf.ctypes.data, buf.size, *handles)
        if rc != 0:
            raise RuntimeError(f"{name} returned {rc}")
    return call


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(1)  # P ranks share the cores
    comm = MPI.COMM_WORLD
    replicas = {"library": Replica(allreduce_via("MPI_Allreduce", comm)),
                "vendor": Replica(allreduce_via("PMPI_Allreduce", comm))}
    gen = torch.Generator().manual_seed(7)
    order = list(replicas.values())
    for step in range(args.steps):
        x = torch.randn(args.batch, 784, generator=gen)
        y = torch.randint(0, 10, (args.batch,), generator=gen)
        for r in (order if step % 2 == 0 else order[::-1]):
            r.step(x, y, comm)
    out = {}
    for name, r in replicas.items():
        mine = np.array(r.times)
        slowest = np.empty_like(mine)
        comm.Reduce(mine, slowest, op=MPI.MAX, root=0)
        total = comm.reduce(float(mine.sum()), op=MPI.MAX, root=0)
        if comm.Get_rank() == 0:
            out[name] = (total, float(np.median(slowest)) * 1e3)
            print(f"replica={name} comm_s={total:.3f} median_ms={out[name][1]:.3f} loss={r.loss:.4f}")
    if comm.Get_rank() == 0:
        print(f"ratio library/vendor comm_s={out['library'][0] / out['vendor'][0]:.3f} "
              f"median={out['library'][1] / out['vendor'][1]:.3f}")


if __name__ == "__main__":
    main()
