"""sparcml -- sparse allreduce for mpi4py + NumPy programs.

Pure Python, nothing compiled: this package mirrors ``include/sparcml.h``.
It builds and reads *sparse streams* (the wire format of sparcml-stream(7))
in NumPy buffers and creates the *tagged datatype* with plain
``MPI.Datatype.Set_name``.  The speed comes from ``libsparcml.so``
preloaded into the Python processes (built for the MPI mpi4py uses; on
Debian that is Open MPI)::

    mpirun.openmpi -n 4 -x LD_PRELOAD=/path/to/build-openmpi/src/.libs/libsparcml.so \\
        /usr/bin/python3 app.py

``active()`` tells whether the library is there.  Without it ``allreduce``
and ``iallreduce`` raise ``RuntimeError`` before calling the MPI (which
would fail with ``MPI_ERR_OP``: ``MPI_SUM`` is undefined on the derived
datatype); they never compute garbage.

A stream lives in a ``numpy.ndarray`` of ``uint64`` words (8-byte aligned),
``capacity(dim, vt)`` words long when it must hold any result::

    import numpy as np, sparcml
    from mpi4py import MPI
    buf = sparcml.from_pairs([3, 17], np.array([1.5, 2.0], np.float32), dim=1000)
    out = sparcml.allreduce(MPI.COMM_WORLD, buf)
    dense = sparcml.to_dense(out)

Errors are exceptions naming the problem: ``ValueError`` for bad values
(an index >= dim, unsorted indices, a buffer too small, a malformed
stream), ``TypeError`` for wrong types (an unsupported dtype, a buffer that
is not a uint64 array).
"""

from __future__ import annotations

import ctypes
import os
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple, Union

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:  # mpi4py is imported when a call needs it
    from mpi4py import MPI

__version__ = "0.1.0"  # configure.ac's AC_INIT version (checked by tests/python/test_sparcml.py)

__all__ = ["__version__", "FLOAT", "DOUBLE", "INT32", "INT64", "SPARSE", "DENSE",
           "active", "value_type_of", "dtype_of", "index_width", "sparse_bytes", "dense_bytes",
           "prefers_dense", "capacity", "sparse_capacity", "empty", "from_sorted", "from_pairs",
           "from_dense", "header", "to_pairs", "to_dense", "tagged_type", "allreduce", "iallreduce"]

Words = npt.NDArray[np.uint64]
"""A stream buffer: a contiguous 1-D uint64 array."""

FLOAT, DOUBLE, INT32, INT64 = 1, 2, 3, 4
SPARSE, DENSE = 0, 1
MAGIC = 0x4D435053  # "SPCM" in little-endian memory order
VERSION = 1
HEADER_BYTES = 32
MAX_DIM = 1 << 56
NAME_PREFIX = "sparcml:v1:"

_DTYPES = {FLOAT: np.dtype(np.float32), DOUBLE: np.dtype(np.float64),
           INT32: np.dtype(np.int32), INT64: np.dtype(np.int64)}
_NAMES = {FLOAT: "float", DOUBLE: "double", INT32: "int32", INT64: "int64"}
# The header in native byte order, as the C struct sparcml_header.
_HEADER = np.dtype([("magic", "=u4"), ("version", "u1"), ("value_type", "u1"),
                    ("index_width", "u1"), ("format", "u1"), ("dim", "=u8"),
                    ("nnz", "=u8"), ("reserved", "=u8")])
assert _HEADER.itemsize == HEADER_BYTES


def value_type_of(dtype: npt.DTypeLike) -> int:
    """The value type (FLOAT, DOUBLE, INT32, INT64) of a NumPy dtype."""
    dt = np.dtype(dtype)
    for vt, d in _DTYPES.items():
        if d == dt:
            return vt
    raise TypeError("sparcml: unsupported dtype %s (float32, float64, int32 or int64)" % dt)


def dtype_of(vt: int) -> np.dtype:
    """The NumPy dtype of a value type."""
    if vt not in _DTYPES:
        raise ValueError("sparcml: unknown value type %r (FLOAT, DOUBLE, INT32 or INT64)" % (vt,))
    return _DTYPES[vt]


def _check_dim(dim: int, vt: int) -> int:
    dtype_of(vt)
    if not 0 <= int(dim) <= MAX_DIM:
        raise ValueError("sparcml: dim %d out of range [0, 2^56]" % dim)
    return int(dim)


def index_width(dim: int) -> int:
    """4 when dim <= 2^32, else 8 (no other width is valid)."""
    return 4 if dim <= (1 << 32) else 8


def _round8(n: int) -> int:
    return (n + 7) & ~7


def sparse_bytes(dim: int, vt: int, nnz: int) -> int:
    """Bytes of a sparse stream of nnz entries."""
    return HEADER_BYTES + _round8(nnz * index_width(dim)) + nnz * dtype_of(vt).itemsize


def dense_bytes(dim: int, vt: int) -> int:
    """Bytes of a dense stream."""
    return HEADER_BYTES + dim * dtype_of(vt).itemsize


def prefers_dense(dim: int, vt: int, nnz: int) -> bool:
    """The library's size rule: dense when nnz (iw + vs) >= dim vs."""
    vs = dtype_of(vt).itemsize
    return nnz * (index_width(dim) + vs) >= dim * vs


def capacity(dim: int, vt: int) -> int:
    """Words (8 bytes) that always suffice for a stream of dimension dim."""
    return (dense_bytes(_check_dim(dim, vt), vt) + 8 + 7) // 8


def sparse_capacity(dim: int, vt: int, nnz: int) -> int:
    """Words that hold a sparse stream of nnz entries."""
    return (sparse_bytes(_check_dim(dim, vt), vt, nnz) + 7) // 8


def empty(dim: int, vt: int) -> Words:
    """A zeroed uint64 buffer of capacity(dim, vt) words."""
    return np.zeros(capacity(dim, vt), dtype=np.uint64)


def _words(buf: Any, what: str) -> Words:
    if not isinstance(buf, np.ndarray) or buf.dtype != np.uint64 or buf.ndim != 1:
        raise TypeError("sparcml: %s must be a 1-D numpy uint64 array (sparcml.empty())" % what)
    if not buf.flags.c_contiguous:
        raise TypeError("sparcml: %s must be contiguous" % what)
    return buf


def _out_buffer(out: Optional[Words], words: int) -> Words:
    if out is None:
        return np.zeros(words, dtype=np.uint64)
    out = _words(out, "out")
    if out.size < words:
        raise ValueError("sparcml: buffer of %d words too small, need %d" % (out.size, words))
    return out


def _write_header(buf: Words, dim: int, vt: int, nnz: int, fmt: int) -> None:
    h = np.zeros(1, dtype=_HEADER)
    h["magic"], h["version"], h["value_type"] = MAGIC, VERSION, vt
    h["index_width"], h["format"], h["dim"] = index_width(dim), fmt, dim
    h["nnz"] = dim if fmt == DENSE else nnz
    buf.view(np.uint8)[:HEADER_BYTES] = h.view(np.uint8)


def _values(values: npt.ArrayLike, vt: Optional[int]) -> Tuple[np.ndarray, int]:
    values = np.asarray(values)
    if vt is None:
        vt = value_type_of(values.dtype)
    elif values.dtype != dtype_of(vt):
        raise TypeError("sparcml: values are %s, the value type needs %s" % (values.dtype, dtype_of(vt)))
    return values.ravel(), vt


def from_sorted(indices: npt.ArrayLike, values: npt.ArrayLike, dim: int,
                vt: Optional[int] = None, out: Optional[Words] = None) -> Words:
    """Stream of strictly increasing indices (each < dim) and their values.

    Sparse while that is smaller, else dense with zeros elsewhere (the
    library's own rule), so capacity(dim, vt) words always suffice.  The
    value type is the values' dtype unless vt is given.  Returns the buffer:
    out, or a new one just large enough."""
    values, vt = _values(values, vt)
    dim = _check_dim(dim, vt)
    idx = np.asarray(indices, dtype=np.int64).ravel()
    if idx.size != values.size:
        raise ValueError("sparcml: %d indices but %d values" % (idx.size, values.size))
    if idx.size and (idx.min() < 0 or idx.max() >= dim):
        bad = idx[(idx < 0) | (idx >= dim)][0]
        raise ValueError("sparcml: index %d out of range [0, %d)" % (bad, dim))
    if idx.size > 1 and np.any(idx[1:] <= idx[:-1]):
        i = int(np.argmax(idx[1:] <= idx[:-1])) + 1
        raise ValueError("sparcml: indices not strictly increasing at entry %d (%d after %d)"
                         % (i, idx[i], idx[i - 1]))
    nnz = idx.size
    dense = prefers_dense(dim, vt, nnz)
    nbytes = dense_bytes(dim, vt) if dense else sparse_bytes(dim, vt, nnz)
    buf = _out_buffer(out, (nbytes + 7) // 8)
    raw = buf.view(np.uint8)
    vs = dtype_of(vt).itemsize
    if dense:
        _write_header(buf, dim, vt, nnz, DENSE)
        dense = raw[HEADER_BYTES:HEADER_BYTES + dim * vs].view(dtype_of(vt))
        dense[:] = 0
        dense[idx] = values
        return buf
    iw = index_width(dim)
    _write_header(buf, dim, vt, nnz, SPARSE)
    ibytes = _round8(nnz * iw)
    raw[HEADER_BYTES:HEADER_BYTES + ibytes] = 0
    raw[HEADER_BYTES:HEADER_BYTES + nnz * iw].view("=u%d" % iw)[:] = idx
    start = HEADER_BYTES + ibytes
    raw[start:start + nnz * vs].view(dtype_of(vt))[:] = values
    return buf


def from_pairs(indices: npt.ArrayLike, values: npt.ArrayLike, dim: int,
               vt: Optional[int] = None, out: Optional[Words] = None) -> Words:
    """Stream of (index, value) pairs in any order: sorted, the values of a
    repeated index summed in their input order; sparse or dense as
    from_sorted."""
    values, vt = _values(values, vt)
    idx = np.asarray(indices, dtype=np.int64).ravel()
    if idx.size != values.size:
        raise ValueError("sparcml: %d indices but %d values" % (idx.size, values.size))
    order = np.argsort(idx, kind="stable")
    ordered = values[order]
    uniq, first, inverse = np.unique(idx[order], return_index=True, return_inverse=True)
    # Each index starts from its first value, not from 0.0 (0.0 + -0.0 is
    # +0.0), and adds the others in input order (add.at is unbuffered), as
    # the C builder does; IEEE sums (inf - inf = NaN) raise no warning.
    summed = ordered[first]
    rest = np.ones(idx.size, dtype=bool)
    rest[first] = False
    with np.errstate(invalid="ignore", over="ignore"):
        np.add.at(summed, inverse[rest], ordered[rest])
    return from_sorted(uniq, summed, dim, vt, out)


def from_dense(array: npt.ArrayLike, out: Optional[Words] = None) -> Words:
    """Stream of a dense NumPy vector: its bitwise non-zero entries (-0.0 is
    kept, so the round trip is exact), sparse or dense as from_sorted."""
    array = np.ascontiguousarray(array).ravel()
    vt = value_type_of(array.dtype)
    nz = np.flatnonzero(array.view("=u%d" % array.dtype.itemsize))
    return from_sorted(nz, array[nz], array.size, vt, out)


def header(buf: Words) -> Dict[str, int]:
    """The header of a stream as a dict (magic, version, value_type,
    index_width, format, dim, nnz), checked for consistency."""
    buf = _words(buf, "buffer")
    if buf.size * 8 < HEADER_BYTES:
        raise ValueError("sparcml: buffer of %d words holds no header" % buf.size)
    h = buf.view(np.uint8)[:HEADER_BYTES].view(_HEADER)[0]
    out = {k: int(h[k]) for k in _HEADER.names if k != "reserved"}
    if out["magic"] != MAGIC or out["version"] != VERSION or out["value_type"] not in _DTYPES:
        raise ValueError("sparcml: not a sparcml v1 stream (magic 0x%x, version %d, value type %d)"
                         % (out["magic"], out["version"], out["value_type"]))
    dim, nnz = out["dim"], out["nnz"]
    if (out["index_width"] != index_width(dim) or out["format"] not in (SPARSE, DENSE)
            or dim > MAX_DIM or nnz > dim or (out["format"] == DENSE and nnz != dim) or int(h["reserved"])):
        raise ValueError("sparcml: malformed stream header %r" % out)
    need = (dense_bytes(dim, out["value_type"]) if out["format"] == DENSE
            else sparse_bytes(dim, out["value_type"], nnz))
    if need > buf.size * 8:
        raise ValueError("sparcml: stream of %d bytes longer than its buffer (%d words)" % (need, buf.size))
    return out


def to_pairs(buf: Words) -> Tuple[npt.NDArray[np.int64], np.ndarray]:
    """(indices, values) of a stream's stored entries (a dense stream: every
    index).  Views into buf where possible: copy them to keep them."""
    h = header(buf)
    dt, dim, nnz = dtype_of(h["value_type"]), h["dim"], h["nnz"]
    raw = buf.view(np.uint8)
    if h["format"] == DENSE:
        return np.arange(dim, dtype=np.int64), raw[HEADER_BYTES:HEADER_BYTES + dim * dt.itemsize].view(dt)
    iw = h["index_width"]
    stored = raw[HEADER_BYTES:HEADER_BYTES + nnz * iw].view("=u%d" % iw)
    if nnz and int(stored.max()) >= dim:
        raise ValueError("sparcml: malformed stream: index %d >= dim %d" % (int(stored.max()), dim))
    idx = stored.astype(np.int64)
    start = HEADER_BYTES + _round8(nnz * iw)
    return idx, raw[start:start + nnz * dt.itemsize].view(dt)


def to_dense(buf: Words, out: Optional[np.ndarray] = None) -> np.ndarray:
    """The stream as a dense NumPy vector of its dim values."""
    h = header(buf)
    dt = dtype_of(h["value_type"])
    if out is None:
        out = np.zeros(h["dim"], dtype=dt)
    elif out.dtype != dt or out.size != h["dim"]:
        raise ValueError("sparcml: out must be %d values of %s" % (h["dim"], dt))
    else:
        out[:] = 0
    idx, vals = to_pairs(buf)
    out[idx] = vals
    return out


_types: Dict[int, "MPI.Datatype"] = {}


def tagged_type(vt: int) -> "MPI.Datatype":
    """The committed MPI datatype (8 x MPI.BYTE) named 'sparcml:v1:<type>',
    one per value type and process."""
    from mpi4py import MPI
    dtype_of(vt)
    if vt not in _types:
        t = MPI.BYTE.Create_contiguous(8).Commit()
        t.Set_name(NAME_PREFIX + _NAMES[vt])
        _types[vt] = t
    return _types[vt]


# The library's entry point for tagged sums: a symbol of libsparcml.so only.
_LIBRARY_SYMBOL = "sparcml_allreduce"
_loaded: Optional[bool] = None


def _library_loaded() -> bool:
    global _loaded
    if _loaded is None:
        try:  # dlsym over the process's global scope, where LD_PRELOAD puts the library
            _loaded = hasattr(ctypes.CDLL(None), _LIBRARY_SYMBOL)
        except OSError:
            _loaded = False
    return _loaded


def active() -> bool:
    """True when libsparcml.so is loaded into this process (LD_PRELOAD) and
    not switched off (SPARCML_DISABLE=1), so that the tagged calls reach it.

    Looks up the library's symbol once (dlsym over the process) and reads
    SPARCML_DISABLE, which the library reads the same way; silent, and cheap
    enough to call before every allreduce.  It answers for this process
    only: the library checks at MPI_Init that SPARCML_DISABLE is equal on
    every rank, the launcher's LD_PRELOAD gives every rank the same
    library."""
    return _library_loaded() and os.environ.get("SPARCML_DISABLE", "0") != "1"


def _require_active(call: str) -> None:
    if active():
        return
    if _library_loaded():
        raise RuntimeError("sparcml.%s: SPARCML_DISABLE=1 leaves tagged calls to the MPI, which cannot sum "
                           "them; unset SPARCML_DISABLE" % call)
    raise RuntimeError("sparcml.%s: libsparcml.so is not loaded into this process, so the MPI cannot sum "
                       "the tagged datatype; start the job with LD_PRELOAD=/path/to/libsparcml.so (the "
                       "build for the MPI mpi4py uses: on Debian build-openmpi/src/.libs/libsparcml.so, "
                       "mpirun.openmpi -x LD_PRELOAD=...)" % call)


def _prepare(comm: "MPI.Comm", sendbuf: Any, recvbuf: Optional[Words],
             call: str) -> Tuple[Any, Words, "MPI.Datatype", int]:
    """The arguments of the tagged call: (sendbuf or MPI.IN_PLACE, recvbuf,
    datatype, count).  A sendbuf shorter than recvbuf is not padded: its
    stream is copied into recvbuf and the call made in place."""
    _require_active(call)  # before mpi4py initialises MPI
    from mpi4py import MPI
    inplace = sendbuf is MPI.IN_PLACE
    data = recvbuf if inplace else sendbuf
    if data is None:
        raise ValueError("sparcml: MPI.IN_PLACE needs the stream in recvbuf")
    data = _words(data, "the stream buffer")
    try:
        h = header(data)
        vt, words = h["value_type"], capacity(h["dim"], h["value_type"])
        used = (sparse_bytes(h["dim"], vt, h["nnz"]) if h["format"] == SPARSE else dense_bytes(h["dim"], vt))
        used = (used + 7) // 8
    except ValueError:
        # A malformed stream still takes part in the call: the library then
        # reports it on every rank (MPI_ERR_ARG) instead of leaving the
        # other ranks waiting.
        vt, words, used = FLOAT, data.size, data.size
    if recvbuf is None:
        recvbuf = np.zeros(words, dtype=np.uint64)
    recvbuf = _words(recvbuf, "recvbuf")
    count = recvbuf.size
    if not inplace:
        if sendbuf is recvbuf:
            inplace = True
        elif np.shares_memory(sendbuf, recvbuf):
            raise ValueError("sparcml: sendbuf and recvbuf overlap (use MPI.IN_PLACE)")
        elif sendbuf.size < count:  # MPI reads count words of both: send from recvbuf instead
            n = min(used, sendbuf.size, count)
            recvbuf[:n] = sendbuf[:n]
            inplace = True
    return (MPI.IN_PLACE if inplace else sendbuf), recvbuf, tagged_type(vt), count


def allreduce(comm: "MPI.Comm", sendbuf: Union[Words, Any], recvbuf: Optional[Words] = None) -> Words:
    """Sum a stream over comm (a blocking MPI_Allreduce of the tagged type).

    sendbuf is a stream buffer, or MPI.IN_PLACE with the stream in recvbuf.
    recvbuf receives the sum, sparse or dense, and is returned; pass one of
    capacity(dim, vt) words (sparcml.empty) to reuse it across calls, so
    that a call allocates nothing of the dense size.  Without it each call
    allocates a new buffer of capacity(dim, vt) words.  The count is
    recvbuf's length in words: it must be the same on every rank (as MPI
    requires).  A sendbuf shorter than that (from_sorted without out=) is
    copied into recvbuf, stream bytes only, and summed in place.

    Raises RuntimeError, before any MPI call, when the library is not
    active() in this process."""
    sendbuf, recvbuf, t, count = _prepare(comm, sendbuf, recvbuf, "allreduce")
    from mpi4py import MPI
    if sendbuf is MPI.IN_PLACE:
        comm.Allreduce(MPI.IN_PLACE, [recvbuf, count, t], op=MPI.SUM)
    else:
        comm.Allreduce([sendbuf, count, t], [recvbuf, count, t], op=MPI.SUM)
    return recvbuf


def iallreduce(comm: "MPI.Comm", sendbuf: Union[Words, Any],
               recvbuf: Optional[Words] = None) -> Tuple["MPI.Request", Words]:
    """The non-blocking allreduce (MPI_Iallreduce of the tagged type):
    returns (request, recvbuf); recvbuf holds the sum once the request is
    complete (request.Wait(), MPI.Request.Waitall, ...).  Arguments and
    errors as allreduce; sendbuf and recvbuf must stay untouched until
    then."""
    sendbuf, recvbuf, t, count = _prepare(comm, sendbuf, recvbuf, "iallreduce")
    from mpi4py import MPI
    if sendbuf is MPI.IN_PLACE:
        req = comm.Iallreduce(MPI.IN_PLACE, [recvbuf, count, t], op=MPI.SUM)
    else:
        req = comm.Iallreduce([sendbuf, count, t], [recvbuf, count, t], op=MPI.SUM)
    return req, recvbuf
