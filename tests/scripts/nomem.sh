#!/bin/bash
# One rank out of memory (tests/mpi/nomem.c with the failalloc preload):
# every rank gets MPI_ERR_NO_MEM from the call, with one line from the rank
# that ran out, nothing hangs, and the next call is right -- blocking,
# non-blocking and persistent.
. "$(dirname "$0")/common.sh"
TIMEOUT=120
for how in blocking wait persistent; do
    for p in 1 2 3 4; do
        run_mpi "$p" "$YIELD:$FAILALLOC:$SHIM" SPARCML_TRANSPARENT=1 -- "$TESTBIN/nomem" "$how"
        rc=$?
        check "one rank out of memory, $how, P=$p: $(tail -1 "$out")" '[ "$rc" -eq 0 ]'
        check "one rank out of memory, $how, P=$p: one line, from that rank" \
            '[ "$(occurrences "out of memory" "$err")" -eq 1 ] && grep -q "rank $((p - 1)): out of memory" "$err"'
    done
done
finish
