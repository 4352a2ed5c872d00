#!/bin/bash
# bench_calibration.sh -- the selector's regret with the calibration at
# MPI_Init against the built-in defaults (sparcml(7), SPARCML_CALIBRATE; docs/design.md, "Calibration").
#
#   scripts/bench_calibration.sh shm|rig "P..." "DENSITIES" [PATTERN]
#
# For every P and density (N = $BENCH_N, default 16M floats, PATTERN default
# random), sparcml_bench runs with each algorithm forced and with auto
# twice: with no cost-model variable set (auto_calibrated) and with
# SPARCML_CALIBRATE=0 (auto_defaults: alpha 20 us, beta 8.3 ns/B, gamma
# 2.5 ns), $BENCH_ROUNDS times (default 1), each round starting with the
# next method.  shm: one
# machine's shared memory with the tests' yield preload; rig: the emulated
# Gigabit cluster, which must be up (scripts/netsim.sh up 8).  One CSV line
# per run, appended to bench/results/calibration_regret_{shm,rig}.csv (or
# to $BENCH_CSV):
# median time per call, the algorithm auto ran (SPARCML_STATS) and the
# calibration line (SPARCML_VERBOSE).  Regret tables: python3
# bench/calibration_table.py CSV [--choice].  Before each P and density the
# run waits for an idle machine (scripts/quiet.sh: at most $BENCH_QUIET_MAX
# s, default 60, 0 never; idle means $BENCH_QUIET_IDLE %, default 80) and
# records how idle the CPUs were just before and just after the point's
# runs (columns idle_before and idle_after of a new CSV, and on stderr;
# calibration_table.py --min-idle PCT leaves out points below).
# BENCH_METHODS, BENCH_REPS (default 10) and BUILD (default build/) adjust
# a run.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
shim=$build/src/.libs/libsparcml.so
yield=$build/tests/support/.libs/libyield.so
bench=$build/bench/sparcml_bench
methods=${BENCH_METHODS:-"ssar_recursive_double ssar_split_allgather dsar_split_allgather auto_calibrated auto_defaults"}
export HYDRA_CONFIG_FILE=/dev/null
quiet_max=${BENCH_QUIET_MAX:-60}
quiet_idle=${BENCH_QUIET_IDLE:-80}
quiet_note() { echo "bench_calibration: $*" >&2; }
. "$top/scripts/quiet.sh"

plat=${1:?shm or rig} Ps=${2:?P list} ds=${3:?densities} pat=${4:-random}
N=${BENCH_N:-16777216}
csv=${BENCH_CSV:-$top/bench/results/calibration_regret_$plat.csv}
[ -f "$csv" ] || echo "platform,P,N,density,pattern,method,median_s,algorithm,calibration,idle_before,idle_after" >"$csv"
idle_cols=0
head -1 "$csv" | grep -q ',idle_after$' && idle_cols=1

# one P d METHOD: one run, one CSV line (without the idle columns) on stdout.
one() {
    local p=$1 d=$2 m=$3 envs=(SPARCML_STATS=1 SPARCML_VERBOSE=1 BENCH_LABEL=$m) out line alg cal
    case $m in
    auto_calibrated) ;;
    auto_defaults) envs+=(SPARCML_CALIBRATE=0) ;;
    *) envs+=(SPARCML_ALGORITHM=$m) ;;
    esac
    local args=(--n "$N" --density "$d" --pattern "$pat" --reps "${BENCH_REPS:-10}" --methods sparcml)
    if [ "$plat" = rig ]; then
        out=$(env LD_PRELOAD="$shim" "${envs[@]}" timeout -k 10 600 "$top/scripts/netsim.sh" run "$p" -- "$bench" "${args[@]}" 2>&1)
    else
        out=$(timeout -k 10 600 mpiexec.mpich -n "$p" env LD_PRELOAD="$yield:$shim" "${envs[@]}" "$bench" "${args[@]}" 2>&1)
    fi
    line=$(echo "$out" | grep -E "^sparcml_$m,$p," | head -1)
    alg=$(echo "$out" | awk '/^sparcml: [a-z_]+ +[0-9]+ /{ if ($3 > n) { n = $3; a = $2 } } END { print a }')
    cal=$(echo "$out" | sed -n 's/^sparcml: calibrated //p' | head -1 | tr ',' ';')
    echo "$plat,$p,$N,$d,$pat,$m,$(echo "$line" | cut -d, -f7),$alg,$cal"
}

# rotate R WORD...: the words, the first R - 1 moved to the end.  Round R
# starts with a different method: on shared memory recursive doubling
# forced, always run first, measured up to 1.5 times auto's recursive
# doubling at the same point, a bias that would always hit the same method.
rotate() {
    local r=$1
    shift
    local words=("$@") n=$#
    for ((i = 0; i < n; i++)); do echo "${words[(i + r - 1) % n]}"; done
}

for r in $(seq "${BENCH_ROUNDS:-1}"); do
    for p in $Ps; do
        for d in $ds; do
            wait_quiet
            before=$(idle_pct)
            lines=$(for m in $(rotate "$r" $methods); do one "$p" "$d" "$m"; done)
            after=$(idle_pct)
            if [ "$idle_cols" -eq 1 ]; then
                lines=$(echo "$lines" | sed "s/\$/,$before,$after/")
            fi
            echo "$lines" | tee -a "$csv"
            quiet_note "round $r P=$p d=$d: CPUs idle $before % before, $after % after"
        done
    done
done
