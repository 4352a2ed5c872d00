#!/bin/bash
# Malformed input on all ranks and on one rank: every rank gets the MPI
# error, nothing hangs (timeout), nothing is written outside the buffers.
. "$(dirname "$0")/common.sh"
TIMEOUT=120
for p in 1 2 3 4 5 8; do
    run_mpi "$p" "$with_shim" -- "$TESTBIN/sparse_errors"
    rc=$?
    check "malformed inputs, P=$p: $(tail -1 "$out")" '[ "$rc" -eq 0 ]'
    check "malformed inputs, P=$p: each error has a one-line message" \
        'grep -q "sparcml: MPI_Allreduce: rank [0-9]*: index >= dim: sendbuf entry 2" "$err"'
done
finish
