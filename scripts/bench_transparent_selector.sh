#!/bin/bash
# bench_transparent_selector.sh -- transparent mode's choice between the
# vendor and the sparse algorithms, against each of them forced, side by
# side with the vendor in every run: P ranks on shared memory (default 2,
# a core each), 16M floats at random positions, densities 1e-3 .. 1.
#   auto         the library's choice, the vendor's blocking calls timed
#   model_only   the same with the whole cost model set (no timing): the
#                values the calibration measures on this machine, read from
#                a SPARCML_VERBOSE run
#   forced       ssar_recursive_double, ssar_split_allgather,
#                dsar_split_allgather; dense is the vendor column itself
# Each run makes CALLS calls (default 40): after a vendor choice the next
# 15 go to the vendor before the agreement carries its time, so a run's
# median is its steady state, its mean includes that window.
# CSV (bench/results/transparent_vendor_timed_shm.csv): config, density,
# vendor and transparent mean and median ms; regret: auto's median over
# the fastest median of the forced algorithms and the vendor.
#   scripts/bench_transparent_selector.sh [P] [CALLS]
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
b="$top/build"
P=${1:-2}
calls=${2:-40}
out="$top/bench/results/transparent_vendor_timed_shm.csv"
export HYDRA_CONFIG_FILE=/dev/null
make -C "$b" -s -j2 bench/transparent_bench >/dev/null || { echo "build failed" >&2; exit 1; }
shim="$b/src/.libs/libsparcml.so"
run() { timeout 1200 mpiexec.mpich -n "$P" env LD_PRELOAD="$shim" SPARCML_TRANSPARENT=1 "$@"; }
model=$(run SPARCML_VERBOSE=1 "$b/bench/transparent_bench" 1048576 0.001 1 2>/dev/null |
    sed -n 's/.*calibrated alpha=\([^ ]*\) us beta=\([^ ]*\) ns\/B gamma=\([^ ]*\) ns.*/SPARCML_ALPHA_US=\1 SPARCML_BETA_NS_PER_BYTE=\2 SPARCML_GAMMA_NS_PER_ENTRY=\3/p')
echo "bench_transparent_selector: model_only with $model" >&2
{
    echo "config,density,P,calls,vendor_mean_ms,transparent_mean_ms,vendor_median_ms,transparent_median_ms"
    for d in 0.001 0.01 0.1 1; do
        for cfg in auto model_only ssar_recursive_double ssar_split_allgather dsar_split_allgather; do
            case $cfg in
            auto) envs=() ;;
            model_only) read -ra envs <<<"$model" ;;
            *) envs=(SPARCML_ALGORITHM=$cfg) ;;
            esac
            echo "bench_transparent_selector: d=$d $cfg" >&2
            run ${envs[@]+"${envs[@]}"} "$b/bench/transparent_bench" 67108864 "$d" "$calls" | sed -n 2p |
                awk -F, -v c="$cfg" '{ printf "%s,%s,%s,%s,%s,%s,%s,%s\n", c, $2, $3, $4, $5, $6, $8, $9 }'
        done
    done
} | tee "$out"
awk -F, 'NR > 1 { d = $2; if ($1 == "auto" || $1 == "model_only") got[$1, d] = $8
                  else if (!(d in best) || $8 < best[d]) best[d] = $8
                  if (!(d in vbest) || $7 < vbest[d]) vbest[d] = $7; ds[d] = 1 }
     END { for (d in ds) { b = best[d] < vbest[d] ? best[d] : vbest[d]
                           printf "d=%s: regret auto %.2f, model only %.2f\n", d, got["auto", d] / b, got["model_only", d] / b } }' "$out" >&2
