#!/bin/bash
# SPARCML_REPRODUCIBLE=1 (sparcml(7), REPRODUCIBILITY): every choice from
# agreed numbers and fixed parameters, so two runs of one program make the
# same choices and give the same bits, however their timing differs.
# tests/mpi/repro sums random fractions (a sum's last bits follow its
# algorithm) at densities from recursive doubling's regime to the split
# algorithms', each twice; the second run has two busy loops beside it on
# the machine's cores.  Both runs: no calibration line, every call's line
# with timed_over=- and chosen_by=model, and the same algorithm, selector
# pick and result hash call by call.  The control, the same program
# without the variable: calibrated at MPI_Init, and its blocking calls
# timed (some timed_over= other than -), which the variable turns off; and
# two forced algorithms give different bits (the comparison can tell).
# Bad values of the variable stop the job (tests/scripts/settings.sh).
. "$(dirname "$0")/common.sh"
prog="$TESTBIN/repro"
# choices: rank 0's algorithm, selector pick, timed_over and chosen_by per call
choices() {
    grep '^sparcml: allreduce ' "$1" |
        sed 's/.* algorithm=\([^ ]*\) .* selector=\([^ ]*\) .* timed_over=\([^ ]*\) chosen_by=\([^ ]*\)$/\1 \2 \3 \4/'
}
busy=()
stop_busy() {
    for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null; done
    busy=()
}
trap stop_busy EXIT
for p in 3 4; do
    run_mpi "$p" "$with_shim" SPARCML_REPRODUCIBLE=1 SPARCML_VERBOSE=1 -- "$prog"
    rc1=$?
    cp "$out" "$out.first"
    for _ in 1 2; do
        (while :; do :; done) &
        busy+=($!)
    done
    run_mpi "$p" "$with_shim" SPARCML_REPRODUCIBLE=1 SPARCML_VERBOSE=1 -- "$prog"
    rc2=$?
    stop_busy
    first=$(choices "$out.first")
    second=$(choices "$out")
    check "P=$p, two runs, the second beside two busy loops: both exact, nothing calibrated or timed" \
        '[ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] && grep -q "failures=0" "$out.first" && grep -q "failures=0" "$out" &&
         ! grep -q "^sparcml: calibrated" "$out.first" "$out" && [ "$(echo "$first" | wc -l)" -eq 24 ] &&
         [ -z "$(printf "%s\n%s\n" "$first" "$second" | grep -v " - model$")" ]'
    check "P=$p: the same choices call by call ($(echo "$first" | cut -d" " -f1 | sort | uniq -c | tr -s " \n" " "))" \
        '[ "$first" = "$second" ]'
    check "P=$p: the same result bits call by call" \
        '[ "$(grep "^repro call" "$out.first")" = "$(grep "^repro call" "$out")" ] && [ "$(grep -c "^repro call" "$out")" -eq 24 ]'
    rm -f "$out.first"
done
# The bits can tell: two forced algorithms' sums differ at some call.
run_mpi 3 "$with_shim" SPARCML_REPRODUCIBLE=1 SPARCML_ALGORITHM=ssar_recursive_double -- "$prog"
rc1=$?
cp "$out" "$out.first"
run_mpi 3 "$with_shim" SPARCML_REPRODUCIBLE=1 SPARCML_ALGORITHM=dsar_split_allgather -- "$prog"
rc2=$?
check "the result bits follow the algorithm: recursive doubling's and DSAR split's differ" \
    '[ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ] && grep -q "failures=0" "$out" &&
     [ "$(grep "^repro call" "$out.first")" != "$(grep "^repro call" "$out")" ]'
rm -f "$out.first"
run_mpi 3 "$with_shim" SPARCML_VERBOSE=1 -- "$prog"
rc=$?
check "control, without the variable: calibrated at MPI_Init, its calls timed" \
    '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" && grep -q "^sparcml: calibrated" "$out" &&
     choices "$out" | cut -d" " -f3 | grep -qv "^-$"'
finish
