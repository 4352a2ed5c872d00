#!/bin/bash
# The cost model measured at MPI_Init (sparcml(7), "Cost model"): it runs
# when a cost-model variable is unset, once per job (one verbose line), a
# user-set variable wins, and every rank holds identical values: each tagged
# call's agreement compares a hash of the settings that includes alpha, beta
# and gamma, so a single differing value fails every call ("settings differ
# between ranks", the last checks show it does), and sparse_allreduce's
# calls all succeed with exact results.
. "$(dirname "$0")/common.sh"
prog=("$TESTBIN/sparse_allreduce" --types=float) # a quarter of its calls: short under load
# Each value may say "(default)": on a busy machine (a loaded CI host) the
# measurement keeps the defaults (sparcml(7), SPARCML_CALIBRATE); alpha and
# beta "(shared cores)" where the job's ranks share cores.
d='\( (default)\| (shared cores)\)\?'
line="^sparcml: calibrated alpha=[0-9.e+-]* us$d beta=[0-9.e+-]* ns/B$d gamma=[0-9.e+-]* ns/entry$d vendor_gather=[0-9.e+-]*$d (ranks per core \([0-9.e+]*\|-\); [0-8] repetitions, spread \([0-9.e+]*\|-\); [0-9.]* ms at MPI_Init)$"
for p in 2 3 4 8; do
    run_mpi "$p" "$with_shim" SPARCML_VERBOSE=1 -- "${prog[@]}"
    rc=$?
    check "P=$p: one calibration line per job, every tagged call agreed and exact: $(grep -m1 '^sparcml: calibrated' "$out")" \
        '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" && [ "$(grep -c "^sparcml: calibrated" "$out")" -eq 1 ] && grep -q "$line" "$out"'
done
# Ranks that share cores (SPARCML_RANKS_PER_CORE says so, whatever the
# host): no round is timed; gamma is measured, alpha is the one-node rule's
# 5 us, beta an eighth of gamma per byte (rounded as printed: compared to
# 0.5 %).
run_mpi 4 "$with_shim" SPARCML_VERBOSE=1 SPARCML_RANKS_PER_CORE=2 -- "${prog[@]}"
rc=$?
cal=$(grep -m1 '^sparcml: calibrated' "$out")
gamma=$(sed -n 's/.* gamma=\([0-9.e+-]*\) ns\/entry .*/\1/p' <<<"$cal")
beta=$(sed -n 's/.* beta=\([0-9.e+-]*\) ns\/B (shared cores) .*/\1/p' <<<"$cal")
check "shared cores: no round timed, alpha and beta by the rule, gamma measured: $cal" \
    '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" && grep -q "^sparcml: calibrated alpha=5 us (shared cores) beta=[0-9.e+-]* ns/B (shared cores) gamma=[0-9.e+-]* ns/entry vendor_gather=1 (default) (ranks per core 2; 0 repetitions, spread -; " "$out" && awk -v b="$beta" -v g="$gamma" "BEGIN { exit !(b > 0 && g > 0 && b / (g / 8) > 0.995 && b / (g / 8) < 1.005) }"'
run_mpi 4 "$with_shim" SPARCML_VERBOSE=1 SPARCML_ALPHA_US=7 SPARCML_GAMMA_NS_PER_ENTRY=3.5 -- "${prog[@]}"
rc=$?
check "user-set alpha and gamma win over the measurement, beta is measured" \
    '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" && grep -q "^sparcml: calibrated alpha=7 us (set) beta=[0-9.e+-]* ns/B$d gamma=3.5 ns/entry (set) vendor_gather=" "$out"'
for envs in "SPARCML_CALIBRATE=0" "$default_model"; do
    # shellcheck disable=SC2086
    run_mpi 4 "$with_shim" SPARCML_VERBOSE=1 $envs -- "${prog[@]}"
    rc=$?
    check "$envs: no measurement" '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" && ! grep -q "^sparcml: calibrated" "$out"'
done
run_mpi 1 "$with_shim" SPARCML_VERBOSE=1 -- "${prog[@]}"
rc=$?
check "P=1: nothing to measure" '[ "$rc" -eq 0 ] && ! grep -q "^sparcml: calibrated" "$out"'
# Non-blocking and persistent calls read the same settings.
run_mpi 4 "$with_shim" SPARCML_VERBOSE=1 -- "$TESTBIN/nonblocking" first
rc=$?
check "a first call that is non-blocking, after the calibration: $(grep "^nonblocking" "$out")" \
    '[ "$rc" -eq 0 ] && grep -q "^sparcml: calibrated" "$out" && grep -q "failures=0" "$out"'
# The hash catches one differing value: alpha set on one rank only (the
# others measure theirs) fails each tagged call on every rank, no hang.
timeout -k 10 "$TIMEOUT" "$MPIEXEC" -n 1 env LD_PRELOAD="$with_shim" SPARCML_ALPHA_US=1234 "$TESTBIN/no_shim" shim : \
    -n 2 env LD_PRELOAD="$with_shim" "$TESTBIN/no_shim" shim >"$out" 2>"$err"
rc=$?
check "a cost value differing on one rank of 3 is an error on every rank" \
    '[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$(occurrences "settings differ between ranks" "$err")" -eq 1 ]'
finish
