#!/bin/bash
# bench_cold.sh -- small and medium tagged calls with warm and with cold
# caches, beside the vendor's dense allreduce and the allgather baseline,
# in one run.
#
# usage: scripts/bench_cold.sh [OUT.csv]
#
# MPICH on shared memory with the yield preload (with RIG=1: on the
# emulated Gigabit cluster, scripts/netsim.sh, brought up once with as many
# hosts as the largest P and down at the end; needs root), P ranks for each
# P of $PS,
# N = 16M floats (N), for each case of $CASES (pattern:density).  Every
# timed call runs once cold and once warm (sparcml_bench --cold): before
# the cold call each rank reads and writes every word of a 64 MiB buffer
# (COLD_MIB), untimed, as a training step's computation does between two
# allreduces; the warm call repeats the same call right after it.  One
# mpiexec runs the vendor's dense allreduce and the allgather baseline;
# one more each runs the library as a user runs it (auto) and every forced
# algorithm of $ALGS (SPARCML_ALGORITHM) alone, so that auto and the
# forced algorithms are timed alike.  With LIBS="NAME=PATH ..."
# each library runs every point (their order rotating between rounds:
# before and after a change side by side); the vendor and the allgather
# baseline run with the first.  The script waits (at most QUIET_MAX s,
# default 120) for 80 % idle CPUs before each round.
#
# Table (stdout): per point and method the median over ROUNDS of each
# run's median (REPS repetitions, the slowest rank), warm and cold, in ms,
# cold/warm, and the allgather baseline's time over each library's auto.
# The auto runs have SPARCML_STATS=1: the table's last column lists, per
# round, the calls each algorithm ran (R: ssar_recursive_double, S:
# ssar_split_allgather, D: dsar_split_allgather, the warm-up included).
# OUT.csv (long form): lib,P,pattern,density,method,cache,round,median_s,ran
# (ran: SPARCML_STATS's calls by algorithm, auto's rows only).
#
# With CALLGRIND=1 nothing is timed: every forced algorithm of $ALGS and the
# allgather baseline run under valgrind's callgrind with its cache model
# (LL: CALLGRIND_LL, default 33554432,16,64, this machine's 32 MiB L3; its
# own detection reads this VM wrong), each timed call of sparcml_bench
# dumped separately, and scripts/callgrind_calls.py prints per point the
# median per call, cold and warm, of the first rank started: instructions
# and cache misses of the process and of the library, and the bytes a
# cold call brings in from memory.  REPS defaults to 10 there.
#
# Environment: BENCHBIN (default build/bench), YIELD (default
# build/tests/support/.libs/libyield.so), LIB (default
# build/src/.libs/libsparcml.so; LIBS overrides), PS (default "2 4 8"),
# CASES (default "random:1e-4 random:1e-3 random:1e-2 identical:1e-3"),
# ALGS (default "ssar_recursive_double ssar_split_allgather"), ROUNDS
# (default 3), REPS (default 20), N (default 16777216), COLD_MIB
# (default 64), DENSE (default 1: 0 leaves the vendor's dense allreduce out),
# RIG (default 0; 1: the emulated cluster, PS default "8"; not with CALLGRIND),
# NICE (default 0: the timed runs' nice value; -20, as root, keeps other
# jobs' load off calls of microseconds).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bench=${BENCHBIN:-$top/build/bench}/sparcml_bench
yield=${YIELD:-$top/build/tests/support/.libs/libyield.so}
libs=${LIBS:-default=${LIB:-$top/build/src/.libs/libsparcml.so}}
rounds=${ROUNDS:-3} reps=${REPS:-20} n=${N:-16777216} cold_mib=${COLD_MIB:-64}
rig=${RIG:-0}
ps=${PS:-2 4 8}
[ "$rig" = 1 ] && ps=${PS:-8}
read -ra algs <<<"${ALGS:-ssar_recursive_double ssar_split_allgather}"
read -ra names <<<"$libs"
out=${1:-/dev/null}
export HYDRA_CONFIG_FILE=/dev/null
quiet_max=${QUIET_MAX:-120} quiet_idle=80
quiet_note() { echo "# $*" >&2; }
. "$top/scripts/quiet.sh"
. "$top/scripts/stats_mix.sh"
[ -x "$bench" ] || { echo "bench_cold: no $bench (make -C build check TESTS= builds it)" >&2; exit 2; }
for l in "${names[@]}"; do
    [ -f "${l#*=}" ] || { echo "bench_cold: no library ${l#*=}" >&2; exit 2; }
done
baselines=allgather
[ "${DENSE:-1}" = 0 ] || baselines=dense,$baselines

# callgrind LIB P PATTERN DENSITY METHOD ALGORITHM: the per-call summary
callgrind() {
    local lib=$1 p=$2 pat=$3 d=$4 m=$5 alg=$6 dir first rc
    dir=$(mktemp -d)
    timeout -k 10 3600 mpiexec.mpich -n "$p" env LD_PRELOAD="$yield:${lib#*=}" SPARCML_ALGORITHM="$alg" \
        valgrind --tool=callgrind --cache-sim=yes --LL="${CALLGRIND_LL:-33554432,16,64}" --collect-atstart=no \
        --toggle-collect=run_method --dump-after=run_method --callgrind-out-file="$dir/cg.%p" \
        "$bench" --n "$n" --density "$d" --pattern "$pat" --methods "$m" --reps "${REPS:-10}" \
        --cold-mib "$cold_mib" >/dev/null 2>&1
    rc=$?
    first=$(ls "$dir" | sed -n 's/^cg\.\([0-9]*\)$/\1/p' | sort -n | head -1)
    if [ "$rc" -ne 0 ] || [ -z "$first" ]; then
        echo "bench_cold: FAILED under callgrind: ${lib%%=*} P=$p $pat d=$d $m $alg" >&2
        rm -rf "$dir"
        return 1
    fi
    "$top/scripts/callgrind_calls.py" --lib "$(basename "${lib#*=}" .so)" "$dir/cg.$first".* |
        sed "s/^/${lib%%=*} P=$p $pat d=$d ${m}_$alg /"
    rm -rf "$dir"
}
if [ "${CALLGRIND:-0}" = 1 ] && [ "$rig" = 1 ]; then
    echo "bench_cold: CALLGRIND=1 counts on shared memory only (not with RIG=1)" >&2
    exit 2
fi
if [ "${CALLGRIND:-0}" = 1 ]; then
    for p in $ps; do
        for c in ${CASES:-random:1e-4 random:1e-3 random:1e-2 identical:1e-3}; do
            callgrind "${names[0]}" "$p" "${c%%:*}" "${c#*:}" allgather auto || exit 1
            for l in "${names[@]}"; do
                for a in "${algs[@]}"; do callgrind "$l" "$p" "${c%%:*}" "${c#*:}" sparcml "$a" || exit 1; done
            done
        done
    done
    exit 0
fi

# launch P LIB ALGORITHM BENCH_ARGS...: one timed run of sparcml_bench, its
# output and the library's (SPARCML_STATS where ALGORITHM is auto)
launch() {
    local p=$1 lib=$2 alg=$3 stats=0
    shift 3
    [ "$alg" = auto ] && stats=1
    if [ "$rig" = 1 ]; then
        env LD_PRELOAD="$lib" SPARCML_ALGORITHM="$alg" SPARCML_STATS=$stats timeout -k 10 900 \
            nice -n "${NICE:-0}" "$top/scripts/netsim.sh" run "$p" -- "$bench" "$@" </dev/null 2>&1
    else
        timeout -k 10 900 nice -n "${NICE:-0}" mpiexec.mpich -n "$p" env LD_PRELOAD="$yield:$lib" \
            SPARCML_ALGORITHM="$alg" SPARCML_STATS=$stats "$bench" "$@" </dev/null 2>&1
    fi
}

# run LIB P PATTERN DENSITY ROUND METHODS ALGORITHM: rows of the long form
run() {
    local lib=$1 p=$2 pat=$3 d=$4 r=$5 methods=$6 alg=$7 o ran=""
    o=$(launch "$p" "${lib#*=}" "$alg" --n "$n" --density "$d" --pattern "$pat" --methods "$methods" \
        --reps "$reps" --cold-mib "$cold_mib") || { echo "bench_cold: FAILED: ${lib%%=*} P=$p $pat d=$d $alg" >&2; exit 1; }
    [ "$alg" = auto ] && [ "$methods" = sparcml ] && ran=$(echo "$o" | stats_mix)
    echo "$o" | awk -F, -v lib="${lib%%=*}" -v p="$p" -v pat="$pat" -v d="$d" -v r="$r" -v ran="$ran" '
        $1 ~ /_(cold|warm)$/ { m = $1; c = substr(m, length(m) - 3); m = substr(m, 1, length(m) - 5)
                               print lib "," p "," pat "," d "," m "," c "," r "," $7 "," ran }'
}

if [ "$rig" = 1 ]; then
    hosts=$(printf '%s\n' $ps | sort -n | tail -1)
    "$top/scripts/netsim.sh" up "$hosts" 1gbit >&2 || { echo "bench_cold: netsim up failed" >&2; exit 1; }
    trap '"$top/scripts/netsim.sh" down >&2' EXIT
fi
echo "lib,P,pattern,density,method,cache,round,median_s,ran" >"$out"
for r in $(seq 1 "$rounds"); do
    wait_quiet
    for p in $ps; do
        for c in ${CASES:-random:1e-4 random:1e-3 random:1e-2 identical:1e-3}; do
            for i in "${!names[@]}"; do
                lib=${names[$(((i + r) % ${#names[@]}))]}
                if [ "$lib" = "${names[0]}" ]; then
                    run "$lib" "$p" "${c%%:*}" "${c#*:}" "$r" "$baselines" auto || exit 1
                fi
                run "$lib" "$p" "${c%%:*}" "${c#*:}" "$r" sparcml auto || exit 1
                for a in "${algs[@]}"; do run "$lib" "$p" "${c%%:*}" "${c#*:}" "$r" sparcml "$a" || exit 1; done
            done
        done
    done
done | tee -a "$out" | awk -F, '
    { k = $1 "," $2 "," $3 "," $4 "," $5; t[k "," $6] = t[k "," $6] " " $8; key[k] = 1
      if ($9 != "" && $6 == "warm") { r = $9
          gsub(/ssar_recursive_double\*/, "R", r); gsub(/ssar_split_allgather\*/, "S", r)
          gsub(/dsar_split_allgather\*/, "D", r); ran[k] = ran[k] (ran[k] == "" ? "" : " ") r } }
    function median(s,   a, n, i, j, x) {
        n = split(s, a, " ")
        for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    END {
        printf "%-8s %-3s %-9s %-7s %-36s %10s %10s %9s %13s %13s  %s\n", "lib", "P", "pattern", "d", "method",
               "warm_ms", "cold_ms", "cold/warm", "ag/auto_warm", "ag/auto_cold", "ran"
        n = 0
        for (k in key) order[++n] = k
        for (i = 2; i <= n; i++) { x = order[i]; for (j = i - 1; j >= 1 && order[j] > x; j--) order[j + 1] = order[j]; order[j + 1] = x }
        for (i = 1; i <= n; i++) {
            k = order[i]; split(k, f, ",")
            w = median(t[k ",warm"]); c = median(t[k ",cold"])
            aw = ac = "-"
            if (f[5] == "sparcml_auto") {
                for (g in key) { split(g, h, ","); if (h[5] == "allgather" && h[2] == f[2] && h[3] == f[3] && h[4] == f[4]) ag = g }
                aw = sprintf("%.2f", median(t[ag ",warm"]) / w); ac = sprintf("%.2f", median(t[ag ",cold"]) / c)
            }
            printf "%-8s %-3s %-9s %-7s %-36s %10.4f %10.4f %9.2f %13s %13s  %s\n", f[1], f[2], f[3], f[4], f[5],
                   1e3 * w, 1e3 * c, c / w, aw, ac, ran[k]
        }
    }'
