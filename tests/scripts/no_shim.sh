#!/bin/bash
# Without the shim a tagged call fails with an MPI error (never garbage);
# with it, the same program sums correctly.
. "$(dirname "$0")/common.sh"
for p in 1 2 4; do
    run_mpi "$p" "$YIELD" -- "$TESTBIN/no_shim"
    check "without shim, P=$p: tagged call rejected by the vendor" '[ $? -eq 0 ]'
    run_mpi "$p" "$with_shim" -- "$TESTBIN/no_shim" shim
    check "with shim, P=$p: tagged call sums correctly" '[ $? -eq 0 ]'
done
run_mpi 2 "$with_shim" SPARCML_DISABLE=1 -- "$TESTBIN/no_shim"
check "SPARCML_DISABLE=1 leaves tagged calls to the vendor" '[ $? -eq 0 ]'
finish
