#!/bin/bash
# bench_overlap.sh -- non-blocking tagged allreduces against blocking ones
# on the emulated Gigabit cluster (scripts/netsim.sh, needs root), P = 8
#
#  1. bench/overlap_bench: N = 16M floats, d = 1e-3, random indices; a loop
#     of (start, compute for about the allreduce's own time, wait) against
#     (compute, then allreduce), the application testing every 100 us and
#     not testing at all; overlap efficiency (t_blocking - t_nonblocking) /
#     min(t_comm, t_compute); the computation is arithmetic (spin) or, to
#     separate the library from the 2 saturated cores, a sleep (work done
#     elsewhere, e.g. on an accelerator);
#  2. examples/topk_sgd --sync=sparse (URL-like data, as bench_headline.sh):
#     one blocking allreduce per step against --chunks=4 (the gradient in 4
#     parts, each reduced with MPI_Iallreduce while the next is computed),
#     epoch time and loss;
#  3. the blocking path side by side with the library of BASE (a commit,
#     default 82b69ff: before schedules), the same benchmark binary,
#     alternating: d = 1e-3 random and d = 1e-4 identical, auto.
# The rig's 8 ranks share this machine's 2 cores (4 ranks per core): every
# number here depends on that.
#   scripts/bench_overlap.sh [BASE_LIB]   (BASE_LIB: a libsparcml.so built
#                                          from the base commit; part 3 is
#                                          skipped without it)
# Output: bench/results/overlap_rig.csv, overlap_sgd_rig.csv,
# overlap_side_by_side.txt, and the summary on stdout.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
b="$top/build"
res="$top/bench/results"
base_lib=${1:-}
export HYDRA_CONFIG_FILE=/dev/null
make -C "$b" -s -j2 bench/overlap_bench bench/sparcml_bench examples/topk_sgd >/dev/null \
    || { echo "bench_overlap: build failed" >&2; exit 1; }
shim="$b/src/.libs/libsparcml.so"
say() { echo "bench_overlap: $*" >&2; }

"$top/scripts/netsim.sh" up 8 1gbit >&2 || { say "netsim up failed"; exit 1; }
trap '"$top/scripts/netsim.sh" down >&2' EXIT

# 1. overlap efficiency
csv="$res/overlap_rig.csv"
rm -f "$csv"
for compute in spin sleep; do
    for test_us in 100 0; do
        say "overlap_bench P=8 N=16M d=1e-3 compute=$compute test every ${test_us} us"
        env LD_PRELOAD="$shim" "$top/scripts/netsim.sh" run 8 -- "$b/bench/overlap_bench" --dim=16777216 \
            --density=1e-3 --iters=15 --test-us=$test_us --compute=$compute --csv >"$csv.part" \
            || { say "overlap_bench failed"; cat "$csv.part" >&2; }
        if [ -s "$csv" ]; then tail -n +2 "$csv.part" >>"$csv"; else cat "$csv.part" >"$csv"; fi
    done
done
rm -f "$csv.part"

# 2. topk_sgd, blocking against chunked non-blocking
sgd_csv="$res/overlap_sgd_rig.csv"
echo "run,chunks,final_loss,compute_s,comm_s,total_s" >"$sgd_csv"
url="--features=3231961 --nnz=116 --samples=4000 --batch=250 --epochs=3 --seed=1 --sync=sparse"
for round in 1 2; do
    for chunks in 1 4; do
        say "topk_sgd URL-like sparse --chunks=$chunks (round $round)"
        # shellcheck disable=SC2086  # the options are words
        line=$(env LD_PRELOAD="$shim" "$top/scripts/netsim.sh" run 8 -- "$b/examples/topk_sgd" $url \
            --chunks=$chunks | grep '^summary')
        echo "$line" | sed -n "s/.*final_loss=\([^ ]*\) .*comm_s=\([^ ]*\) compute_s=\([^ ]*\) .*/$round,$chunks,\1,\3,\2/p" \
            | awk -F, '{ printf "%s,%.4f\n", $0, $4 + $5 }' >>"$sgd_csv"
    done
done

# 3. the blocking path, side by side with the base library
sbs="$res/overlap_side_by_side.txt"
if [ -n "$base_lib" ]; then
    {
        echo "# P = 8, N = 16M floats, 1gbit rig; old = $base_lib, new = $shim; same sparcml_bench binary"
        echo "round case lib median_ms min_ms"
        for round in 1 2 3; do
            for c in "1e-3 random" "1e-4 identical"; do
                set -- $c
                for lib in old new; do
                    l=$shim; [ "$lib" = old ] && l=$base_lib
                    env LD_PRELOAD="$l" "$top/scripts/netsim.sh" run 8 -- "$b/bench/sparcml_bench" --n 16777216 \
                        --density "$1" --pattern "$2" --reps 10 --methods sparcml 2>/dev/null \
                        | awk -F, -v r=$round -v c="d=$1,$2" -v l=$lib \
                            '$1 ~ /^sparcml/ { printf "%d %s %s %.2f %.2f\n", r, c, l, $7 * 1e3, $8 * 1e3 }'
                done
            done
        done
    } >"$sbs"
fi

echo
echo "overlap_bench (ms; efficiency = (blocking - nonblocking) / min(comm, compute)):"
column -s, -t "$csv"
echo
echo "topk_sgd URL-like, sparse, 3 epochs:"
column -s, -t "$sgd_csv"
[ -n "$base_lib" ] && { echo; cat "$sbs"; }
