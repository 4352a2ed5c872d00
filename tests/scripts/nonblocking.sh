#!/bin/bash
# Non-blocking tagged allreduces (MPI_Iallreduce, MPI_Iallreduce_c) as MPI
# requests, MPICH and Open MPI alike (sparcml(7), NON-BLOCKING AND
# PERSISTENT CALLS):
#  - the case matrix of sparse_allreduce (types, densities, index patterns,
#    in place, a split sub-communicator, repeated calls; reference sums and
#    bitwise identical results) with every call started non-blocking and
#    completed by MPI_Wait, and by MPI_Test in a loop: auto for P = 1..8,
#    each algorithm forced at P = 3 and 4 (the split algorithms by MPI_Test
#    in tests/scripts/split_gather.sh), QSGD (4 bits) at P = 4; and
#    as persistent calls (MPI_Allreduce_init, Open MPI's MPIX_Allreduce_init,
#    then MPI_Start + MPI_Wait for each of the three calls of a case): auto
#    for P = 1..8, each algorithm forced at P = 4; those with a reduce-scatter
#    first (the agreement rides on it: ride=phase) at P = 11, where the reduce-scatter posts its later sends round by round
#    (src/alg/split_phases.c, RS_SENDS_AHEAD), by MPI_Test and persistent;
#  - tests/mpi/nonblocking.c: 16 tagged calls outstanding among the
#    application's own requests, completed by every kind of wait and test
#    (many), requests freed while pending (free), a malformed stream on one
#    rank and an inter-communicator (bad), a first call on a communicator
#    started on one rank before a message the next rank receives before
#    starting it (first), 4 threads (threads), at P = 1,
#    2, 3, 4, 8 (threads at 2 and 4); SPARCML_PROGRESS_US (progress).
# MATRIX_RANKS replaces the P lists above but the forced algorithms' (P = 3,
# 4) and P = 11 (scripts/test.sh's Open MPI and distcheck passes).
. "$(dirname "$0")/common.sh"
mpi=$("$TESTBIN/nonblocking" --mpi) || { echo "cannot run $TESTBIN/nonblocking --mpi"; exit 1; }
echo "# built with $mpi"
TIMEOUT=180
nb_check() { # DESCRIPTION: the run of sparse_allreduce just made passed
    check "$1: $(tail -1 "$out")" '[ "$rc" -eq 0 ] && [ ! -s "$err" ] && grep -q "failures=0" "$out"'
}
# To keep the script at about 3 minutes on 2 cores, MPI_Test runs take half
# of the value types (--types), and so do the forced algorithms'.
for p in ${MATRIX_RANKS:-1 2 3 4 5 6 7 8}; do
    run_mpi "$p" "$with_shim" -- "$TESTBIN/sparse_allreduce" --call=wait
    rc=$?
    nb_check "--call=wait auto P=$p"
    run_mpi "$p" "$with_shim" -- "$TESTBIN/sparse_allreduce" --call=test --types=double,int32
    rc=$?
    nb_check "--call=test auto P=$p double,int32"
done
algs=$(algorithms)
check "the library names its algorithms: $algs" '[ -n "$algs" ]'
for alg in $algs; do
    for p in 3 4; do
        run_mpi "$p" "$with_shim" SPARCML_ALGORITHM=$alg -- "$TESTBIN/sparse_allreduce" --call=wait \
            --types=float,int64
        rc=$?
        nb_check "--call=wait algorithm=$alg P=$p float,int64"
        case $alg in *split*) continue ;; esac # by MPI_Test: tests/scripts/split_gather.sh
        run_mpi "$p" "$with_shim" SPARCML_ALGORITHM=$alg -- "$TESTBIN/sparse_allreduce" --call=test \
            --types=double,int32
        rc=$?
        nb_check "--call=test algorithm=$alg P=$p double,int32"
    done
done
# P = 11 runs in the plain passes only: 11 ranks under the sanitizers on 2
# cores take a quarter of the script's time there.
if [ -n "${SANITIZE:-}" ]; then
    echo "skip - P=11 runs: sanitizer build (the plain passes run them)"
else
    # The algorithms that ride on a first phase: the reduce-scatter.
    phase=$(algorithms_where ride=phase)
    check "the library names the algorithms with a reduce-scatter: $phase" '[ -n "$phase" ]'
    for alg in $phase; do
        run_mpi 11 "$with_shim" SPARCML_ALGORITHM=$alg -- "$TESTBIN/sparse_allreduce" --call=test --types=float,int64
        rc=$?
        nb_check "--call=test algorithm=$alg P=11 float,int64"
        run_mpi 11 "$with_shim" SPARCML_ALGORITHM=$alg -- "$TESTBIN/sparse_allreduce" --call=persistent \
            --types=double,int32
        rc=$?
        nb_check "--call=persistent algorithm=$alg P=11 double,int32"
    done
fi
for p in ${MATRIX_RANKS:-1 2 3 4 5 6 7 8}; do
    run_mpi "$p" "$with_shim" -- "$TESTBIN/sparse_allreduce" --call=persistent --types=float,int64
    rc=$?
    nb_check "--call=persistent auto P=$p float,int64"
done
for alg in $algs; do
    run_mpi 4 "$with_shim" SPARCML_ALGORITHM=$alg -- "$TESTBIN/sparse_allreduce" --call=persistent \
        --types=double,int32
    rc=$?
    nb_check "--call=persistent algorithm=$alg P=4 double,int32"
done
run_mpi 4 "$with_shim" SPARCML_QSGD_BITS=4 -- "$TESTBIN/sparse_allreduce" --call=wait --types=float,double
rc=$?
nb_check "--call=wait QSGD bits=4 P=4 float,double"

for p in ${MATRIX_RANKS:-1 2 3 4 8}; do
    for mode in many free bad first; do
        run_mpi "$p" "$with_shim" -- "$TESTBIN/nonblocking" $mode
        rc=$?
        if [ "$mode" = bad ]; then
            # The malformed stream is reported on stderr by the rank at
            # fault (the last), the inter-communicator by rank 0 of each
            # group; nothing else may be.
            check "nonblocking $mode P=$p: $(tail -1 "$out")" \
                '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" && grep -q "index >= dim" "$err" &&
                 ! grep -qv -e "^sparcml: MPI_I\?[Aa]llreduce: rank $((p - 1)): \(index >= dim\|indices not sorted\): " \
                    -e "^sparcml: MPI_I\?[Aa]llreduce: rank 0: inter-communicators are not supported" "$err"'
        else
            check "nonblocking $mode P=$p: $(grep "^nonblocking" "$out")" \
                '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" && [ ! -s "$err" ]'
        fi
    done
done
# The report at MPI_Finalize counts every call, also one whose request was
# freed right before it (free mode makes 7 tagged calls: A..G).
run_mpi 2 "$with_shim" SPARCML_STATS=1 -- "$TESTBIN/nonblocking" free
rc=$?
calls=$(awk '/^sparcml: [a-z_]+ +[0-9]+ / { s += $3 } END { print s + 0 }' "$out")
check "SPARCML_STATS counts the call completed at MPI_Finalize ($calls of 7 calls)" \
    '[ "$rc" -eq 0 ] && [ "$calls" -eq 7 ]'
for p in 2 4; do
    run_mpi "$p" "$with_shim" -- "$TESTBIN/nonblocking" threads 4 40
    rc=$?
    if [ "$rc" -eq 77 ]; then
        echo "skip - nonblocking threads P=$p: $(cat "$out")"
    else
        check "nonblocking threads P=$p: $(tail -1 "$out")" \
            '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" && [ ! -s "$err" ]'
    fi
done
# SPARCML_STATS counts non-blocking and persistent calls as it counts
# blocking ones: each collective call once, i.e. 3/2 of a rank's calls in
# sparse_allreduce (half on MPI_COMM_WORLD, half on one of two halves).
calls_sum() { awk '/^sparcml: [a-z_]+ +[0-9]+ / { s += $3 } END { print s + 0 }' "$out"; }
for how in wait persistent; do
    run_mpi 3 "$with_shim" SPARCML_STATS=1 -- "$TESTBIN/sparse_allreduce" --call=$how --types=float
    rc=$?
    made=$(( $(sed -n 's/.*calls_per_rank=\([0-9]*\).*/\1/p' "$out") * 3 / 2 ))
    check "SPARCML_STATS=1 --call=$how: calls per algorithm add up to the $made calls made" \
        '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" && [ "$(calls_sum)" -eq "$made" ]'
done
# SPARCML_PROGRESS_US: the library's thread completes a call while the
# application makes no MPI call (MPICH: without the thread it stays
# pending, so the check can fail); without MPI_THREAD_MULTIPLE the setting
# stops the job with one line.
for p in 2 4; do
    run_mpi "$p" "$with_shim" SPARCML_PROGRESS_US=100 -- "$TESTBIN/nonblocking" progress done
    rc=$?
    check "nonblocking progress done (SPARCML_PROGRESS_US=100) P=$p: $(tail -1 "$out")" \
        '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" && [ ! -s "$err" ]'
    if [ "$mpi" = MPICH ]; then
        run_mpi "$p" "$with_shim" -- "$TESTBIN/nonblocking" progress pending
        rc=$?
        check "nonblocking progress pending (no thread) P=$p: $(tail -1 "$out")" \
            '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" && [ ! -s "$err" ]'
    fi
done
run_mpi 2 "$with_shim" SPARCML_PROGRESS_US=100 -- "$TESTBIN/nonblocking" many
rc=$?
check "SPARCML_PROGRESS_US without MPI_THREAD_MULTIPLE stops the job with one line per job" \
    '[ "$rc" -ne 0 ] && [ "$(occurrences "SPARCML_PROGRESS_US needs MPI_THREAD_MULTIPLE" "$err")" -eq 1 ]'
finish
