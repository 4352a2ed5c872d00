#!/bin/bash
# bench_split_gather.sh -- a split algorithm with each of its gathers
# forced (SPARCML_SPLIT_GATHER=vendor|doubling|ring) and with the model's
# pick (auto), side by side in one run.
#
# usage: scripts/bench_split_gather.sh [OUT.csv]
#
# MPICH on shared memory with the yield preload (or, with RIG=1, on the
# emulated Gigabit cluster, which must be up: scripts/netsim.sh up 8), P in $PS, one tagged float
# MPI_Allreduce of N = 16M entries at each density of $DENSITIES (random
# indices), SPARCML_ALGORITHM=$ALG (sparcml_bench --methods
# sparcml: per run the median over REPS of the slowest rank).  Each round
# runs every point with every gather of $GATHERS, the order rotating
# between rounds (a later slot can run slower on a busy machine); the
# table gives per point the median over the rounds of each gather, the
# gather auto ran (rank 0's verbose line), auto's time over the fastest
# forced one, and the gathered bytes (result_nnz; 8 bytes an entry, 4 a
# value where the result is dense, from N/2 entries).  The script waits
# (at most QUIET_MAX s, default 120) for 80 % idle CPUs before each round.
#
# Environment: BENCHBIN (default build/bench), YIELD (default
# build/tests/support/.libs/libyield.so), LIB (default
# build/src/.libs/libsparcml.so), ROUNDS (default 5), REPS (default 20),
# PS (default "4 8"), DENSITIES (default "1e-3 1e-4"), N (default 16777216),
# ALG (default ssar_split_allgather; dsar_split_allgather gathers its dense
# slices in place where the result is dense), GATHERS (default "vendor
# doubling ring auto"), RIG (default 0).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bench=${BENCHBIN:-$top/build/bench}/sparcml_bench
yield=${YIELD:-$top/build/tests/support/.libs/libyield.so}
lib=${LIB:-$top/build/src/.libs/libsparcml.so}
rounds=${ROUNDS:-5} reps=${REPS:-20} n=${N:-16777216}
out=${1:-/dev/null}
# launch P CMD...: P ranks of CMD on the platform
case ${RIG:-0} in
0) launch() { local p=$1; shift; timeout -k 10 600 mpiexec.mpich -n "$p" env LD_PRELOAD="$yield:$lib" "$@"; } ;;
# (the rig adds its helper to the LD_PRELOAD it is given: an LD_PRELOAD
# set inside the rank command would replace the helper)
1) launch() { local p=$1; shift; env LD_PRELOAD="$lib" "$top/scripts/netsim.sh" run "$p" -- env "$@"; } ;;
*) echo "bench_split_gather: RIG is 0 or 1, not ${RIG}" >&2; exit 2 ;;
esac
export HYDRA_CONFIG_FILE=/dev/null
quiet_max=${QUIET_MAX:-120} quiet_idle=80
quiet_note() { echo "# $*" >&2; }
. "$top/scripts/quiet.sh"

# one P D GATHER ROUND: appends "P,density,gather,round,median_s,result_nnz,ran"
one() {
    local o t nnz ran
    o=$(launch "$1" SPARCML_VERBOSE=1 \
        SPARCML_ALGORITHM="${ALG:-ssar_split_allgather}" SPARCML_SPLIT_GATHER="$3" BENCH_LABEL="$3" \
        "$bench" --n "$n" --density "$2" --pattern random --methods sparcml --reps "$reps") ||
        { echo "FAILED: P=$1 d=$2 gather=$3" >&2; exit 1; }
    t=$(echo "$o" | awk -F, -v m="sparcml_$3" '$1 == m { print $7; exit }')
    ran=$(echo "$o" | sed -n 's/^sparcml: allreduce.* gather=\([a-z]*\).*/\1/p' | tail -1)
    [ "$3" = auto ] || [ "$ran" = "$3" ] || { echo "P=$1 d=$2: the $3 gather did not run" >&2; exit 1; }
    nnz=$(echo "$o" | sed -n 's/.*result_nnz=\([0-9]*\).*/\1/p' | tail -1)
    echo "$1,$2,$3,$4,$t,$nnz,$ran" | tee -a "$out"
}

read -ra gathers <<<"${GATHERS:-vendor doubling ring auto}"
echo "P,density,gather,round,median_s,result_nnz,ran" >"$out"
for r in $(seq 1 "$rounds"); do
    wait_quiet
    for p in ${PS:-4 8}; do
        for d in ${DENSITIES:-1e-3 1e-4}; do
            for i in "${!gathers[@]}"; do
                one "$p" "$d" "${gathers[$(((i + r) % ${#gathers[@]}))]}" "$r"
            done
        done
    done
done | awk -F, '
    { t[$1 "," $2 "," $3] = t[$1 "," $2 "," $3] " " $5; nnz[$1 "," $2] = $6; key[$1 "," $2] = 1
      if ($3 == "auto") ran[$1 "," $2] = $7 }
    function median(s,   a, n, i, j, x) {
        n = split(s, a, " ")
        for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    END {
        ng = split(gathers, g, " ")
        printf "%-3s %-8s", "P", "density"
        for (i = 1; i <= ng; i++) printf " %12s", g[i] "_ms"
        printf " %10s %10s %12s\n", "auto_ran", "auto/best", "gathered_MB"
        for (k in key) {
            split(k, f, ",")
            printf "%-3s %-8s", f[1], f[2]
            best = 0
            for (i = 1; i <= ng; i++) {
                m[i] = median(t[k "," g[i]])
                printf " %12.2f", 1e3 * m[i]
                if (g[i] != "auto" && (best == 0 || m[i] < best)) best = m[i]
                if (g[i] == "auto") a = m[i]
            }
            picked = "-"; regret = "-"
            if (k in ran) { picked = ran[k]; if (best > 0) regret = sprintf("%.2f", a / best) }
            printf " %10s %10s %12.2f\n", picked, regret, (nnz[k] >= n / 2 ? n * 4 : nnz[k] * 8) / 1e6
        }
    }' n="$n" gathers="${GATHERS:-vendor doubling ring auto}"
