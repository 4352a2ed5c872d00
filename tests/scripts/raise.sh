#!/bin/bash
# Where and how a failed call is raised (tests/mpi/raise.c).
#  - Under the default handler (MPI_ERRORS_ARE_FATAL) the job aborts, and
#    the reason reaches the user in every run: each of the P = 4 ranks has
#    printed the call's line (the rank, the problem, the call the program
#    made) before any rank aborts, and no message names an MPI function
#    the program never called.  RAISE_REPS (default 5) runs of each case
#    (a receive count too small for the sum, a malformed stream on the last
#    rank, a count that differs) with two busy loops beside the job, where
#    a rank that aborts early would cut off another's line; one run each
#    completed by MPI_Wait.  scripts/raise_repeat.sh runs 20.
#  - A handler of the program's own on the call's communicator runs once,
#    on the calling thread, from the blocking call or the completion call
#    (every one of them), with the reason's class; also with the library's
#    progress thread (SPARCML_PROGRESS_US) completing the calls.
. "$(dirname "$0")/common.sh"
TIMEOUT=60
reps=${RAISE_REPS:-5}
busy=()
for _ in 1 2; do
    (while :; do :; done) &
    busy+=("$!")
done
trap 'kill "${busy[@]}" 2>/dev/null; rm -f "$out" "$err"' EXIT

fatal() { # CASE HOW CALL PATTERN: one run, the pattern printed by all 4 ranks
    local what=$1 how=$2 call=$3 pattern=$4 n
    run_mpi 4 "$with_shim" -- "$TESTBIN/raise" fatal "$what" "$how"
    rc=$?
    n=$(occurrences "sparcml: $call: rank [0-9]*: $pattern" "$err")
    check "default handler, $what, $how: the job aborts (rc $rc), each rank printed the reason ($n of 4 lines)" \
        '[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && ! grep -q "raise: survived" "$out" && [ "$n" -eq 4 ] &&
         ! grep -qi "MPI_Comm_call_errhandler\|internal_Wait\|Grequest" "$out" "$err"'
}
for i in $(seq "$reps"); do
    fatal truncate blocking MPI_Allreduce "recv capacity too small for the result"
    fatal badstream blocking MPI_Allreduce "index >= dim: sendbuf entry 2 (index 1000, dim 1000)"
    fatal count blocking MPI_Allreduce "count differs between ranks: count is [0-9]* on rank 0 and [0-9]* on rank 3"
done
fatal truncate wait MPI_Iallreduce "recv capacity too small for the result"
fatal badstream wait MPI_Iallreduce "index >= dim: sendbuf entry 2 (index 1000, dim 1000)"
fatal count wait MPI_Iallreduce "count differs between ranks: count is [0-9]* on rank 0 and [0-9]* on rank 3"
# The two counts named are the ones the ranks passed: rank 3's is one more.
read -r c0 c3 < <(sed -n 's/.*count is \([0-9]*\) on rank 0 and \([0-9]*\) on rank 3.*/\1 \2/p' "$err" | head -1)
check "count mismatch: the values named are rank 0's and rank 3's ($c0, $c3)" \
    '[ -n "$c0" ] && [ "$c3" -eq $((c0 + 1)) ]'
kill "${busy[@]}" 2>/dev/null

for p in 3 4; do
    for progress in 0 100; do
        run_mpi "$p" "$with_shim" SPARCML_PROGRESS_US=$progress -- "$TESTBIN/raise" handler
        rc=$?
        check "program's handler, P=$p, SPARCML_PROGRESS_US=$progress: $(tail -1 "$out")" \
            '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" &&
             ! grep -v "^sparcml: \(MPI_Allreduce\|MPI_Iallreduce\|MPI_Allreduce_init\|MPIX_Allreduce_init\): rank $((p - 1)): index >= dim" "$err" | grep -q .'
    done
done
finish
