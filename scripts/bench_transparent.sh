#!/bin/bash
# bench_transparent.sh -- SPARCML_TRANSPARENT measured side by side with the
# vendor; results in bench/results/transparent_*.
#   1. transparent mode's passes over the dense buffer (gather, densify,
#      both) against a plain read, a memcpy and the two-pass kernels
#      (count, gather, zero fill, scatter: kernel_bench --scan);
#   2. shared memory, P = 4 and 8 (yield preload): dense data (d = 1) from
#      64 KiB to 64 MiB, the threshold lowered to 64 KiB so the small sizes
#      show what the detour costs, and 64 MiB at d = 1e-3;
#   3. the emulated Gigabit cluster (scripts/netsim.sh, needs root), P = 8:
#      the same sizes at d = 1 and 64 MiB (16M floats) at d = 1e-3;
#   4. examples/topk_sgd on the rig, P = 8: the unmodified dense program
#      without the shim, with transparent mode, and the tagged --sync=sparse.
# The rig's 8 ranks share this machine's 2 cores: its numbers are CPU-bound
# where a rank's own passes over its buffer (scan, writing the result) count.
#   scripts/bench_transparent.sh [--no-rig]
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
b="$top/build"
res="$top/bench/results"
export HYDRA_CONFIG_FILE=/dev/null
make -C "$b" -s -j2 bench/kernel_bench bench/transparent_bench examples/topk_sgd tests/support/libyield.la \
    >/dev/null || { echo "bench_transparent: build failed" >&2; exit 1; }
shim="$b/src/.libs/libsparcml.so"
yield="$b/tests/support/.libs/libyield.so"
tb="$b/bench/transparent_bench"
sizes=65536,262144,1048576,4194304,16777216,67108864
say() { echo "bench_transparent: $*" >&2; }

say "1/4 dense-buffer passes"
"$b/bench/kernel_bench" --scan | tee "$res/transparent_scan.csv"

say "2/4 shared memory"
{
    for p in 4 8; do
        timeout 900 mpiexec.mpich -n $p env LD_PRELOAD="$yield:$shim" SPARCML_TRANSPARENT=1 \
            SPARCML_TRANSPARENT_MIN_BYTES=65536 "$tb" "$sizes" 1 32 | sed "s/^/shm,/"
        timeout 900 mpiexec.mpich -n $p env LD_PRELOAD="$yield:$shim" SPARCML_TRANSPARENT=1 \
            "$tb" 67108864 0.001 16 | sed -n '2,$s/^/shm,/p'
    done
} | awk 'NR == 1 { sub(/^shm,/, "where,") } NR == 1 || !/^shm,bytes/' | tee "$res/transparent_shm.csv"

[ "${1:-}" = --no-rig ] && exit 0
say "3/4 rig, P = 8"
"$top/scripts/netsim.sh" up 8 1gbit >&2 || { say "netsim up failed"; exit 1; }
trap '"$top/scripts/netsim.sh" down >&2' EXIT
{
    env LD_PRELOAD="$shim" SPARCML_TRANSPARENT=1 SPARCML_TRANSPARENT_MIN_BYTES=65536 \
        "$top/scripts/netsim.sh" run 8 -- "$tb" "$sizes" 1 16
    env LD_PRELOAD="$shim" SPARCML_TRANSPARENT=1 "$top/scripts/netsim.sh" run 8 -- "$tb" 67108864 0.001 8 \
        | sed 1d
} | tee "$res/transparent_rig.csv"

say "4/4 topk_sgd on the rig, P = 8"
sgd=(--epochs=2 --seed=1)
{
    echo "run,final_loss,comm_s,compute_s,bytes"
    line() { grep '^summary ' | sed 's/.*final_loss=\([^ ]*\).*comm_s=\([^ ]*\) compute_s=\([^ ]*\) bytes=\([^ ]*\).*/\1,\2,\3,\4/'; }
    echo "dense_no_shim,$("$top/scripts/netsim.sh" run 8 -- "$b/examples/topk_sgd" --sync=dense "${sgd[@]}" | line)"
    echo "dense_transparent,$(env LD_PRELOAD="$shim" SPARCML_TRANSPARENT=1 \
        "$top/scripts/netsim.sh" run 8 -- "$b/examples/topk_sgd" --sync=dense "${sgd[@]}" | line)"
    echo "sparse_tagged,$(env LD_PRELOAD="$shim" \
        "$top/scripts/netsim.sh" run 8 -- "$b/examples/topk_sgd" --sync=sparse "${sgd[@]}" | line)"
} | tee "$res/transparent_sgd_rig.csv"
