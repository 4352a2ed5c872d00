#!/bin/bash
# bench_piggyback.sh -- the agreement piggybacked on the data against a
# separate agreement, side by side on the 1 Gbit/s netsim rig.
#
# usage: scripts/bench_piggyback.sh [--rounds R] [--reps N] [--out FILE]
#                                   [--ranks P] [--points "PATTERN D,..."]
#        scripts/bench_piggyback.sh --transparent [--rounds R] [--reps N]
#                                   [--out FILE] [--ranks P]
#                                   [--sizes BYTES,...] [--densities D,...]
#
# P = 8 (--ranks: 2 to 8), N = 16M floats; points (--points, e.g.
# "random 1e-3,random 1e-4"): identical indices at d = 1e-4 and random
# indices at d = 1e-4 and 1e-3 (where recursive doubling is chosen; at
# P = 3, 5, 6, 7 and d = 1e-3 SSAR split is, whose reduce-scatter the
# records then ride).  Each
# round runs, per point, one mpiexec with the allgather baseline and
# sparcml auto (SPARCML_PIGGYBACK=1, the default) and one with auto and
# SPARCML_PIGGYBACK=0, alternating, so drift of the machine hits both alike;
# each run reports the median of --reps timed calls (max over ranks).  auto
# gets the rig's measured parameters as in scripts/bench_sweep.sh.  Writes
# one CSV row per run (method, round, the bench's CSV) to FILE (default
# bench/results/piggyback_rig.csv) and prints the median ratios.
#
# --transparent: an unmodified program's dense float allreduce in
# transparent mode (bench/transparent_bench, its vendor calls alternating
# with the shim's) of 256 KiB, 1 MiB and 4 MiB at d = 1e-4 and 1e-3 (random
# positions; --sizes and --densities replace these: with
# SPARCML_ALGORITHM=ssar_split_allgather the data rides on its
# reduce-scatter),
# SPARCML_PIGGYBACK=1 and 0 in alternate runs, --reps calls
# each (default 32); the cost model measured at MPI_Init.  Writes
# bench/results/piggyback_transparent_rig.csv (default) and prints the
# medians over rounds of each run's mean call.  Root (rig).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=3 reps=15 out="" ranks=8 transparent=0 sizes=262144,1048576,4194304 densities=1e-4,1e-3
points_arg="identical 1e-4,random 1e-4,random 1e-3"
while [ $# -gt 0 ]; do
    case $1 in
    --transparent) transparent=1 reps=32; shift ;;
    --rounds) rounds=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --points) points_arg=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --densities) densities=$2; shift 2 ;;
    *) echo "usage: $0 [--transparent] [--rounds R] [--reps N] [--out FILE] [--ranks P] [--points \"PATTERN D,...\"] [--sizes BYTES,...] [--densities D,...]" >&2
       exit 2 ;;
    esac
done
[ "$transparent" = 1 ] && def=piggyback_transparent_rig.csv || def=piggyback_rig.csv
out=${out:-$top/bench/results/$def}
export NETSIM_PREFIX=${NETSIM_PREFIX:-spbench} HYDRA_CONFIG_FILE=/dev/null
"$top/scripts/setup.sh" >/dev/null
work="$top/build/bench-piggyback"
mkdir -p "$work"
cp "$top/build/src/.libs/libsparcml.so" "$work/libsparcml.so"
mpicc.mpich -O2 -std=c11 "$top/bench/sparcml_bench.c" -o "$work/sparcml_bench" -lm
# The rig's measured parameters (bench/results/rig_alpha_beta.txt; gamma:
# bench_sweep.sh's BENCH_GAMMA, the value its tables ran with).
rig() { sed -n "s/^$1=//p" "$top/bench/results/rig_alpha_beta.txt"; }
alpha=$(rig alpha_us) beta=$(rig beta_ns_per_byte) acoll=$(rig alpha_collective_us)
model=(SPARCML_ALPHA_US="$acoll" SPARCML_BETA_NS_PER_BYTE="$beta" SPARCML_GAMMA_NS_PER_ENTRY=17
       SPARCML_RANKS_PER_CORE=1)
trap '"$top/scripts/netsim.sh" down >/dev/null 2>&1 || true' EXIT
"$top/scripts/netsim.sh" up 8 1gbit >/dev/null
if [ "$transparent" = 1 ]; then
    make -C "$top/build" -s bench/transparent_bench
    echo "run,round,bytes,density,P,calls,vendor_mean_ms,transparent_mean_ms,ratio_mean,vendor_median_ms,transparent_median_ms,inplace" >"$out"
    for r in $(seq 1 "$rounds"); do
        for pig in 1 0; do
            env LD_PRELOAD="$work/libsparcml.so" SPARCML_TRANSPARENT=1 SPARCML_TRANSPARENT_MIN_BYTES=4096 \
                SPARCML_PIGGYBACK=$pig timeout 900 "$top/scripts/netsim.sh" run "$ranks" -- \
                "$top/build/bench/transparent_bench" "$sizes" "$densities" "$reps" 2>/dev/null |
                grep -v '^bytes' | sed "s/^/pig$pig,$r,/" >>"$out"
        done
    done
    awk -F, 'NR > 1 { key = $3 " B d=" $4; t[key, $1] = t[key, $1] " " $8; v[key] = v[key] " " $7; keys[key] = 1 }
        function med(s,   a, n, i, j, x) { n = split(s, a, " "); for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        END { for (k in keys) { p1 = med(t[k, "pig1"]); p0 = med(t[k, "pig0"]); vd = med(v[k])
            printf "%s: vendor %.3f ms, transparent piggybacked %.3f ms, separate %.3f ms; separate/piggyback %.2f, vendor/piggyback %.2f\n",
                k, vd, p1, p0, p0 / p1, vd / p1 } }' "$out" | sort -n
    exit 0
fi
echo "run,round,method,P,N,density,pattern,vtype,median_s,min_s,bytes_sent_per_rank,bound_disjoint_s,bound_identical_s,bound_applies,k,reps" >"$out"
IFS=, read -r -a points <<<"$points_arg"
for r in $(seq 1 "$rounds"); do
    for pt in "${points[@]}"; do
        set -- $pt
        for pig in 1 0; do
            methods=sparcml
            [ "$pig" = 1 ] && methods=allgather,sparcml
            env LD_PRELOAD="$work/libsparcml.so" "${model[@]}" SPARCML_PIGGYBACK=$pig \
                BENCH_LABEL="auto_piggyback$pig" timeout 900 \
                "$top/scripts/netsim.sh" run "$ranks" -- "$work/sparcml_bench" --n 16777216 \
                --density "$2" --pattern "$1" --reps "$reps" --alpha-us "$alpha" --beta-ns "$beta" \
                --methods "$methods" | grep -v '^method' | sed "s/^/pig$pig,$r,/" >>"$out"
        done
    done
done
# Median over rounds of each method's median, and the ratios.
awk -F, 'NR > 1 { key = $5 " " $7 " d=" $6; t[key, $3] = t[key, $3] " " $9; keys[key] = 1; m[$3] = 1 }
    function med(s,   a, n, i, j, x) { n = split(s, a, " "); for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    END { for (k in keys) {
        ag = med(t[k, "allgather"]); p1 = med(t[k, "sparcml_auto_piggyback1"]); p0 = med(t[k, "sparcml_auto_piggyback0"])
        printf "%s: allgather %.3f ms, auto (piggyback) %.3f ms, auto (separate) %.3f ms; allgather/auto %.2f, separate/piggyback %.2f\n",
            k, ag * 1e3, p1 * 1e3, p0 * 1e3, ag / p1, p0 / p1 } }' "$out"
