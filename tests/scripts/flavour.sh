#!/bin/bash
# The MPI-3 stand-ins for the large-count functions (what the Open MPI build
# runs beyond INT_MAX), exercised with small limits: chunked sums, messages
# in blocks and the rest, allgathers in words or MPI_ERR_COUNT (tests/mpi/flavour.c).
. "$(dirname "$0")/common.sh"
for p in 2 3; do
    run_mpi "$p" "$YIELD" -- "$TESTBIN/flavour"
    rc=$?
    check "MPI-3 stand-ins with small limits, P=$p: $(cat "$out")" '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out"'
done
finish
