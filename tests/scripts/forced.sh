#!/bin/bash
# A forced algorithm whose restriction rules a call out (tests/mpi/forced.c):
# those whose recv buffer must hold the dense result (dense_recv=1 in the
# library's table) with one too small for it fail with MPI_ERR_TRUNCATE on
# every rank, with one line naming the forced algorithm, and never expand
# the vector (dimension 2^40); auto and every other algorithm sum the same
# calls.
. "$(dirname "$0")/common.sh"
TIMEOUT=120
refusing=$(algorithms_where dense_recv=1)
summing=$(algorithms_where dense_recv=0)
check "the library's algorithms: needing a dense recv buffer: $refusing; not: $summing" \
    '[ -n "$refusing" ] && [ -n "$summing" ]'
for p in 1 2 3 4; do
    for alg in $refusing; do
        run_mpi "$p" "$with_shim" SPARCML_ALGORITHM=$alg -- "$TESTBIN/forced" refused
        rc=$?
        check "forced $alg, P=$p, recv too small for the dense result: $(tail -1 "$out")" '[ "$rc" -eq 0 ]'
        check "forced $alg, P=$p: the message names the forced algorithm" \
            'grep -q "recv capacity too small for the result: algorithm $alg (SPARCML_ALGORITHM)" "$err"'
    done
    for alg in auto $summing; do
        run_mpi "$p" "$with_shim" SPARCML_ALGORITHM=$alg -- "$TESTBIN/forced" summed
        rc=$?
        check "$alg, P=$p, the same calls are summed: $(tail -1 "$out")" '[ "$rc" -eq 0 ] && [ ! -s "$err" ]'
    done
done
finish
