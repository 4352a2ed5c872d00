#!/bin/bash
# bench_trials.sh -- what learning the timed prices costs a run (sparcml(7),
# DESCRIPTION; bench/RESULTS.md, "Trials").
#
#   scripts/bench_trials.sh A.so B.so [ROUNDS] [P] [D]   (default 3, 4, 0.3)
#
# Runs sparcml_bench (N = $BENCH_N, default 4M floats, density D, random
# indices, 1 warm-up and 17 timed calls: 18 calls, auto) with library A,
# then B, ROUNDS times, on shared memory with the tests' yield preload and
# SPARCML_VERBOSE=1.  Per run, from rank 0's verbose lines: the algorithms
# the calls ran (R recursive doubling, S SSAR split, D DSAR split, V
# dense), the trial calls (a call that ran an algorithm its agreement
# carried no timed multiple of while it carried some, or that ran the
# selector's pick where that was a trial's: chosen_by=trial) and their
# share of the calls and of the calls' time (time_us=), and the median call
# (sparcml_bench).  BUILD (default build/) gives the benchmark program and
# the yield preload.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
a=${1:?A.so} b=${2:?B.so} rounds=${3:-3} p=${4:-4} d=${5:-0.3}
export HYDRA_CONFIG_FILE=/dev/null
echo "lib,round,algorithms,trial_calls,calls,trial_time_share,median_s"
for r in $(seq "$rounds"); do
    for lib in "$a" "$b"; do
        out=$(timeout -k 10 900 mpiexec.mpich -n "$p" env LD_PRELOAD="$build/tests/support/.libs/libyield.so:$lib" \
            SPARCML_VERBOSE=1 "$build/bench/sparcml_bench" --n "${BENCH_N:-4194304}" --density "$d" --reps 17 \
            --methods sparcml 2>&1)
        median=$(echo "$out" | grep '^sparcml_auto,' | cut -d, -f7)
        echo "$out" | grep '^sparcml: allreduce algorithm=' | awk -v lib="$(basename "$lib")" -v r="$r" -v m="$median" '
            { for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
              a = f["algorithm"]; t = f["time_us"] + 0; all += t; n++
              s = a == "ssar_recursive_double" ? "R" : a == "ssar_split_allgather" ? "S" : a == "dsar_split_allgather" ? "D" : "V"
              seq = seq s
              if ((f["timed_over"] != "-" && index("," f["timed_over"], "," a ":") == 0) || (f["chosen_by"] == "trial" && f["selector"] == a)) {
                  trials++; tt += t } }
            END { printf "%s,%d,%s,%d,%d,%.2f,%s\n", lib, r, seq, trials, n, (all > 0 ? tt / all : 0), m }'
    done
done
