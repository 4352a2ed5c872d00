#!/bin/bash
# bench_pipeline.sh -- pipelined recursive doubling on the emulated Gigabit
# rig (or one machine's shared memory), side by side in one run: for every P and
# density, alternating in each round, the library with pipelining off
# (SPARCML_PIPELINE_CHUNKS=1: whole-message rounds) and on
# (the cost model's chunks), for auto and for recursive doubling forced;
# SSAR_Split_allgather forced as the alternative the selector weighs.
#
#   scripts/bench_pipeline.sh [--rounds R] [--ps "2 3 ... 8"] [--densities "0.001 0.01"]
#                             [--reps N] [--tag T] [--shm] [--n ELEMS]
#
# Runs ELEMS floats (default 16M) and writes bench/results/pipeline_rig$T.csv,
# or with --shm pipeline_shm$T.csv (the ranks on this machine's shared
# memory with the tests' yield preload, the parameters measured at
# MPI_Init): one line per run (round, setting,
# the chunks the model chose, then sparcml_bench's CSV line); prints the
# medians over the rounds with their ratio to the Lemma 5.1 bound (alpha
# 20.05 us, beta 8.31 ns/B: bench/results/rig_alpha_beta.txt).  The rig needs
# root (scripts/netsim.sh); the rig's P = 8 runs are CPU-bound on 2 cores.
# On shared memory the bound's column still holds the rig's.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=3 ps="2 3 4 5 6 7 8" densities="0.001 0.01" reps=10 tag="" plat=rig elems=16777216
while [ "$#" -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --ps) ps=$2; shift 2 ;;
    --densities) densities=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --shm) plat=shm; shift ;;
    --n) elems=$2; shift 2 ;;
    *) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
    esac
done
shim=$top/build/src/.libs/libsparcml.so
export HYDRA_CONFIG_FILE=/dev/null
bench=$top/build/bench/sparcml_bench
yield=$top/build/tests/support/.libs/libyield.so
csv=$top/bench/results/pipeline_$plat$tag.csv
"$top/scripts/setup.sh" >/dev/null || exit 1 # builds build/ (MPICH) if needed
make -C "$top/build" -s bench/sparcml_bench tests/support/libyield.la >/dev/null || exit 1
if [ "$plat" = rig ]; then
    pmax=0
    for p in $ps; do [ "$p" -gt "$pmax" ] && pmax=$p; done
    "$top/scripts/netsim.sh" up "$pmax" 1gbit >/dev/null 2>&1 || { echo "bench_pipeline: netsim up failed" >&2; exit 1; }
    trap '"$top/scripts/netsim.sh" down >/dev/null 2>&1' EXIT
fi

# run P D ALG CHUNKS: one benchmark run; prints "CHOSEN_CHUNKS,CSV line".
run() {
    local p=$1 d=$2 alg=$3 chunks=$4 log line used launch
    local args=(--n "$elems" --density "$d" --reps "$reps" --warmup 2 --methods sparcml --alpha-us 20.05 --beta-ns 8.31)
    if [ "$plat" = rig ]; then
        launch=(env LD_PRELOAD="$shim" "$top/scripts/netsim.sh" run "$p" --)
    else
        launch=(mpiexec.mpich -n "$p" env LD_PRELOAD="$yield:$shim")
    fi
    log=$(env SPARCML_ALGORITHM="$alg" SPARCML_PIPELINE_CHUNKS="$chunks" SPARCML_VERBOSE=1 \
        timeout -k 10 600 "${launch[@]}" "$bench" "${args[@]}" 2>/dev/null)
    used=$(echo "$log" | sed -n 's/^sparcml: allreduce .*pipeline_chunks=\([0-9]*\).*/\1/p' | tail -1)
    line=$(echo "$log" | grep -E "^sparcml_[a-z_]+,$p," | tail -1)
    echo "${used:-NA},${line:-NA}"
}

[ -f "$csv" ] || echo "round,setting,chunks_used,method,P,N,density,pattern,vtype,median_s,min_s,bytes_sent_per_rank,bound_disjoint_s,bound_identical_s,bound_applies,k,reps" >"$csv"
total=$((rounds * $(echo $ps | wc -w) * $(echo $densities | wc -w) * 5)) n=0
for r in $(seq 1 "$rounds"); do
    for p in $ps; do
        for d in $densities; do
            for setting in "auto 1" "auto 0" "ssar_recursive_double 1" "ssar_recursive_double 0" "ssar_split_allgather 0"; do
                set -- $setting
                n=$((n + 1))
                printf 'bench_pipeline: [%d/%d] round %d P=%d d=%s %s chunks=%s\n' "$n" "$total" "$r" "$p" "$d" "$1" \
                    "$([ "$2" = 0 ] && echo model || echo "$2")" >&2
                echo "$r,$1:$([ "$2" = 0 ] && echo model || echo off),$(run "$p" "$d" "$1" "$2")" >>"$csv"
            done
        done
    done
done

# Medians over the rounds, and against the bound (disjoint: random indices).
echo "setting P density chunks_used median_ms bound_ms median/bound"
awk -F, 'NR > 1 && $10 != "" && $10 != "NA" {
    key = $2 " " $5 " " $7; n[key]++; v[key, n[key]] = $10 * 1e3; b[key] = $13 * 1e3; c[key] = $3
} END {
    for (k in n) {
        m = n[k]
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[k, j] < v[k, i]) { t = v[k, i]; v[k, i] = v[k, j]; v[k, j] = t }
        med = (m % 2) ? v[k, (m + 1) / 2] : (v[k, m / 2] + v[k, m / 2 + 1]) / 2
        printf "%s %s %.2f %.2f %.2f\n", k, c[k], med, b[k], med / b[k]
    }
}' "$csv" | sort -k3,3g -k2,2n -k1,1
