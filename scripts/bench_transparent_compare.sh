#!/bin/bash
# bench_transparent_compare.sh -- transparent mode of two builds of
# libsparcml.so side by side: bench/transparent_bench on shared memory
# (MPICH, P ranks with the yield preload), the runs alternating A B, B A,
# A B ... in one session, each after a wait for an idle machine.
#
# usage: scripts/bench_transparent_compare.sh LIB_A LIB_B [OUT.csv]
#
# Cases (16M floats, 64 MiB): density 1e-3 out of place and in place,
# density 1 (dense: the vendor after the first scan) out of place; with
# DENSITIES (e.g. "0.01 0.05 0.2") those densities out of place instead.  Each
# run times CALLS calls through the library against the vendor, alternating
# call by call (transparent_bench: the mean over the calls of the slowest
# rank's time).  The table: per case and library, the median over the
# rounds of the transparent and vendor means and of their ratio, and the
# ratio of B's transparent median to A's.
#
# Environment: DENSITIES, BENCHBIN (default build/bench), YIELD (default
# build/tests/support/.libs/libyield.so), ROUNDS (default 5), P (default 2),
# CALLS (default 32), QUIET_MAX (seconds to wait for an idle machine,
# default 300), QUIET_IDLE (idle percentage, default 85).
set -uo pipefail
if [ "$#" -lt 2 ]; then sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; fi
top=$(cd "$(dirname "$0")/.." && pwd)
lib_a=$(readlink -f "$1") lib_b=$(readlink -f "$2") out=${3:-bench_transparent_compare.csv}
benchbin=${BENCHBIN:-$top/build/bench}
yield=${YIELD:-$top/build/tests/support/.libs/libyield.so}
rounds=${ROUNDS:-5} P=${P:-2} calls=${CALLS:-32}
quiet_max=${QUIET_MAX:-300} quiet_idle=${QUIET_IDLE:-85}
quiet_note() { echo "bench_transparent_compare: $*" >&2; }
. "$top/scripts/quiet.sh"
export HYDRA_CONFIG_FILE=/dev/null

cases=("d1e-3 0.001" "d1e-3_inplace 0.001 inplace" "d1 1")
if [ -n "${DENSITIES:-}" ]; then
    cases=()
    for d in $DENSITIES; do cases+=("d$d $d"); done
fi
run() { # LIB CASE DENSITY [inplace]: the benchmark's CSV line
    timeout 600 mpiexec.mpich -n "$P" env LD_PRELOAD="$yield:$1" SPARCML_TRANSPARENT=1 \
        "$benchbin/transparent_bench" 67108864 "$3" "$calls" ${4:-} | sed -n 2p
}
echo "round,lib,case,bytes,density,P,calls,vendor_mean_ms,transparent_mean_ms,ratio_mean,vendor_median_ms,transparent_median_ms,inplace" >"$out"
for r in $(seq 1 "$rounds"); do
    order="A B"
    [ $((r % 2)) -eq 0 ] && order="B A"
    for c in "${cases[@]}"; do
        set -- $c
        for lib in $order; do
            wait_quiet
            [ "$lib" = A ] && l=$lib_a || l=$lib_b
            line=$(run "$l" "$1" "$2" "${3:-}")
            echo "$r,$lib,$1,$line" >>"$out"
            quiet_note "round $r $lib $1: $line (load $(cut -d' ' -f1 /proc/loadavg))"
        done
    done
done
# The medians over the rounds, per case and library.
awk -F, 'NR > 1 { k = $3 "," $2; t[k] = t[k] " " $9; v[k] = v[k] " " $8; q[k] = q[k] " " $10 }
function med(s,   a, n, i, j, x) { n = split(s, a, " ");
    for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
END { printf "%-16s %-3s %12s %12s %8s\n", "case", "lib", "vendor_ms", "transp_ms", "ratio";
    for (k in t) { split(k, p, ","); m[k] = med(t[k]);
        printf "%-16s %-3s %12.2f %12.2f %8.3f\n", p[1], p[2], med(v[k]), m[k], med(q[k]) }
    for (k in t) { split(k, p, ","); if (p[2] == "B") printf "%-16s B/A transparent %.3f\n", p[1], m[k] / m[p[1] ",A"] } }' "$out" | sort
