#!/bin/bash
# MPI_THREAD_MULTIPLE: 4 threads per rank, each on its own communicator,
# 200 verified tagged allreduces each, P = 2 and 3, every algorithm.
. "$(dirname "$0")/common.sh"
TIMEOUT=180
for alg in auto ssar_recursive_double ssar_split_allgather dsar_split_allgather dense; do
    for p in 2 3; do
        run_mpi "$p" "$with_shim" SPARCML_ALGORITHM=$alg -- "$TESTBIN/threads" 4 200
        rc=$?
        check "threads, algorithm=$alg P=$p: $(tail -1 "$out")" '[ "$rc" -eq 0 ] && [ ! -s "$err" ]'
    done
done
finish
