"""Data-parallel training with PyTorch DistributedDataParallel on the MPI
(sparcml.torch), on scikit-learn's bundled handwritten digits.

Launch with Open MPI (Debian's mpi4py is built for it); DDP's gloo process
group is set up from mpi4py's rank and size (MASTER_ADDR=127.0.0.1, a free
port chosen by rank 0 and broadcast):

    mpirun.openmpi -n 4 /usr/bin/python3 python/examples/torch_ddp.py --mode=gloo
    mpirun.openmpi -n 4 /usr/bin/python3 python/examples/torch_ddp.py --mode=hook
    mpirun.openmpi -n 4 -x LD_PRELOAD=$PWD/build-openmpi/src/.libs/libsparcml.so \\
        -x SPARCML_TRANSPARENT=1 /usr/bin/python3 python/examples/torch_ddp.py --mode=hook
    mpirun.openmpi -n 4 -x LD_PRELOAD=... -x SPARCML_COMPRESS=cltk \\
        /usr/bin/python3 python/examples/torch_ddp.py --mode=hook
    mpirun.openmpi -n 4 -x LD_PRELOAD=... /usr/bin/python3 python/examples/torch_ddp.py --mode=sparse

Modes: gloo (DDP's own allreduce: torch's default allreduce_hook, which
DDP documents as its behaviour without a hook, wrapped only to time it),
hook (sparcml.torch.allreduce_hook; --blocking for its blocking form),
sparse (the embedding's gradient sparse, nn.EmbeddingBag(sparse=True), its
buckets summed by the same hook through allreduce_sparse), fp16 and
powersgd (PyTorch's fp16_compress_hook and powerSGD_hook, for comparison).

The model (--model=embedding, the default): every digit becomes 176
hashed features (each pixel's value at its place, and every pair of
horizontal and vertical neighbours), summed by an EmbeddingBag of --rows x
--dim (32768 x 16 by default: 0.5M parameters), then a small MLP: most of the parameters are in the table, and a
step touches few of its rows, so the gradient is mostly zeros.
--model=mlp is a dense 64-1024-1024-10 MLP (1.1M parameters).

Prints "summary mode=... P=... params=... test_acc=... loss=... comm_s=...
step_s=... bytes=... identical=..." on rank 0: comm_s is the wall time
during which at least one gradient sum was in flight (max over ranks),
step_s the mean time of a step, bytes the bytes handed to the hook's
collectives per rank (the dense bucket sizes; SPARCML_STATS=1 reports
what the library sent), identical=1 when every rank ends with the same
weights.
"""
import argparse
import hashlib
import os
import socket
import sys
import threading
import time

import numpy as np
from mpi4py import MPI

import torch
import torch.distributed as dist
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sparcml  # noqa: E402
import sparcml.torch  # noqa: E402


def features(x):
    """176 feature ids per digit (x: n x 64 ints 0..16): each pixel's value
    at its place, and every pair of horizontal and vertical neighbours with
    their values in 3 levels."""
    img = x.reshape(-1, 8, 8).astype(np.int64)
    q = img * 3 // 17
    pos = np.arange(64, dtype=np.int64).reshape(8, 8)
    uni = (pos * 17 + img).reshape(len(x), -1)
    hor = 1088 + ((pos[:, :7] * 3 + q[:, :, :7]) * 3 + q[:, :, 1:]).reshape(len(x), -1)
    ver = 1088 + 64 * 9 + ((pos[:7, :] * 3 + q[:, :7, :]) * 3 + q[:, 1:, :]).reshape(len(x), -1)
    return np.concatenate([uni, hor, ver], axis=1)


class EmbeddingNet(nn.Module):
    def __init__(self, rows, dim, sparse):
        super().__init__()
        self.rows = rows
        self.emb = nn.EmbeddingBag(rows, dim, mode="sum", sparse=sparse)
        nn.init.normal_(self.emb.weight, std=0.05)
        self.head = nn.Sequential(nn.Linear(dim, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, ids):
        # A fixed multiplicative hash spreads the feature ids over the table.
        return self.head(self.emb((ids * 2654435761) % self.rows))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))

    def forward(self, x):
        return self.net(x)


class Timer:
    """Wall time during which at least one bucket's sum is in flight."""

    def __init__(self):
        self.seconds, self.busy_until, self.lock = 0.0, 0.0, threading.Lock()

    def wrap(self, hook):
        def timed(state, bucket):
            start = time.perf_counter()

            def done(fut):
                now = time.perf_counter()
                with self.lock:
                    self.seconds += max(0.0, now - max(start, self.busy_until))
                    self.busy_until = max(self.busy_until, now)
                return fut.value()
            return hook(state, bucket).then(done)
        return timed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", default="hook", choices=["gloo", "hook", "sparse", "fp16", "powersgd"])
    ap.add_argument("--model", default="embedding", choices=["embedding", "mlp"])
    ap.add_argument("--rows", type=int, default=1 << 15, help="embedding rows (default 32768)")
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--batch", type=int, default=32, help="samples per rank and step")
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--blocking", action="store_true", help="the hook's blocking form")
    ap.add_argument("--rank-powersgd", type=int, default=4, help="powerSGD_hook's matrix_approximation_rank")
    ap.add_argument("--bucket-mb", type=float, default=25.0, help="DDP's bucket_cap_mb")
    ap.add_argument("--label", default=None, help="the mode's name in the summary")
    ap.add_argument("--master-addr", default="127.0.0.1",
                    help="rank 0's address for gloo (another host: its address there, and GLOO_SOCKET_IFNAME)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    port = None
    if rank == 0:
        with socket.socket() as s:
            s.bind((args.master_addr, 0))
            port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR=args.master_addr, MASTER_PORT=str(comm.bcast(port)))
    dist.init_process_group("gloo", rank=rank, world_size=size)
    torch.set_num_threads(1)

    from sklearn.datasets import load_digits
    data = load_digits()
    order = np.random.default_rng(0).permutation(len(data.target))
    test, train = order[:360], order[360:]
    mine = train[rank::size]
    if args.model == "embedding":
        x_all = torch.from_numpy(features(data.data.astype(np.int64)))
    else:
        x_all = torch.from_numpy((data.data / 16.0).astype(np.float32))
    y_all = torch.from_numpy(data.target.astype(np.int64))

    torch.manual_seed(args.seed)
    if args.model == "embedding":
        net = EmbeddingNet(args.rows, args.dim, sparse=args.mode == "sparse")
    else:
        net = MLP()
    params = sum(p.numel() for p in net.parameters())
    bucket_mb = args.bucket_mb
    if args.mode == "powersgd":
        # powerSGD_hook starts its second and third allreduce from callbacks,
        # which run on whichever gloo thread completed the previous one: with
        # two buckets in flight, ranks can start them in different orders on
        # the one process group and gloo pairs mismatched collectives (a hang
        # or "op.preamble.length <= op.nbytes").  One bucket keeps one chain.
        dist._DEFAULT_FIRST_BUCKET_BYTES = 1 << 40
        bucket_mb = 1 << 20
    model = nn.parallel.DistributedDataParallel(net, bucket_cap_mb=bucket_mb)
    timer = Timer()
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook as psgd
    state = None
    if args.mode == "gloo":
        model.register_comm_hook(None, timer.wrap(default_hooks.allreduce_hook))
    elif args.mode == "fp16":
        model.register_comm_hook(None, timer.wrap(default_hooks.fp16_compress_hook))
    elif args.mode == "powersgd":
        state = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=args.rank_powersgd,
                                   start_powerSGD_iter=2, min_compression_rate=2)
        model.register_comm_hook(state, timer.wrap(psgd.powerSGD_hook))
    else:
        state = sparcml.torch.State(blocking=args.blocking)
        model.register_comm_hook(state, timer.wrap(sparcml.torch.allreduce_hook))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)

    rng = np.random.default_rng(args.seed * 1000 + rank)
    losses = []
    comm.Barrier()
    t0 = time.perf_counter()
    for step in range(args.steps):
        idx = torch.from_numpy(rng.choice(mine, size=args.batch, replace=False))
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x_all[idx]), y_all[idx])
        loss.backward()
        opt.step()
        losses.append(float(loss))
    elapsed = time.perf_counter() - t0
    with torch.no_grad():
        pred = model.module(x_all[torch.from_numpy(test)]).argmax(1)
        acc = float((pred == y_all[torch.from_numpy(test)]).float().mean())
    loss = comm.allreduce(float(np.mean(losses[-20:]))) / size
    comm_s = comm.allreduce(timer.seconds, op=MPI.MAX)
    step_s = comm.allreduce(elapsed, op=MPI.MAX) / args.steps
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.module.parameters())).hexdigest()
    identical = int(len(set(comm.allgather(digest))) == 1)
    sent = state.bytes if isinstance(state, sparcml.torch.State) else None
    if sent is None:  # the dense bucket bytes DDP hands over per step (fp16: half)
        dense = sum(p.numel() * p.element_size() for p in model.module.parameters())
        sent = dense * args.steps // (2 if args.mode == "fp16" else 1)
        if args.mode == "powersgd":
            sent = -1  # low-rank factors after the warm-up: not counted here
    label = args.label or args.mode
    if rank == 0:
        print("summary mode=%s P=%d params=%d library=%d test_acc=%.4f loss=%.4f comm_s=%.3f step_s=%.4f bytes=%d "
              "identical=%d" % (label, size, params, int(sparcml.active()), acc, loss, comm_s, step_s, sent, identical),
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
