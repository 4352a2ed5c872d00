#!/bin/bash
# Python users (python/sparcml.py: NumPy + mpi4py, nothing compiled), run
# against the Open MPI build only: Debian's mpi4py is built for Open MPI.
#  - unit tests of the stream helpers (tests/python/test_sparcml.py);
#  - the same streams and errors as the C builders of sparcml.h
#    (tests/python/test_c_builders.py, C side tests/mpi/c_streams);
#  - MPI tests at P = 1..4 with the shim preloaded: every value type, in
#    place, sparse and dense results, a malformed stream on one rank
#    (tests/python/mpi_allreduce.py);
#  - without the shim the tagged call raises MPI.Exception (MPI_ERR_OP);
#  - python/examples/topk_sgd.py: dense and sparse runs reach the same loss.
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
check "Python, no shim: the tagged call raises MPI_ERR_OP: $(tail -1 "$out")" \
    '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out"'
loss() { sed -n 's/^summary .*final_loss=\([^ ]*\).*/\1/p' "$out"; }
run_mpi 3 "" -- "$py" "$SRCDIR/python/examples/topk_sgd.py" --sync=dense --epochs=2
dense=$(loss)
run_mpi 3 "$SHIM" -- "$py" "$SRCDIR/python/examples/topk_sgd.py" --sync=sparse --epochs=2
sparse=$(loss)
check "Python example: dense and sparse reach the same loss ($dense, $sparse)" \
    '[ -n "$dense" ] && [ "$dense" = "$sparse" ]'
finish
