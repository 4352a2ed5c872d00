"""sparcml.torch under MPI: the DDP hook and allreduce_sparse.

Run by tests/scripts/torch.sh under mpirun.openmpi at P = 1..4, as
    torch_ddp.py plain        no library preloaded
    torch_ddp.py transparent  libsparcml.so, SPARCML_TRANSPARENT=1, small threshold
    torch_ddp.py compress     libsparcml.so, SPARCML_COMPRESS=topk|cltk, small threshold
Every expected value is derived here from the inputs, which every rank
generates for every rank from seeds; gradients of small integers make
every sum exact, so "equal" means bitwise.  Prints failures=N (the sum
over ranks) and exits non-zero on any failure.
"""
import copy
import faulthandler
import hashlib
import os
import shutil
import sys
import tempfile

import numpy as np
from mpi4py import MPI

import torch
import torch.distributed as dist
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import sparcml  # noqa: E402
import sparcml.torch as spt  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
mode = sys.argv[1]
DEADLINE_S = 240  # a run takes seconds; tests/scripts/common.sh kills at 300
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("rank %d: FAIL %s" % (rank, what), file=sys.stderr, flush=True)


def same_everywhere(arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return len(set(comm.allgather(h.hexdigest()))) == 1


def fail_fast():
    """A rank that stops on an error takes the job down at once, and a
    rank stuck past DEADLINE_S prints every thread's stack and exits:
    either way the job fails with the reason in its output, instead of
    the others waiting for it until the script's timeout."""
    def abort(kind, value, tb):
        sys.__excepthook__(kind, value, tb)
        sys.stderr.flush()
        comm.Abort(1)
    sys.excepthook = abort
    faulthandler.dump_traceback_later(DEADLINE_S, exit=True)


def init_gloo():
    """gloo's rendezvous through a file in a directory rank 0 makes: no
    TCP port that another program on the host may hold."""
    where = comm.bcast(tempfile.mkdtemp(prefix="sparcml-torch-") if rank == 0 else None)
    store = dist.FileStore(os.path.join(where, "store"), size)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=size)
    return where


# --- 1. a real model: the hook against gloo, every rank alike ------------

class Net(nn.Module):
    def __init__(self, sparse):
        super().__init__()
        self.emb = nn.EmbeddingBag(500, 16, mode="sum", sparse=sparse)
        self.l1 = nn.Linear(16, 300)
        self.l2 = nn.Linear(300, 10)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(self.emb(x))))


def grads(model):
    return [(p.grad.to_dense() if p.grad.is_sparse else p.grad).numpy().copy() for p in model.parameters()]


def against_gloo(sparse, state):
    torch.manual_seed(1)
    base = Net(sparse)
    ref = nn.parallel.DistributedDataParallel(copy.deepcopy(base), bucket_cap_mb=0.05)
    hooked = nn.parallel.DistributedDataParallel(copy.deepcopy(base), bucket_cap_mb=0.05)
    hooked.register_comm_hook(state, spt.allreduce_hook)
    opt_r = torch.optim.SGD(ref.parameters(), lr=0.1)
    opt_h = torch.optim.SGD(hooked.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(100 + rank)
    for step in range(4):
        x = torch.randint(0, 500, (8, 5), generator=g)
        y = torch.randint(0, 10, (8,), generator=g)
        for model, opt in ((ref, opt_r), (hooked, opt_h)):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
        gr, gh = grads(ref), grads(hooked)
        close = all(np.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(gr, gh))
        check(close, "%s hook: step %d gradients differ from gloo's" % ("sparse" if sparse else "dense", step))
        check(same_everywhere(gh), "%s hook: step %d gradients differ across ranks" % ("sparse" if sparse else "dense", step))
        layouts = [p.grad.layout for p in hooked.parameters()]
        check(layouts[0] == (torch.sparse_coo if sparse else torch.strided), "embedding gradient layout %s" % layouts[0])
        opt_r.step()
        opt_h.step()
    return hooked


# --- 2. controlled gradients: bits against the exact sum, feedback ----------

class Vectors(nn.Module):
    """Parameters whose gradient is the input given for them (loss = sum of
    w_i * x_i), used in an order that is not their registration order, so
    that DDP's rebuild after the first iteration regroups the buckets."""

    def __init__(self, n, numel):
        super().__init__()
        self.w = nn.ParameterList([nn.Parameter(torch.zeros(numel)) for _ in range(n)])
        self.order = [1, 3, 0, 2, 5, 4][:n]

    def forward(self, xs):
        return sum((self.w[i] * xs[i]).sum() for i in self.order)


def vector_inputs(step, r, n, numel, dense):
    rng = np.random.default_rng(1000 * step + 10 * r + 7)
    out = []
    for _ in range(n):
        v = rng.integers(-7, 8, size=numel).astype(np.float32)
        if not dense:
            v[rng.random(numel) < 0.9] = 0
        out.append(v)
    return out


def controlled(state, steps, dense, expect_compression):
    """DDP over Vectors with the hook; returns per-parameter sums of results
    and of inputs, and the recorded buckets."""
    n, numel = 4, 4096
    dist._DEFAULT_FIRST_BUCKET_BYTES = 2 * numel * 4
    model = nn.parallel.DistributedDataParallel(Vectors(n, numel), bucket_cap_mb=2 * numel * 4 / 2**20)
    seen = {}

    def recording_hook(st, bucket):
        seen[bucket.index()] = [next(i for i, q in enumerate(model.module.w) if q is p) for p in bucket.parameters()]
        seen[("buf", bucket.index())] = bucket.buffer()
        return spt.allreduce_hook(st, bucket)
    model.register_comm_hook(state, recording_hook)
    layouts = []
    results = np.zeros((n, numel))
    inputs = np.zeros((n, numel))
    scale = 1 if not state.average else size
    for step in range(steps):
        for p in model.parameters():
            p.grad = None
        xs = vector_inputs(step, rank, n, numel, dense)
        model([torch.from_numpy(x) for x in xs]).backward()
        layouts.append(tuple(tuple(seen[i]) for i in sorted(k for k in seen if isinstance(k, int))))
        exact = np.zeros((n, numel), dtype=np.float32)
        for r in range(size):
            exact += np.array(vector_inputs(step, r, n, numel, dense))
        inputs += exact
        got = np.array([p.grad.numpy() for p in model.module.w])
        results += got.astype(np.float64) * scale
        if not expect_compression:
            want = exact / np.float32(size) if state.average else exact
            check(np.array_equal(got, want.astype(np.float32)),
                  "%s: step %d gradients differ from the exact sum" % (mode, step))
        check(same_everywhere([got]), "%s: step %d gradients differ across ranks" % (mode, step))
    return model, seen, layouts, results, inputs


def vendor_bits(blocking):
    """Random floats: the hook's bits are the vendor's (mpi4py Allreduce in
    place on a copy of each bucket -- Iallreduce for the non-blocking hook,
    which Open MPI sums in another order -- then the same division),
    before and after DDP's rebuild of its buckets."""
    torch.manual_seed(5)
    net = nn.parallel.DistributedDataParallel(Net(False), bucket_cap_mb=0.05)
    captured = []

    def wrap(st, bucket):
        captured.append((bucket.buffer().numpy().copy(), bucket.parameters()))
        return spt.allreduce_hook(st, bucket)
    net.register_comm_hook(spt.State(blocking=blocking), wrap)
    for step in range(2):
        del captured[:]
        net.zero_grad()
        x = torch.randint(0, 500, (8, 5), generator=torch.Generator().manual_seed(10 * step + rank))
        nn.functional.cross_entropy(net(x), torch.zeros(8, dtype=torch.long)).backward()
        for local, params in captured:
            if blocking:
                comm.Allreduce(MPI.IN_PLACE, local)
            else:
                comm.Iallreduce(MPI.IN_PLACE, local).Wait()
            want = torch.from_numpy(local).div_(size)
            got = torch.cat([p.grad.view(-1) for p in params])
            check(torch.equal(want, got), "vendor bits: step %d, a bucket differs from MPI_Allreduce's" % step)


def residual_sum(state, model, n, numel):
    """Sum over ranks of what the library holds back, per parameter."""
    index_of = {state._ordinal[id(p)]: i for i, p in enumerate(model.module.w)}
    held = np.zeros((n, numel))
    for layout in state._layouts.values():
        if not layout.ptr:
            continue
        eps = spt._residual(layout.comm, layout.ptr, layout.count, layout.dtype)
        check(eps is not None, "no residual for a live bucket")
        if eps is None:
            continue
        off = 0
        for o, k in zip(layout.ordinals, layout.numels):
            held[index_of[o]] += eps[off:off + k]
            off += k
    check(not state._carry, "residuals left unclaimed: %s" % sorted(state._carry))
    # Gathered and summed here: an MPI_SUM of doubles would itself be compressed.
    return sum(comm.allgather(held))


# --- 3. allreduce_sparse -----------------------------------------------------

def sparse_input(r, case):
    """(sparse tensor, its dense value) of rank r for a case."""
    rng = np.random.default_rng(55 + 31 * r + 1000 * case["seed"])
    shape, dtype = case["shape"], case["dtype"]
    sd = case.get("sparse_dim", len(shape))
    nnz = 0 if case.get("empty_rank") in (r, "all") else case["nnz"]
    rows = int(np.prod(shape[:sd]))
    flat = rng.integers(0, max(rows, 1), size=nnz)
    if case.get("duplicates") and nnz > 2:
        flat[1] = flat[0]
        flat[nnz - 1] = flat[0]
    idx = np.array(np.unravel_index(flat, shape[:sd])).reshape(sd, nnz)
    vals = rng.integers(-9, 10, size=(nnz,) + tuple(shape[sd:])).astype(dtype)
    t = torch.sparse_coo_tensor(torch.from_numpy(idx), torch.from_numpy(vals), shape)
    dense = np.zeros(shape, dtype=np.float64)
    for j in range(nnz):
        dense[tuple(idx[:, j])] += vals[j]
    return t, dense


SPARSE_CASES = [
    dict(seed=1, shape=(1000,), dtype=np.float32, nnz=20),
    dict(seed=2, shape=(1000,), dtype=np.float64, nnz=30, duplicates=True),
    dict(seed=3, shape=(300, 8), dtype=np.float32, nnz=12, sparse_dim=1, duplicates=True),  # an embedding gradient
    dict(seed=4, shape=(50, 40), dtype=np.float64, nnz=25),
    dict(seed=5, shape=(300, 8), dtype=np.float32, nnz=12, sparse_dim=1, empty_rank=0),
    dict(seed=6, shape=(1000,), dtype=np.float32, nnz=5, empty_rank="all"),
    dict(seed=7, shape=(200, 64), dtype=np.float32, nnz=190, sparse_dim=1),  # dense enough for a dense result
]


def sparse_tests():
    for case in SPARSE_CASES:
        t, _ = sparse_input(rank, case)
        want = sum(sparse_input(r, case)[1] for r in range(size))
        out = spt.allreduce_sparse(t)
        what = "allreduce_sparse case %d" % case["seed"]
        check(out.layout == torch.sparse_coo and out.is_coalesced(), what + ": not a coalesced sparse COO tensor")
        check(out.shape == t.shape and out.dtype == t.dtype and out.sparse_dim() == t.sparse_dim(),
              what + ": shape, dtype or sparse dims changed")
        check(np.array_equal(out.to_dense().numpy().astype(np.float64), want), what + ": sum differs from the dense sum")
        check(same_everywhere([out._indices().numpy(), out._values().numpy()]), what + ": differs across ranks")
    # A shape that differs on one rank: the same clear error on every rank.
    shape = (100, 4) if rank != size - 1 or size == 1 else (101, 4)
    bad = torch.sparse_coo_tensor(torch.zeros((1, 0), dtype=torch.long), torch.zeros((0, 4)), shape)
    try:
        spt.allreduce_sparse(bad)
        raised = ""
    except ValueError as e:
        raised = str(e)
    if size > 1:
        check("differ across ranks" in raised and "(101, 4)" in raised, "mismatched shapes: %r" % raised)
    else:
        check(raised == "", "P=1 raised %r" % raised)
    # Wrong inputs: one line naming the problem.
    for wrong in (torch.zeros(3), torch.zeros(3, dtype=torch.int32).to_sparse()):
        try:
            spt.allreduce_sparse(wrong)
            check(False, "allreduce_sparse took %s %s" % (wrong.layout, wrong.dtype))
        except TypeError as e:
            check(str(e).startswith("sparcml.torch"), "error %r" % e)


class FakeBucket:
    def __init__(self, t):
        self.t = t

    def buffer(self):
        return self.t

    def parameters(self):
        return []


def device_tests():
    try:
        spt.allreduce_hook(None, FakeBucket(torch.zeros(4, device="meta")))
        check(False, "a device bucket was accepted")
    except TypeError as e:
        check("only CPU tensors" in str(e), "device error %r" % e)
    try:
        spt.allreduce_hook(None, FakeBucket(torch.zeros(4, dtype=torch.float16)))
        check(False, "a float16 bucket was accepted")
    except TypeError as e:
        check("float32 or float64" in str(e), "dtype error %r" % e)


def main():
    fail_fast()
    store_dir = init_gloo()
    dist._DEFAULT_FIRST_BUCKET_BYTES = 40000  # several buckets in small models
    expect_active = mode != "plain"
    check(sparcml.active() == expect_active, "sparcml.active() is %s" % sparcml.active())
    n, numel = 4, 4096
    if mode in ("plain", "transparent"):
        device_tests()
        against_gloo(False, None)
        against_gloo(True, spt.State(blocking=True))
        against_gloo(True, spt.State())
        # Lossless: bits of the exact sum, averaged and not, blocking or not,
        # and (no library) the same bits as the vendor's MPI_Allreduce.
        for state in (spt.State(), spt.State(average=False, blocking=True)):
            model, seen, layouts, _, _ = controlled(state, 3, dense=(mode == "plain"), expect_compression=False)
            check(len(set(layouts[1:])) == 1, "layouts changed after the rebuild: %s" % layouts)
        if mode == "plain":
            vendor_bits(True)
            vendor_bits(False)
        sparse_tests()
        # Training with the hook (here: no library, or transparent) converges
        # and keeps every rank's weights identical.
        torch.manual_seed(3)
        model = nn.parallel.DistributedDataParallel(Net(False))
        model.register_comm_hook(None, spt.allreduce_hook)
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        g = torch.Generator().manual_seed(rank)
        x = torch.randint(0, 500, (64, 5), generator=g)
        y = (x[:, 0] % 10)
        losses = []
        for step in range(30):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            losses.append(float(loss))
        check(losses[-1] < 0.5 * losses[0], "training: loss %.4f -> %.4f" % (losses[0], losses[-1]))
        check(same_everywhere([p.detach().numpy() for p in model.parameters()]), "training: weights differ across ranks")
    else:
        # Compression: nothing lost across iterations and DDP's rebuild.
        state = spt.State(average=False)
        steps = 6
        model, seen, layouts, results, inputs = controlled(state, steps, dense=False, expect_compression=True)
        check(layouts[0] != layouts[1], "the rebuild did not regroup the buckets: %s" % layouts[:2])
        check(len(set(layouts[1:])) == 1, "layouts changed after the rebuild: %s" % layouts)
        held = residual_sum(state, model, n, numel)
        check(np.abs(held).sum() > 0, "nothing held back: compression did not run")
        check(np.array_equal(results + held, inputs),
              "results + residuals != inputs (max gap %g)" % np.abs(results + held - inputs).max())
        check(len(state._layouts) == len(layouts[-1]), "%d layouts kept for %d buckets"
              % (len(state._layouts), len(layouts[-1])))
    total = comm.allreduce(failures)
    if rank == 0:
        print("mode=%s P=%d failures=%d" % (mode, size, total), flush=True)
    dist.destroy_process_group()
    comm.Barrier()
    if rank == 0:
        shutil.rmtree(store_dir, ignore_errors=True)
    faulthandler.cancel_dump_traceback_later()
    return total


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
