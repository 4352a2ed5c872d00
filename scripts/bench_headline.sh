#!/bin/bash
# bench_headline.sh -- the seeds' end-to-end result (SparCML Table 2, Greina,
# Gigabit Ethernet, 8 nodes, logistic regression: Webspam 20.26x, URL 12.65x
# end to end) reproduced with examples/topk_sgd on the emulated Gigabit
# cluster (scripts/netsim.sh, needs root), P = 8.
#
# Two synthetic data sets shaped like the real ones (feature count and mean
# non-zeros per sample; see bench/RESULTS.md for how they differ):
#   url      3,231,961 features, ~116 non-zeros per sample, binary values;
#   webspam  16,609,143 features, ~3,728 non-zeros per sample, rows scaled
#            to unit norm (--unit-rows);
# each trained three ways, the same data and seed: --sync=dense without the
# shim (the vendor's MPI_FLOAT allreduce), --sync=sparse with libsparcml
# preloaded (lossless: the same loss as dense, to the summation order), and
# --sync=topk (k = 0.1 % of the features per rank, with error feedback).
#
# Output: bench/results/headline_rig.csv (one row per data set, mode and
# epoch, and the summaries), headline_rig.png (time per epoch, compute and
# communication stacked; bench/headline_plot.py, needs python3-matplotlib),
# and the table printed at the end.
# The rig's 8 ranks share this machine's 2 cores: compute times are those of
# 4 ranks per core.
#   scripts/bench_headline.sh [EPOCHS]      (default 3)
# HEADLINE_REFERENCE=LIB runs sparse and top-k a second time with another
# build of libsparcml.so (modes sparse_ref and topk_ref), in turn with this
# build (the reference first for URL-like, second for Webspam-like): two
# builds side by side in one run, on the same data, binary and rig.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
b="$top/build"
res="$top/bench/results"
epochs=${1:-3}
export HYDRA_CONFIG_FILE=/dev/null
make -C "$b" -s -j2 examples/topk_sgd >/dev/null || { echo "bench_headline: build failed" >&2; exit 1; }
shim="$b/src/.libs/libsparcml.so"
ref=${HEADLINE_REFERENCE:-}
[ -z "$ref" ] || [ -f "$ref" ] || { echo "bench_headline: no such library: $ref" >&2; exit 2; }
sgd="$b/examples/topk_sgd"
say() { echo "bench_headline: $*" >&2; }

# name: topk_sgd options of the data set
declare -A data=(
    [url]="--features=3231961 --nnz=116 --samples=4000 --batch=250"
    [webspam]="--features=16609143 --nnz=3728 --samples=1000 --batch=50 --unit-rows"
)
order=(url webspam)

"$top/scripts/netsim.sh" up 8 1gbit >&2 || { say "netsim up failed"; exit 1; }
trap '"$top/scripts/netsim.sh" down >&2' EXIT

csv="$res/headline_rig.csv"
echo "dataset,mode,epoch,loss,acc,compute_s,comm_s,bytes" >"$csv"
run() { # dataset mode preload args...
    local ds=$1 mode=$2 pre=$3 log
    shift 3
    log=$(mktemp)
    say "$ds $mode: topk_sgd ${data[$ds]} $* --epochs=$epochs"
    # shellcheck disable=SC2086  # the data set's options are words
    env ${pre:+LD_PRELOAD="$pre"} "$top/scripts/netsim.sh" run 8 -- "$sgd" ${data[$ds]} "$@" \
        --epochs="$epochs" --seed=1 >"$log" || { say "$ds $mode failed"; cat "$log" >&2; }
    awk -v ds="$ds" -v m="$mode" '/^epoch/ && $2 > 0 { print ds "," m "," $2 "," $4 "," $6 "," $8 "," $10 "," $12 }' \
        "$log" >>"$csv"
    sed -n "s/^summary .*final_loss=\([^ ]*\) final_acc=\([^ ]*\) comm_s=\([^ ]*\) compute_s=\([^ ]*\) bytes=\([^ ]*\)/$ds,$mode,total,\1,\2,\4,\3,\5/p" \
        "$log" >>"$csv"
    rm -f "$log"
}
# modes DATASET SUFFIX LIB: the library's sparse and top-k runs
modes() {
    run "$1" "sparse$2" "$3" --sync=sparse
    run "$1" "topk$2" "$3" --sync=topk --density=0.001
}
for ds in "${order[@]}"; do
    run "$ds" dense "" --sync=dense
    if [ -n "$ref" ] && [ "$ds" = url ]; then modes "$ds" _ref "$ref"; fi
    modes "$ds" "" "$shim"
    if [ -n "$ref" ] && [ "$ds" != url ]; then modes "$ds" _ref "$ref"; fi
done

# The table: per data set, each mode's totals and its speedups over dense.
echo
printf '%-8s %-10s %14s %10s %10s %10s %9s %9s\n' data mode final_loss compute_s comm_s total_s "e2e x" "comm x"
awk -F, '$3 == "total" { loss[$1,$2] = $4; cp[$1,$2] = $6; cm[$1,$2] = $7; ds[$1] = 1 }
    END {
        split("url webspam", o, " ")
        split("dense sparse sparse_ref topk topk_ref", m, " ")
        for (i = 1; i <= 2; i++) for (j = 1; j <= 5; j++) {
            d = o[i]; k = m[j]
            if (!((d, k) in loss)) continue
            t = cp[d,k] + cm[d,k]; td = cp[d,"dense"] + cm[d,"dense"]
            printf "%-8s %-10s %14s %10.2f %10.2f %10.2f %9.2f %9.2f\n", d, k, loss[d,k], cp[d,k], cm[d,k], t,
                   td / t, cm[d,"dense"] / cm[d,k]
        }
    }' "$csv"

if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    /usr/bin/python3 "$top/bench/headline_plot.py" "$csv" "$res/headline_rig.png"
else
    say "no matplotlib (python3-matplotlib), no plot"
fi
say "wrote $csv"
