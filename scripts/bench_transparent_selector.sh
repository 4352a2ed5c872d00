#!/bin/bash
# bench_transparent_selector.sh -- transparent mode's choice between the
# vendor and the sparse algorithms, against each of them forced, side by
# side with the vendor in every run: P ranks on shared memory (default 2,
# a core each), 16M floats at random positions, densities 1e-3 .. 1.
#   auto         the library's choice, its blocking calls timed (the
#                vendor's and the algorithms': docs/design.md, "Timed prices")
#   model_only   the same with the whole cost model set (no timing): the
#                values the calibration measures on this machine, read from
#                a SPARCML_VERBOSE run
#   forced       ssar_recursive_double, ssar_split_allgather,
#                dsar_split_allgather; dense is the vendor column itself
# Each run makes WARMUP untimed calls first (default 25: after a vendor
# choice the next 15 go to the vendor, then the agreement carries its time;
# an algorithm that runs slower than priced is found out in two runs, its
# first paying its pools' first touch, and the next one tried in two
# more), then CALLS timed
# ones (default 16): the steady state.  ROUNDS rounds (default 3), each
# with the configurations in another order.
# CSV (bench/results/transparent_timed_shm.csv): round, config,
# density, vendor and transparent mean and median ms.  On stderr the
# regret: auto's median over rounds of its medians, over the fastest such
# median of the forced algorithms and the vendor.
#   [WARMUP=W] [DENSITIES="D ..."] [CONFIGS="C ..."] [OUT=CSV] \
#       scripts/bench_transparent_selector.sh [P] [CALLS] [ROUNDS]
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
b="$top/build"
P=${1:-2}
calls=${2:-16}
rounds=${3:-3}
warmup=${WARMUP:-25}
out=${OUT:-$top/bench/results/transparent_timed_shm.csv}
densities=${DENSITIES:-0.001 0.01 0.1 1}
export HYDRA_CONFIG_FILE=/dev/null
make -C "$b" -s -j2 bench/transparent_bench >/dev/null || { echo "build failed" >&2; exit 1; }
shim="$b/src/.libs/libsparcml.so"
run() { timeout 1200 mpiexec.mpich -n "$P" env LD_PRELOAD="$shim" SPARCML_TRANSPARENT=1 "$@"; }
model=$(run SPARCML_VERBOSE=1 "$b/bench/transparent_bench" 1048576 0.001 1 2>/dev/null |
    sed -n 's/.*calibrated alpha=\([^ ]*\) us beta=\([^ ]*\) ns\/B gamma=\([^ ]*\) ns.*/SPARCML_ALPHA_US=\1 SPARCML_BETA_NS_PER_BYTE=\2 SPARCML_GAMMA_NS_PER_ENTRY=\3/p')
echo "bench_transparent_selector: model_only with $model" >&2
read -ra configs <<<"${CONFIGS:-auto model_only ssar_recursive_double ssar_split_allgather dsar_split_allgather}"
{
    echo "round,config,density,P,calls,vendor_mean_ms,transparent_mean_ms,vendor_median_ms,transparent_median_ms"
    for r in $(seq "$rounds"); do
        for d in $densities; do
            for i in "${!configs[@]}"; do
                cfg=${configs[$(((i + r - 1) % ${#configs[@]}))]}
                case $cfg in
                auto) envs=() ;;
                model_only) read -ra envs <<<"$model" ;;
                *) envs=(SPARCML_ALGORITHM=$cfg) ;;
                esac
                echo "bench_transparent_selector: round $r d=$d $cfg" >&2
                run ${envs[@]+"${envs[@]}"} "$b/bench/transparent_bench" 67108864 "$d" "$calls" warmup="$warmup" |
                    sed -n 2p | awk -F, -v r="$r" -v c="$cfg" \
                    '{ printf "%s,%s,%s,%s,%s,%s,%s,%s,%s\n", r, c, $2, $3, $4, $5, $6, $8, $9 }'
            done
        done
    done
} | tee "$out"
python3 - "$out" >&2 <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = lambda xs: statistics.median(xs)
for d in sorted({r["density"] for r in rows}, key=float):
    by = {}
    for r in rows:
        if r["density"] == d:
            by.setdefault(r["config"], []).append(float(r["transparent_median_ms"]))
            by.setdefault("vendor", []).append(float(r["vendor_median_ms"]))
    m = {c: med(v) for c, v in by.items()}
    best = min(v for c, v in m.items() if c not in ("auto", "model_only"))
    regret = " ".join(f"{c} {m[c] / best:.2f}" for c in ("auto", "model_only") if c in m)
    print(f"d={d}: " + " ".join(f"{c} {v:.1f}" for c, v in sorted(m.items())) + f" | regret {regret}")
PY
