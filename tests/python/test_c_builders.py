"""python/sparcml/ against the C builders of include/sparcml.h: for the same
input both write the same bytes, accept the same buffers and reject the
same inputs.  The C side runs in tests/mpi/c_streams (path in argv[1]).

The cases cross the four value types, 4- and 8-byte indices, both formats
(nnz on each side of the size rule), duplicate indices summed in input
order, -0.0, NaN and infinities, buffers of exactly the needed words and
one word fewer, and bad indices."""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import sparcml  # noqa: E402

C_STREAMS = sys.argv[1]
C_ERRORS = {11: "argument", 12: "capacity", 14: "memory"}
RNG = np.random.default_rng(20261123)
failures = []


def c_build(kind, vt, dim, words, indices, values):
    """The C builder's buffer, or the kind of error it returned."""
    bits = values.view("=u%d" % values.itemsize)
    text = [str(values.size)]
    if kind != "dense":
        text.append(" ".join(str(int(i)) for i in indices))
    text.append(" ".join("%x" % int(b) for b in bits))
    run = subprocess.run([C_STREAMS, kind, str(vt), str(dim), str(words)],
                         input=("\n".join(text) + "\n").encode(), capture_output=True, check=False)
    if run.returncode == 0:
        return np.frombuffer(run.stdout, dtype=np.uint64)
    if run.returncode in C_ERRORS:
        return C_ERRORS[run.returncode]
    raise RuntimeError("c_streams failed (%d): %s" % (run.returncode, run.stderr.decode()))


def py_build(kind, dim, words, indices, values):
    """The Python builder's buffer, or the kind of error it raised."""
    out = np.zeros(words, dtype=np.uint64)
    try:
        if kind == "pairs":
            return sparcml.from_pairs(indices, values, dim, out=out)
        if kind == "sorted":
            return sparcml.from_sorted(indices, values, dim, out=out)
        return sparcml.from_dense(values, out=out)
    except ValueError as e:
        return "capacity" if "too small" in str(e) else "argument"


def stream_length(buf):
    h = sparcml.header(buf)
    if h["format"] == sparcml.DENSE:
        return sparcml.dense_bytes(h["dim"], h["value_type"])
    return sparcml.sparse_bytes(h["dim"], h["value_type"], h["nnz"])


def compare(name, kind, vt, dim, words, indices, values):
    c = c_build(kind, vt, dim, words, indices, values)
    py = py_build(kind, dim, words, indices, values)
    if isinstance(c, str) or isinstance(py, str):
        if not (isinstance(c, str) and isinstance(py, str) and c == py):
            failures.append("%s: C %s, Python %s" % (name, c if isinstance(c, str) else "ok",
                                                     py if isinstance(py, str) else "ok"))
        return c if isinstance(c, str) else "ok"
    n = stream_length(c)
    if c.tobytes()[:n] != py.tobytes()[:n]:
        failures.append("%s: the %d stream bytes differ" % (name, n))
    return "ok"


def random_values(vt, n, specials):
    dt = sparcml.dtype_of(vt)
    if dt.kind == "f":
        v = RNG.standard_normal(n).astype(dt)
        if specials and n >= 4:
            v[RNG.choice(n, 4, replace=False)] = [-0.0, np.nan, np.inf, -np.inf]
        return v
    info = np.iinfo(dt)
    return RNG.integers(info.min, info.max, size=n, dtype=dt, endpoint=True)


def words_needed(dim, vt, nnz):
    dense = sparcml.prefers_dense(dim, vt, nnz)
    return ((sparcml.dense_bytes(dim, vt) if dense else sparcml.sparse_bytes(dim, vt, nnz)) + 7) // 8


def sparse_cases(vt, dim):
    """Entry counts on both sides of the size rule (few where dim is huge)."""
    vs = sparcml.dtype_of(vt).itemsize
    switch = -(-dim * vs // (sparcml.index_width(dim) + vs))  # smallest dense nnz
    cands = {0, 1, min(5, dim), switch - 1, switch, dim} if dim <= 10 ** 6 else {0, 1, 17}
    return sorted(n for n in cands if 0 <= n <= dim)


def run_sorted_and_pairs(counts):
    for vt in (sparcml.FLOAT, sparcml.DOUBLE, sparcml.INT32, sparcml.INT64):
        for dim in (1, 7, 100, 1001, (1 << 32) + 5):
            for nnz in sparse_cases(vt, dim):
                idx = np.sort(RNG.choice(dim, nnz, replace=False)) if dim <= 10 ** 6 else \
                    np.sort(RNG.choice(1 << 40, nnz, replace=False) % dim)
                idx = np.unique(idx)
                vals = random_values(vt, idx.size, True)
                need = words_needed(dim, vt, idx.size)
                for words, label in ((need, "exact"), (need - 1, "one word short")):
                    name = "sorted vt=%d dim=%d nnz=%d %s" % (vt, dim, idx.size, label)
                    counts[compare(name, "sorted", vt, dim, words, idx, vals)] += 1
                # Pairs: shuffled, every index twice (values summed in input order).
                pidx = np.concatenate([idx, idx])
                pvals = random_values(vt, pidx.size, True)
                order = RNG.permutation(pidx.size)
                name = "pairs vt=%d dim=%d nnz=%d" % (vt, dim, idx.size)
                counts[compare(name, "pairs", vt, dim, need, pidx[order], pvals[order])] += 1
            if sparcml.dtype_of(vt).kind == "f":  # a lone -0.0 stays -0.0, as in from_sorted
                lone = np.array([-0.0, 1.0, -0.0], dtype=sparcml.dtype_of(vt))
                name = "pairs vt=%d dim=%d lone -0.0" % (vt, dim)
                counts[compare(name, "pairs", vt, dim, sparcml.capacity(min(dim, 1000), vt),
                               np.array([0, 0, dim - 1]), lone)] += 1
            bad = np.array([0, dim], dtype=np.uint64) if dim > 1 else np.array([dim], dtype=np.uint64)
            bvals = random_values(vt, bad.size, False)
            for kind in ("sorted", "pairs"):
                name = "%s vt=%d dim=%d index == dim" % (kind, vt, dim)
                counts[compare(name, kind, vt, dim, sparcml.capacity(min(dim, 1000), vt), bad, bvals)] += 1
            if dim > 2:
                unsorted = np.array([2, 1], dtype=np.uint64)
                name = "sorted vt=%d dim=%d unsorted" % (vt, dim)
                counts[compare(name, "sorted", vt, dim, 64, unsorted, random_values(vt, 2, False))] += 1


def run_dense(counts):
    for vt in (sparcml.FLOAT, sparcml.DOUBLE, sparcml.INT32, sparcml.INT64):
        for dim in (1, 7, 100, 1001):
            for nnz in sparse_cases(vt, dim):
                array = np.zeros(dim, dtype=sparcml.dtype_of(vt))
                where = RNG.choice(dim, nnz, replace=False)
                array[where] = random_values(vt, nnz, True)
                if array.dtype.kind == "f" and nnz < dim:
                    array[np.flatnonzero(array.view("=u%d" % array.itemsize) == 0)[:1]] = -0.0
                nz = int(np.count_nonzero(array.view("=u%d" % array.itemsize)))
                need = words_needed(dim, vt, nz)
                for words, label in ((need, "exact"), (need - 1, "one word short")):
                    name = "dense vt=%d dim=%d nnz=%d %s" % (vt, dim, nz, label)
                    counts[compare(name, "dense", vt, dim, words, None, array)] += 1


def main():
    counts = {"ok": 0, "argument": 0, "capacity": 0, "memory": 0}
    run_sorted_and_pairs(counts)
    run_dense(counts)
    for f in failures[:20]:
        print("FAIL", f)
    print("C and Python builders: %d streams identical, %d argument and %d capacity errors alike, "
          "failures=%d" % (counts["ok"], counts["argument"], counts["capacity"], len(failures)))
    return 1 if failures or counts["ok"] == 0 or counts["capacity"] == 0 or counts["argument"] == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
