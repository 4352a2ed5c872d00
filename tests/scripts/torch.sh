#!/bin/bash
# PyTorch users (python/sparcml/torch.py: the DDP communication hook and
# allreduce_sparse), run against the Open MPI build only (Debian's mpi4py is
# built for Open MPI), by tests/python/torch_ddp.py:
#  - no library, P = 1..4: the hook's gradients equal gloo's (to float
#    rounding) and are identical on every rank, dense and sparse embedding
#    gradients, blocking and not; the bits of the vendor's MPI_Allreduce
#    (MPI_Iallreduce for the non-blocking hook) of each bucket; the exact
#    sum of small-integer gradients, before and after DDP's bucket rebuild;
#    allreduce_sparse equal to the dense sum (duplicate indices, empty
#    tensors, 1-D and embedding-shaped, float32 and float64, a dense
#    result), a clear error on every rank for shapes that differ, CUDA and
#    float16 refused; a model trains with the hook;
#  - SPARCML_TRANSPARENT=1 (small threshold), P = 2, 4: the same checks,
#    the sums exact through the library;
#  - SPARCML_COMPRESS=topk and cltk (small threshold), P = 2..4: over
#    several iterations and across DDP's bucket rebuild, the results plus
#    every rank's residual add up to the inputs, exactly.
# import sparcml leaves torch alone.  Skipped (77) only where /usr/bin/python3 cannot import torch.
. "$(dirname "$0")/common.sh"
py=/usr/bin/python3
if ! "$py" -c "import torch, mpi4py, numpy" 2>/dev/null; then
    echo "skip: /usr/bin/python3 cannot import torch (Debian: python3-torch)"
    exit 77
fi
t="$SRCDIR/tests/python/torch_ddp.py"
PYTHONPATH="$SRCDIR/python" "$py" -c 'import sys, sparcml; sys.exit("torch" in sys.modules)' >"$out" 2>"$err"
check "import sparcml does not import torch (sparcml.torch does)" '[ $? -eq 0 ]'
for p in 1 2 3 4; do
    run_mpi "$p" "" -- "$py" "$t" plain
    rc=$?
    check "PyTorch hook and allreduce_sparse without the library, P=$p: $(tail -1 "$out")" \
        '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out"'
done
for p in 2 4; do
    run_mpi "$p" "$SHIM" SPARCML_TRANSPARENT=1 SPARCML_TRANSPARENT_MIN_BYTES=4096 -- "$py" "$t" transparent
    rc=$?
    check "PyTorch hook and allreduce_sparse, transparent mode, P=$p: $(tail -1 "$out")" \
        '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out"'
done
for run in "2 topk" "3 cltk" "4 topk"; do
    set -- $run
    # The cost model set whole: the calls compress wherever it pays, here always.
    run_mpi "$1" "$SHIM" SPARCML_COMPRESS="$2" SPARCML_COMPRESS_MIN_BYTES=4096 $default_model -- "$py" "$t" compress
    rc=$?
    check "PyTorch hook, SPARCML_COMPRESS=$2, error feedback across DDP's rebuild, P=$1: $(tail -1 "$out")" \
        '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out"'
done
finish
