#!/bin/bash
# bench_auto_alone.sh -- auto against each forced algorithm, each run alone
# and alike (bench/RESULTS.md, "Side by side": auto alone).
#
#   scripts/bench_auto_alone.sh [ROUNDS] >OUT.csv        (default 3 rounds)
#
# sparcml_bench (N = $BENCH_N, default 16M floats, 1 warm-up and 10 timed
# calls, --methods sparcml) with SPARCML_ALGORITHM=auto, then
# ssar_recursive_double, then ssar_split_allgather, the order rotating
# by round, at each point: P = 2, 4, 8 on shared memory (the tests' yield
# preload) and P = 8 on the emulated Gigabit cluster (scripts/netsim.sh,
# brought up and down here; needs root), random and identical indices at
# d = 1e-4, 1e-3, 1e-2.  The library as a user runs it: no model settings
# (its calibration at MPI_Init, timed prices).  CSV on stdout: env, P,
# density, pattern, algorithm setting, round, the run's median call (s,
# slowest rank) and the calls by algorithm (SPARCML_STATS).  Table:
# python3 bench/auto_alone_table.py OUT.csv.  BUILD (default build/) names
# the build; the library is copied first, so a rebuild during the run does
# not change it.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/stats_mix.sh"
build=${BUILD:-$top/build}
bench=$build/bench/sparcml_bench yield=$build/tests/support/.libs/libyield.so
rounds=${1:-3} n=${BENCH_N:-16777216}
lib=$(mktemp --suffix=.so)
trap 'rm -f "$lib"' EXIT
cp -f "$(readlink -f "$build/src/.libs/libsparcml.so")" "$lib"
export HYDRA_CONFIG_FILE=/dev/null
algs=(auto ssar_recursive_double ssar_split_allgather)

# one ENV P D PATTERN ALGORITHM ROUND: one run, one CSV line
one() {
    local args=(--n "$n" --density "$3" --pattern "$4" --reps 10 --methods sparcml) o med mix
    if [ "$1" = rig ]; then
        o=$(env LD_PRELOAD="$lib" SPARCML_ALGORITHM="$5" SPARCML_STATS=1 timeout -k 10 600 \
            "$top/scripts/netsim.sh" run "$2" -- "$bench" "${args[@]}" 2>&1 </dev/null)
    else
        o=$(timeout -k 10 600 mpiexec.mpich -n "$2" env LD_PRELOAD="$yield:$lib" SPARCML_ALGORITHM="$5" \
            SPARCML_STATS=1 "$bench" "${args[@]}" 2>&1 </dev/null)
    fi
    med=$(echo "$o" | grep '^sparcml_' | head -1 | cut -d, -f7)
    mix=$(echo "$o" | stats_mix)
    echo "$1,$2,$3,$4,$5,$6,${med:-NA},${mix:-FAILED}"
}
# points ENV P ROUND: every pattern and density, the algorithms rotated
points() {
    for pat in random identical; do
        for d in 1e-4 1e-3 1e-2; do
            for i in 0 1 2; do one "$1" "$2" "$d" "$pat" "${algs[$(((i + $3) % 3))]}" "$3"; done
        done
    done
}
echo "env,P,density,pattern,alg,round,median_s,ran"
for r in $(seq "$rounds"); do
    for p in 2 4 8; do points shm "$p" "$r"; done
done
"$top/scripts/netsim.sh" up 8 1gbit >&2 || { echo "bench_auto_alone: netsim up failed" >&2; exit 1; }
for r in $(seq "$rounds"); do points rig 8 "$r"; done
"$top/scripts/netsim.sh" down >&2
