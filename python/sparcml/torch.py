"""sparcml.torch -- PyTorch DistributedDataParallel on the MPI that
libsparcml.so is preloaded into.

Needs PyTorch (``import sparcml`` does not; this module does) and mpi4py.

``allreduce_hook`` is a DDP communication hook: it sums every gradient
bucket with a non-blocking ``MPI_Iallreduce`` in place on the bucket's own
memory (a NumPy view, no copy) and averages it, so the library's
transparent mode (``SPARCML_TRANSPARENT=1``) and compression
(``SPARCML_COMPRESS=topk|cltk``) apply to a DDP model unchanged; without
the library it is a plain MPI allreduce::

    import sparcml.torch
    model = torch.nn.parallel.DistributedDataParallel(net)   # gloo process group
    model.register_comm_hook(None, sparcml.torch.allreduce_hook)
    # or another communicator / options:
    model.register_comm_hook(sparcml.torch.State(comm=sub, blocking=True), sparcml.torch.allreduce_hook)

Sparse gradients (``nn.Embedding(..., sparse=True)``) reach the hook as
sparse buckets, which it sums through the tagged sparse path
(``allreduce_sparse``).  ``allreduce_sparse(t)`` sums a ``torch.sparse_coo``
tensor on its own, for loops without DDP.

Only CPU tensors: a CUDA tensor raises ``TypeError`` (the library sums host
memory).  docs/python.md, "PyTorch", is the user's guide.
"""

import atexit
import ctypes
import queue
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.distributed as dist

import sparcml

__all__ = ["State", "allreduce_hook", "allreduce_sparse"]

_FLOATS = (torch.float32, torch.float64)


def _check_cpu(t: torch.Tensor, what: str) -> None:
    if t.device.type != "cpu":
        raise TypeError("sparcml.torch: %s is on %s; only CPU tensors are supported (the library sums host "
                        "memory): move it with .cpu() or use NCCL for device tensors" % (what, t.device))


def _check_float(dtype: torch.dtype, what: str) -> None:
    if dtype not in _FLOATS:
        raise TypeError("sparcml.torch: %s has dtype %s; float32 or float64 are supported" % (what, dtype))


def _mpi():
    from mpi4py import MPI
    return MPI


# --- residuals of compressed calls (SPARCML_COMPRESS) ----------------------

_residual_fn: Any = None


def _residual_function() -> Optional[Any]:
    """sparcml_compress_residual of the preloaded library, or None."""
    global _residual_fn
    if _residual_fn is None:
        try:
            f = ctypes.CDLL(None).sparcml_compress_residual
            f.restype = ctypes.c_int
            f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p, ctypes.c_void_p]
            _residual_fn = f
        except (AttributeError, OSError):
            _residual_fn = False
    return _residual_fn or None


def _residual(comm: Any, ptr: int, count: int, dtype: np.dtype) -> Optional[np.ndarray]:
    """This rank's residual of the buffer (comm, ptr, count, dtype), or None
    when the library holds none for it (not loaded, not compressing, a
    buffer below SPARCML_COMPRESS_MIN_BYTES)."""
    f = _residual_function()
    if f is None:
        return None
    MPI = _mpi()
    out = np.zeros(count, dtype=dtype)
    mpitype = MPI.FLOAT if dtype == np.float32 else MPI.DOUBLE
    rc = f(MPI._handleof(comm), ptr, count, MPI._handleof(mpitype), out.ctypes.data)
    return out if rc == MPI.SUCCESS else None


# --- the completion thread -------------------------------------------------

class _Job:
    """One bucket's sum: `run` (in the completion thread) waits for or
    performs it and returns the future's value."""
    __slots__ = ("run", "future", "started", "done")

    def __init__(self, run, future: torch.futures.Future, started: float) -> None:
        self.run, self.future, self.started = run, future, started
        self.done = threading.Event()


class _Completer:
    """A daemon thread that completes the hook's futures in the order the
    buckets were started: it waits for each request (MPI_Wait, which also
    advances the library's pending calls) and sets the future's result,
    or its exception.  At exit it is stopped and joined before the
    interpreter finalizes (and before mpi4py's MPI_Finalize): a thread still
    returning from torch's set_result into a finalizing interpreter would
    be unwound through C++ frames and abort the process."""

    def __init__(self, state: "State") -> None:
        self.state = state
        self.jobs: "queue.Queue[Optional[_Job]]" = queue.Queue()
        self.thread = threading.Thread(target=self._main, name="sparcml-ddp", daemon=True)
        self.thread.start()
        atexit.register(self.stop)

    def submit(self, job: _Job) -> None:
        self.jobs.put(job)

    def stop(self) -> None:
        self.jobs.put(None)
        self.thread.join(timeout=30)

    def _main(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            try:
                value = job.run()
            except BaseException as e:  # the future carries it to DDP's wait
                self.state._account(job.started)
                job.done.set()
                job.future.set_exception(e)
                continue
            self.state._account(job.started)
            job.done.set()
            job.future.set_result(value)


# --- the hook's state ------------------------------------------------------

class _Layout:
    """A bucket layout (its parameters, in order) and the communicator its
    sums run on: a duplicate of the state's, one per layout, so the
    library's residual of a bucket (known by communicator, address, count
    and datatype) can never reach another layout's bucket."""
    __slots__ = ("comm", "ordinals", "numels", "dtype", "ptr", "count", "last")

    def __init__(self, comm: Any, ordinals: Tuple[int, ...], numels: Tuple[int, ...], dtype: np.dtype) -> None:
        self.comm, self.ordinals, self.numels, self.dtype = comm, ordinals, numels, dtype
        self.ptr, self.count, self.last = 0, 0, None


class State:
    """Options of allreduce_hook (pass as the first argument of
    ``register_comm_hook``; ``None`` means ``State()``).

    comm      the communicator to sum over (default MPI.COMM_WORLD; the
              ranks of DDP's process group, in the same order).  The hook
              runs its sums on duplicates of it (one per bucket layout),
              never on comm itself.
    average   divide the sum by comm's size (DDP's convention), default True.
    blocking  sum in the hook (MPI_Allreduce) and return a completed future,
              instead of starting MPI_Iallreduce and completing the future
              from a thread when it ends (overlapping the rest of the
              backward pass).  The non-blocking form needs MPI initialised
              with MPI_THREAD_MULTIPLE (mpi4py's default); below that the
              hook runs blocking and ``blocking`` reads True.

    After the backward pass: ``calls`` (buckets summed), ``bytes`` (bytes
    handed to the MPI, this rank), ``comm_seconds`` (wall time during which
    at least one of the hook's sums was in flight)."""

    def __init__(self, comm: Any = None, average: bool = True, blocking: bool = False) -> None:
        MPI = _mpi()
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.average = bool(average)
        self.blocking = bool(blocking) or MPI.Query_thread() < MPI.THREAD_MULTIPLE
        self.calls = 0
        self.bytes = 0
        self.comm_seconds = 0.0
        self._busy_until = 0.0
        self._lock = threading.Lock()
        self._ordinal: Dict[int, int] = {}        # id(parameter) -> its number, in order of first sight
        self._layouts: Dict[Tuple[int, ...], _Layout] = {}
        self._owner: Dict[int, Tuple[int, ...]] = {}  # parameter number -> its layout's key
        self._carry: Dict[int, np.ndarray] = {}   # parameter number -> residual to add at its next sum
        self._completer: Optional[_Completer] = None

    def _account(self, started: float) -> None:
        """Add the part of [started, now] not yet counted to comm_seconds."""
        now = time.perf_counter()
        with self._lock:
            self.comm_seconds += max(0.0, now - max(started, self._busy_until))
            self._busy_until = max(self._busy_until, now)

    def _layout_of(self, bucket: Any, dtype: np.dtype) -> "_Layout":
        """The layout of the bucket, made (with its communicator) at its
        first sight.  A parameter that moves to a new layout (DDP rebuilds
        its buckets after the first iteration) ends its old layout: the
        old layout's residuals are fetched, per parameter, to be added to
        the parameters' next sums, and its communicator is freed (with the
        library's memory of it).  Every rank sees the same layouts in the
        same order, so the collective dup and free match."""
        params = bucket.parameters()
        ordinals = []
        for p in params:
            if id(p) not in self._ordinal:
                self._ordinal[id(p)] = len(self._ordinal)
            ordinals.append(self._ordinal[id(p)])
        key = tuple(ordinals) + (-1 if dtype == np.float32 else -2,)
        layout = self._layouts.get(key)
        if layout is not None:
            return layout
        for old_key in sorted({self._owner[o] for o in ordinals if o in self._owner},
                              key=lambda k: list(self._layouts).index(k)):
            self._retire(self._layouts.pop(old_key))
        layout = _Layout(self.comm.Dup(), tuple(ordinals), tuple(p.numel() for p in params), dtype)
        self._layouts[key] = layout
        for o in ordinals:
            self._owner[o] = key
        return layout

    def _retire(self, layout: _Layout) -> None:
        if layout.last is not None:
            layout.last.done.wait()
        self._save_residual(layout)
        for o in layout.ordinals:
            self._owner.pop(o, None)
        layout.comm.Free()

    def _save_residual(self, layout: _Layout) -> None:
        """Keep the library's residual of the layout's last buffer, per
        parameter, for the parameters' next sums."""
        if not layout.ptr:
            return
        eps = _residual(layout.comm, layout.ptr, layout.count, layout.dtype)
        if eps is None:
            return
        offset = 0
        for o, n in zip(layout.ordinals, layout.numels):
            part = eps[offset:offset + n]
            offset += n
            if part.any():
                self._carry[o] = self._carry[o] + part if o in self._carry else part.copy()

    def _add_carry(self, layout: _Layout, flat: np.ndarray) -> None:
        offset = 0
        for o, n in zip(layout.ordinals, layout.numels):
            part = self._carry.pop(o, None)
            if part is not None and part.size == n:
                flat[offset:offset + n] += part
            offset += n

    def _completer_thread(self) -> _Completer:
        if self._completer is None:
            self._completer = _Completer(self)
        return self._completer


_default_state: Optional[State] = None


def _state(state: Optional[State]) -> State:
    global _default_state
    if state is not None:
        if not isinstance(state, State):
            raise TypeError("sparcml.torch.allreduce_hook: the state must be a sparcml.torch.State or None, "
                            "not %s" % type(state).__name__)
        return state
    if _default_state is None:
        _default_state = State()
    return _default_state


def _completed(value: Any) -> torch.futures.Future:
    fut: torch.futures.Future = torch.futures.Future()
    fut.set_result(value)
    return fut


def allreduce_hook(state: Optional[State], bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP communication hook: the bucket summed over the state's
    communicator (averaged unless State(average=False)), in place.

    ``model.register_comm_hook(None, sparcml.torch.allreduce_hook)`` sums
    over MPI_COMM_WORLD.  Dense buckets (float32, float64) go to
    MPI_Iallreduce(MPI_IN_PLACE) on the bucket's memory; sparse buckets
    (sparse embedding gradients) to allreduce_sparse.  Returns a future
    completed when the sum is."""
    st = _state(state)
    buf = bucket.buffer()
    _check_cpu(buf, "the gradient bucket")
    _check_float(buf.dtype, "the gradient bucket")
    st.calls += 1
    MPI = _mpi()
    if buf.is_sparse:
        layout = st._layout_of(bucket, np.dtype(np.float32 if buf.dtype == torch.float32 else np.float64))
        st.bytes += buf._values().numel() * (buf.element_size() + 8)

        def run_sparse() -> torch.Tensor:
            out = allreduce_sparse(buf, layout.comm)
            return out / layout.comm.Get_size() if st.average else out
        started = time.perf_counter()
        if st.blocking:
            out = run_sparse()
            st._account(started)
            return _completed(out)
        job = _Job(run_sparse, torch.futures.Future(), started)
        layout.last = job
        st._completer_thread().submit(job)
        return job.future

    contiguous = buf.is_contiguous()
    work = buf if contiguous else buf.contiguous()
    flat = work.view(-1).numpy()   # shares the bucket's memory
    layout = st._layout_of(bucket, flat.dtype)
    ptr = flat.ctypes.data
    if layout.ptr and layout.ptr != ptr:
        # The same layout in new memory: its residual moves with it.
        st._save_residual(layout)
    layout.ptr, layout.count = ptr, flat.size
    if st._carry:
        st._add_carry(layout, flat)
    st.bytes += flat.nbytes
    size = layout.comm.Get_size()

    def finish() -> torch.Tensor:
        if not contiguous:
            buf.copy_(work.view_as(buf))
        if st.average:
            buf.div_(size)
        return buf
    started = time.perf_counter()
    if st.blocking:
        layout.comm.Allreduce(MPI.IN_PLACE, flat, op=MPI.SUM)
        st._account(started)
        return _completed(finish())
    req = layout.comm.Iallreduce(MPI.IN_PLACE, flat, op=MPI.SUM)

    def run() -> torch.Tensor:
        req.Wait()
        return finish()
    job = _Job(run, torch.futures.Future(), started)
    layout.last = job
    st._completer_thread().submit(job)
    return job.future


# --- sparse tensors --------------------------------------------------------

_MAX_NDIM = 8


def _describe(t: torch.Tensor) -> np.ndarray:
    """A fixed-size description of t for the shape agreement: ndim, the
    sparse dims, the value type, then the shape (zero padded)."""
    d = np.zeros(3 + _MAX_NDIM, dtype=np.int64)
    d[0], d[1], d[2] = t.dim(), t.sparse_dim(), 1 if t.dtype == torch.float32 else 2
    d[3:3 + t.dim()] = list(t.shape)
    return d


def _shape_text(d: np.ndarray) -> str:
    return "(%s) %s" % (", ".join(str(int(x)) for x in d[3:3 + int(d[0])]),
                        "float32" if d[2] == 1 else "float64")


def _agree(comm: Any, t: torch.Tensor) -> None:
    """Every rank holds a tensor of the same shape, sparse dims and value
    type, or every rank raises ValueError naming them."""
    MPI = _mpi()
    mine = _describe(t)
    lo, hi = np.empty_like(mine), np.empty_like(mine)
    comm.Allreduce(mine, lo, op=MPI.MIN)
    comm.Allreduce(mine, hi, op=MPI.MAX)
    if not np.array_equal(lo, hi):
        raise ValueError("sparcml.torch.allreduce_sparse: the tensors differ across ranks (this rank: %s with %d "
                         "sparse dims; another: %s): every rank must pass the same shape and dtype"
                         % (_shape_text(mine), int(mine[1]), _shape_text(hi if not np.array_equal(mine, hi) else lo)))


def _flat_pairs(t: torch.Tensor) -> Tuple[np.ndarray, np.ndarray]:
    """(flat indices, values) of the coalesced t over the flattened index
    space of its whole shape, sorted and unique."""
    c = t.coalesce()
    idx = c._indices().numpy().astype(np.int64, copy=False)
    vals = c._values().numpy()
    shape = list(t.shape)
    sd = t.sparse_dim()
    row = np.zeros(idx.shape[1], dtype=np.int64)
    for d in range(sd):
        row = row * shape[d] + idx[d]
    inner = int(np.prod(shape[sd:], dtype=np.int64)) if sd < len(shape) else 1
    if inner == 1:
        return row, vals.reshape(-1)
    flat = (row[:, None] * inner + np.arange(inner, dtype=np.int64)[None, :]).reshape(-1)
    vals = vals.reshape(-1)
    keep = vals != 0  # a hybrid tensor's rows carry zeros: they need no place in the stream
    keep |= np.signbit(vals) & (vals == 0)
    return flat[keep], vals[keep]


def _from_flat(idx: np.ndarray, vals: np.ndarray, like: torch.Tensor) -> torch.Tensor:
    """A coalesced sparse COO tensor of like's shape and sparse dims from
    sorted unique flat indices."""
    shape = list(like.shape)
    sd = like.sparse_dim()
    inner = int(np.prod(shape[sd:], dtype=np.int64)) if sd < len(shape) else 1
    vals_t = torch.from_numpy(np.ascontiguousarray(vals))
    if inner == 1:
        rows, values = idx, vals_t
    else:
        rows, inverse = np.unique(idx // inner, return_inverse=True)
        dense = np.zeros((rows.size, inner), dtype=vals.dtype)
        dense[inverse, idx % inner] = vals
        values = torch.from_numpy(dense).reshape([rows.size] + shape[sd:])
    coords = np.empty((sd, rows.size), dtype=np.int64)
    r = rows.copy()
    for d in reversed(range(sd)):
        coords[d] = r % shape[d]
        r //= shape[d]
    out = torch.sparse_coo_tensor(torch.from_numpy(coords), values, shape, dtype=like.dtype)
    return out._coalesced_(True)


def _allgather_sum(comm: Any, idx: np.ndarray, vals: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Without the library: every rank's pairs gathered, summed in rank
    order (the same code on the same data: identical on every rank)."""
    counts = np.array(comm.allgather(int(idx.size)), dtype=np.int64)
    total = int(counts.sum())
    all_idx = np.empty(total, dtype=np.int64)
    all_vals = np.empty(total, dtype=vals.dtype)
    comm.Allgatherv(idx, [all_idx, counts])
    comm.Allgatherv(np.ascontiguousarray(vals), [all_vals, counts])
    order = np.argsort(all_idx, kind="stable")
    uniq, first, inverse = np.unique(all_idx[order], return_index=True, return_inverse=True)
    ordered = all_vals[order]
    summed = ordered[first].copy()
    rest = np.ones(total, dtype=bool)
    rest[first] = False
    np.add.at(summed, inverse[rest], ordered[rest])
    return uniq, summed


def allreduce_sparse(t: torch.Tensor, comm: Any = None) -> torch.Tensor:
    """The sum over comm (default MPI.COMM_WORLD) of a sparse COO tensor:
    a new coalesced sparse COO tensor of t's shape, sparse dims and dtype,
    bitwise identical on every rank.

    t: torch.sparse_coo, CPU, float32 or float64 values, coalesced or not
    (repeated indices are summed), any shape (an embedding gradient
    (num_embeddings, dim) with sparse rows included), empty allowed.  Its
    entries go into one sparse stream over the flattened index space
    (prod(shape) <= 2^56) and are summed through the library's tagged
    sparse path.  Every rank must pass the same shape and dtype: otherwise
    every rank raises ValueError naming them.

    Without the library (sparcml.active() False) the sum is an allgather of
    every rank's entries, summed locally in rank order: the same values up
    to floating-point rounding, identical on every rank, slower."""
    MPI = _mpi()
    if comm is None:
        comm = MPI.COMM_WORLD
    if not isinstance(t, torch.Tensor) or t.layout != torch.sparse_coo:
        raise TypeError("sparcml.torch.allreduce_sparse: expected a torch.sparse_coo tensor, got %s"
                        % (t.layout if isinstance(t, torch.Tensor) else type(t).__name__))
    _check_cpu(t, "the tensor")
    _check_float(t.dtype, "the tensor")
    if t.dim() > _MAX_NDIM or t.dim() == 0:
        raise ValueError("sparcml.torch.allreduce_sparse: %d dimensions; 1 to %d are supported"
                         % (t.dim(), _MAX_NDIM))
    dim = int(np.prod(list(t.shape), dtype=np.int64))
    if dim > sparcml.MAX_DIM:
        raise ValueError("sparcml.torch.allreduce_sparse: %d entries in all, more than a stream holds (2^56)" % dim)
    _agree(comm, t)
    idx, vals = _flat_pairs(t.detach())
    if not sparcml.active():
        idx, vals = _allgather_sum(comm, idx, vals)
        return _from_flat(idx, vals, t)
    vt = sparcml.FLOAT if t.dtype == torch.float32 else sparcml.DOUBLE
    buf = sparcml.empty(dim, vt)
    sparcml.from_sorted(idx, vals, dim, vt, out=buf)
    sparcml.allreduce(comm, MPI.IN_PLACE, buf)
    ridx, rvals = sparcml.to_pairs(buf)
    if sparcml.header(buf)["format"] == sparcml.DENSE:
        nz = np.flatnonzero(rvals.view("=u%d" % rvals.dtype.itemsize))
        ridx, rvals = ridx[nz], rvals[nz]
    return _from_flat(ridx, rvals.copy(), t)
