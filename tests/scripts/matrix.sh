#!/bin/bash
# Every algorithm (forced) and auto, P = 1..8, the full case matrix of
# sparse_allreduce (types, densities, index patterns, in-place, a split
# sub-communicator, repeated calls).  The split algorithms run it with
# either gather forced at P = 1-5, 7 and 8 in tests/scripts/split_gather.sh;
# here at P = 6.
. "$(dirname "$0")/common.sh"
# MATRIX_RANKS narrows P (scripts/test.sh does so for the distcheck re-run,
# after the full matrix has run in the main build).
algs=$(algorithms)
check "the library names its algorithms: $algs" '[ -n "$algs" ]'
for alg in auto $algs; do
    for p in ${MATRIX_RANKS:-1 2 3 4 5 6 7 8}; do
        case "$alg:$p" in *split*:[1234578]) continue ;; esac
        run_mpi "$p" "$with_shim" SPARCML_ALGORITHM=$alg -- "$TESTBIN/sparse_allreduce"
        rc=$?
        check "algorithm=$alg P=$p: $(tail -1 "$out")" '[ "$rc" -eq 0 ] && [ ! -s "$err" ]'
    done
done
# P = 9: a power of two plus one (one folded pair) for the auto choice and
# recursive doubling, unless MATRIX_RANKS narrows the run.
if [ -z "${MATRIX_RANKS:-}" ]; then
    for alg in auto ssar_recursive_double; do
        run_mpi 9 "$with_shim" SPARCML_ALGORITHM=$alg -- "$TESTBIN/sparse_allreduce"
        rc=$?
        check "algorithm=$alg P=9: $(tail -1 "$out")" '[ "$rc" -eq 0 ] && [ ! -s "$err" ]'
    done
fi
finish
