#!/bin/bash
# A forced algorithm whose restriction rules a call out (tests/mpi/forced.c):
# dsar_split_allgather and dense with a recv buffer too small for the dense
# result fail with MPI_ERR_TRUNCATE on every rank, with one line naming the
# forced algorithm, and never expand the vector (dimension 2^40); auto and
# the sparse algorithms sum the same calls.
. "$(dirname "$0")/common.sh"
TIMEOUT=120
for p in 1 2 3 4; do
    for alg in dsar_split_allgather dense; do
        run_mpi "$p" "$with_shim" SPARCML_ALGORITHM=$alg -- "$TESTBIN/forced" refused
        rc=$?
        check "forced $alg, P=$p, recv too small for the dense result: $(tail -1 "$out")" '[ "$rc" -eq 0 ]'
        check "forced $alg, P=$p: the message names the forced algorithm" \
            'grep -q "recv capacity too small for the result: algorithm $alg (SPARCML_ALGORITHM)" "$err"'
    done
    for alg in auto ssar_recursive_double ssar_split_allgather; do
        run_mpi "$p" "$with_shim" SPARCML_ALGORITHM=$alg -- "$TESTBIN/forced" summed
        rc=$?
        check "$alg, P=$p, the same calls are summed: $(tail -1 "$out")" '[ "$rc" -eq 0 ] && [ ! -s "$err" ]'
    done
done
finish
