"""Data-parallel logistic regression on sparse features, in NumPy + mpi4py:
the gradient of a mini-batch touches only the features its samples hold,
so it is summed across ranks as a sparse stream (--sync=sparse, through
sparcml) or as a dense float32 vector (--sync=dense, plain MPI_Allreduce).
Both compute the same model up to the order of floating-point additions.

    mpirun.openmpi -n 4 -x LD_PRELOAD=build-openmpi/src/.libs/libsparcml.so \\
        /usr/bin/python3 python/examples/topk_sgd.py --sync=sparse

The synthetic data set: N features, each sample holds K draws of them with
a skewed (Zipf-like) popularity, label the sign of a hidden sparse model
plus noise; the same data on every rank (one seed), each rank training on
its own share.  Prints one line per epoch and a summary line
"summary mode=... final_loss=... comm_s=... compute_s=... bytes=..."."""
import argparse
import os
import sys
import time

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sparcml  # noqa: E402


def make_data(n, samples, k, seed):
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, n + 1) ** 0.8
    popularity /= popularity.sum()
    # k draws per sample by inverse CDF (a feature drawn twice counts twice)
    feats = np.minimum(np.searchsorted(np.cumsum(popularity), rng.random((samples, k))), n - 1)
    truth = np.zeros(n)
    hot = rng.choice(n, n // 20, replace=False)
    truth[hot] = rng.normal(0, 1, hot.size)
    margin = truth[feats].sum(axis=1) + rng.normal(0, 0.3, samples)
    return feats.astype(np.int64), np.where(margin >= 0, 1.0, -1.0).astype(np.float32)


def batch_gradient(w, feats, labels, scale):
    """The batch's gradient as (sorted feature indices, float32 values)."""
    margin = labels * w[feats].sum(axis=1)
    coef = (-labels / (1.0 + np.exp(margin))).astype(np.float32) * np.float32(scale)
    idx, inverse = np.unique(feats, return_inverse=True)
    vals = np.zeros(idx.size, np.float32)
    np.add.at(vals, inverse.ravel(), np.repeat(coef, feats.shape[1]))
    return idx, vals


def loss(w, feats, labels, comm):
    m = labels * w[feats].sum(axis=1)
    local = np.array([np.logaddexp(0, -m.astype(np.float64)).sum(), float(labels.size)])
    total = np.zeros(2)
    comm.Allreduce(local, total, op=MPI.SUM)
    return total[0] / total[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sync", choices=("dense", "sparse"), default="sparse")
    ap.add_argument("--features", type=int, default=200000)
    ap.add_argument("--samples", type=int, default=16000)
    ap.add_argument("--per-sample", type=int, default=20, help="features per sample")
    ap.add_argument("--batch", type=int, default=100, help="samples per rank per step")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, P = comm.Get_rank(), comm.Get_size()
    feats, labels = make_data(a.features, a.samples, a.per_sample, a.seed)
    feats, labels = feats[rank::P], labels[rank::P]
    w = np.zeros(a.features, np.float32)
    steps = labels.size // a.batch
    comm_s = compute_s = 0.0
    sent = 0
    scale = 1.0 / (a.batch * P)
    # One stream buffer for the whole run: each step builds its gradient in
    # it and sums in place, so a step allocates nothing of the model's size.
    stream = sparcml.empty(a.features, sparcml.FLOAT) if a.sync == "sparse" else None
    if rank == 0:
        print("# topk_sgd.py: sync=%s P=%d N=%d samples=%d batch/rank=%d steps/epoch=%d"
              % (a.sync, P, a.features, a.samples, a.batch, steps), flush=True)
        print("epoch %3d  loss %.6f" % (0, loss(w, feats, labels, comm)), flush=True)
    else:
        loss(w, feats, labels, comm)
    for epoch in range(1, a.epochs + 1):
        for s in range(steps):
            t0 = time.perf_counter()
            part = slice(s * a.batch, (s + 1) * a.batch)
            idx, vals = batch_gradient(w, feats[part], labels[part], scale)
            t1 = time.perf_counter()
            if a.sync == "dense":
                g = np.zeros(a.features, np.float32)
                g[idx] = vals
                comm.Allreduce(MPI.IN_PLACE, g, op=MPI.SUM)
                sent += g.nbytes
                t2 = time.perf_counter()
                w -= np.float32(a.lr) * g
            else:
                sparcml.from_sorted(idx, vals, a.features, out=stream)
                sparcml.allreduce(comm, MPI.IN_PLACE, stream)
                sent += 8 * sparcml.sparse_capacity(a.features, sparcml.FLOAT, idx.size)
                gi, gv = sparcml.to_pairs(stream)
                t2 = time.perf_counter()
                w[gi] -= np.float32(a.lr) * gv
            compute_s += (t1 - t0) + (time.perf_counter() - t2)
            comm_s += t2 - t1
        cur = loss(w, feats, labels, comm)
        if rank == 0:
            print("epoch %3d  loss %.6f  compute_s %.3f  comm_s %.3f" % (epoch, cur, compute_s, comm_s), flush=True)
    comm_max = comm.allreduce(comm_s, op=MPI.MAX)
    if rank == 0:
        print("summary mode=%s P=%d final_loss=%.6f comm_s=%.4f compute_s=%.4f bytes=%d"
              % (a.sync, P, cur, comm_max, compute_s, sent), flush=True)


if __name__ == "__main__":
    main()
