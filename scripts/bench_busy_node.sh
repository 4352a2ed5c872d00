#!/bin/bash
# bench_busy_node.sh -- what a busy node does to the calibration and the
# choices (bench/RESULTS.md, "Busy node"; sparcml(7), SPARCML_CALIBRATE,
# SPARCML_REPRODUCIBLE).
#
#   scripts/bench_busy_node.sh [RUNS] [P...]      (default 5 runs, P = 4 8)
#
# Two busy loops (one per core of this 2-core machine) run beside every
# run.  Each run is sparcml_bench (N = $BENCH_N, default 1M floats, d =
# $BENCH_D, default 1e-2, random indices, 1 warm-up and 10 timed calls,
# auto) on shared memory with the tests' yield preload and
# SPARCML_VERBOSE=1, once with the settings' defaults (the calibration at
# MPI_Init and timed prices) and once with SPARCML_REPRODUCIBLE=1, in turn.
# One CSV line per run, appended to $BENCH_CSV (default
# bench/results/busy_node.csv): P, mode, run, the calibration's alpha,
# beta, repetitions, spread and milliseconds (empty without one), the
# sequence of algorithms the calls ran (rank 0's verbose lines, initials:
# R recursive doubling, S SSAR split, D DSAR split, V dense) and how
# often chosen_by= said what.  BUILD (default build/) names the build.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
runs=${1:-5}
shift || true
Ps=${*:-4 8}
csv=${BENCH_CSV:-$top/bench/results/busy_node.csv}
export HYDRA_CONFIG_FILE=/dev/null
[ -f "$csv" ] || echo "P,mode,run,alpha_us,beta_ns,repetitions,spread,calibration_ms,algorithms,chosen_by" >"$csv"
busy=()
stop_busy() {
    for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null; done
    busy=()
}
trap stop_busy EXIT
for _ in 1 2; do
    (while :; do :; done) &
    busy+=($!)
done
for r in $(seq "$runs"); do
    for p in $Ps; do
        for mode in default reproducible; do
            envs=(SPARCML_VERBOSE=1)
            [ "$mode" = reproducible ] && envs+=(SPARCML_REPRODUCIBLE=1)
            out=$(timeout -k 10 600 mpiexec.mpich -n "$p" env \
                LD_PRELOAD="$build/tests/support/.libs/libyield.so:$build/src/.libs/libsparcml.so" "${envs[@]}" \
                "$build/bench/sparcml_bench" --n "${BENCH_N:-1048576}" --density "${BENCH_D:-1e-2}" \
                --reps 10 --methods sparcml 2>&1)
            cal=$(echo "$out" | sed -n 's/^sparcml: calibrated alpha=\([^ ]*\) us.* beta=\([^ ]*\) ns\/B.*; \([0-9]*\) repetitions, spread \([^;]*\); \([0-9.]*\) ms at MPI_Init)$/\1,\2,\3,\4,\5/p')
            [ -n "$cal" ] || cal=",,,,"
            algs=$(echo "$out" | sed -n 's/^sparcml: allreduce algorithm=\([a-z_]*\) .*/\1/p' |
                sed 's/^ssar_recursive_double$/R/; s/^ssar_split_allgather$/S/; s/^dsar_split_allgather$/D/; s/^dense$/V/' |
                tr -d '\n')
            by=$(echo "$out" | grep -o 'chosen_by=[a-z]*' | sort | uniq -c | awk '{ printf "%s%s:%s", (NR > 1 ? " " : ""), substr($2, 11), $1 }')
            echo "$p,$mode,$r,$cal,$algs,$by" | tee -a "$csv"
        done
    done
done
