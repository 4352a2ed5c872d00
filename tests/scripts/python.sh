#!/bin/bash
# Python users (python/sparcml/: NumPy + mpi4py, nothing compiled), run
# against the Open MPI build only: Debian's mpi4py is built for Open MPI.
#  - unit tests of the stream helpers, __version__ against configure.ac,
#    type hints, the calls refused without the library
#    (tests/python/test_sparcml.py);
#  - the same streams and errors as the C builders of sparcml.h
#    (tests/python/test_c_builders.py, C side tests/mpi/c_streams);
#  - MPI tests at P = 1..4 with the shim preloaded: sparcml.active(), every
#    value type, in place, sparse and dense results, iallreduce, a reused
#    recvbuf allocating nothing of the dense size, a malformed stream on one
#    rank (tests/python/mpi_allreduce.py);
#  - without the shim, and with SPARCML_DISABLE=1, active() is False and
#    the calls raise RuntimeError saying why;
#  - pip installs the package from a copy of python/ into a venv (skipped
#    without pip, setuptools or venv);
#  - python/examples/topk_sgd.py: dense and sparse runs reach the same loss;
#  - SPARCML_COMPRESS on an unmodified loop (tests/python/compress_allreduce.py).
. "$(dirname "$0")/common.sh"
py=/usr/bin/python3
if ! "$py" -c "import mpi4py, numpy" 2>/dev/null; then
    echo "skip: /usr/bin/python3 has no mpi4py or NumPy (Debian: python3-mpi4py python3-numpy)"
    exit 77
fi
"$py" "$SRCDIR/tests/python/test_sparcml.py" >"$out" 2>"$err"
check "Python helpers' unit tests: $(tail -1 "$err")" '[ $? -eq 0 ]'
"$py" "$SRCDIR/tests/python/test_c_builders.py" "$TESTBIN/c_streams" >"$out" 2>"$err"
rc=$?
check "Python and C builders write the same bytes: $(tail -1 "$out")" \
    '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" && [ ! -s "$err" ]'
for p in 1 2 3 4; do
    run_mpi "$p" "$SHIM" -- "$py" "$SRCDIR/tests/python/mpi_allreduce.py"
    rc=$?
    check "Python sums through mpi4py, P=$p: $(tail -1 "$out")" '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out"'
done
run_mpi 2 "" -- "$py" "$SRCDIR/tests/python/mpi_allreduce.py" --expect-no-shim
rc=$?
check "Python, no shim: inactive, the calls name libsparcml.so and LD_PRELOAD: $(tail -1 "$out")" \
    '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out"'
run_mpi 2 "$SHIM" SPARCML_DISABLE=1 -- "$py" "$SRCDIR/tests/python/mpi_allreduce.py" --expect-disabled
rc=$?
check "Python, SPARCML_DISABLE=1: inactive, the calls name it: $(tail -1 "$out")" \
    '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out"'
# Compression of an unmodified mpi4py loop (in place on a reused array),
# where the cost model (set whole, untimed) says it pays: at P > 1; at P = 1
# the vendor's copy would be cheaper, and a forced algorithm compresses.
for p in 1 3 4; do
    run_mpi "$p" "$SHIM" SPARCML_COMPRESS=topk SPARCML_COMPRESS_MIN_BYTES=4096 $default_model \
        $([ "$p" = 1 ] && echo SPARCML_ALGORITHM=ssar_recursive_double) -- \
        "$py" "$SRCDIR/tests/python/compress_allreduce.py"
    rc=$?
    check "Python: comm.Allreduce(MPI.IN_PLACE, grad) compressed with no change, P=$p: $(tail -1 "$out")" \
        '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out"'
done
# pip from the source tree, offline, into a venv that sees the system's
# NumPy; a copy of python/, as the build writes next to pyproject.toml.
if "$py" -c "import setuptools" 2>/dev/null && "$py" -c "import pip, venv, ensurepip" 2>/dev/null; then
    tmp=$(mktemp -d)
    cp -R "$SRCDIR/python" "$tmp/src" && chmod -R u+w "$tmp/src"
    "$py" -m venv --system-site-packages "$tmp/venv" >"$out" 2>"$err" &&
        "$tmp/venv/bin/python" -m pip install --no-build-isolation --no-deps --no-index "$tmp/src" >>"$out" 2>>"$err" &&
        (cd "$tmp" && "$tmp/venv/bin/python" -c 'import sparcml, os; print(sparcml.__version__, os.path.dirname(sparcml.__file__))') >>"$out" 2>>"$err"
    rc=$?
    want=$(sed -n 's/^AC_INIT(\[sparcml\], \[\([^]]*\)\].*/\1/p' "$SRCDIR/configure.ac")
    check "Python: pip installs the package from the source tree ($(tail -1 "$out"))" \
        '[ "$rc" -eq 0 ] && tail -1 "$out" | grep -q "^$want $tmp/venv/lib/python[0-9.]*/site-packages/sparcml\$" && [ -f "$tmp"/venv/lib/python*/site-packages/sparcml/py.typed ]'
    rm -rf "$tmp"
else
    echo "# skip: pip install (no pip, setuptools or venv for $py)"
fi
loss() { sed -n 's/^summary .*final_loss=\([^ ]*\).*/\1/p' "$out"; }
run_mpi 3 "" -- "$py" "$SRCDIR/python/examples/topk_sgd.py" --sync=dense --epochs=2
dense=$(loss)
run_mpi 3 "$SHIM" -- "$py" "$SRCDIR/python/examples/topk_sgd.py" --sync=sparse --epochs=2
sparse=$(loss)
check "Python example: dense and sparse reach the same loss ($dense, $sparse)" \
    '[ -n "$dense" ] && [ "$dense" = "$sparse" ]'
finish
