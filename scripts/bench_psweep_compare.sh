#!/bin/bash
# bench_psweep_compare.sh -- two builds of libsparcml.so side by side on the
# emulated Gigabit cluster (scripts/netsim.sh, needs root): the P sweep of
# bench/RESULTS.md, P = 2 .. 8, N = 16M floats, density 1e-3, random
# indices, with no cost-model variable set (what a user gets: each build's
# own defaults, or what it measures at MPI_Init).
#
# usage: scripts/bench_psweep_compare.sh LIB_A LIB_B [OUT.csv]
#
# Per P, ROUNDS rounds; each round runs sparcml_bench once with each build
# (a fresh launch each, A first in odd rounds and B first in even ones, so
# that the machine's drift and the order bias both alike), --methods
# allgather,sparcml --reps REPS: the library's auto choice and the allgather
# baseline in interleaved repetitions.  The table: per P, the median over
# the rounds of each run's median call time (the slowest rank's), B / A, and
# the allgather baseline over B.  The rig's 8 ranks share this machine's 2
# cores: at P >= 5 the calls are CPU-bound.
#
# Environment: ROUNDS (default 3), REPS (default 20), PS (default
# "2 3 4 5 6 7 8"), BENCHBIN (default build/bench).
# Output: the table on stdout; OUT.csv (default psweep_compare.csv) holds
# every run: P,round,lib,method,median_s,min_s,algorithm (the one the
# library's calls ran most often, from SPARCML_VERBOSE=1).
set -uo pipefail
if [ "$#" -lt 2 ] || [ "$#" -gt 3 ]; then sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; fi
top=$(cd "$(dirname "$0")/.." && pwd)
lib_a=$(readlink -f "$1") lib_b=$(readlink -f "$2") out=${3:-psweep_compare.csv}
rounds=${ROUNDS:-3} reps=${REPS:-20} ps=${PS:-2 3 4 5 6 7 8}
bench=${BENCHBIN:-$top/build/bench}/sparcml_bench
for f in "$lib_a" "$lib_b" "$bench"; do [ -f "$f" ] || { echo "bench_psweep_compare: no $f" >&2; exit 2; }; done
export HYDRA_CONFIG_FILE=/dev/null
"$top/scripts/netsim.sh" up 8 1gbit >&2 || { echo "bench_psweep_compare: netsim up failed" >&2; exit 1; }
trap '"$top/scripts/netsim.sh" down >&2' EXIT

echo "P,round,lib,method,median_s,min_s,algorithm" >"$out"
# one P ROUND LIB_NAME LIB: one run, its rows appended to OUT
one() {
    local o alg
    o=$(env LD_PRELOAD="$4" SPARCML_VERBOSE=1 timeout -k 10 600 "$top/scripts/netsim.sh" run "$1" -- "$bench" --n 16777216 \
        --density 1e-3 --pattern random --reps "$reps" --methods allgather,sparcml) ||
        echo "bench_psweep_compare: P=$1 $3 failed" >&2
    # the algorithm the timed calls ran most often (SPARCML_VERBOSE=1 lines)
    alg=$(echo "$o" | sed -n 's/^sparcml: allreduce algorithm=\([a-z_]*\).*/\1/p' | sort | uniq -c | sort -rn |
        awk 'NR == 1 { print $2 }')
    echo "$o" | awk -F, -v p="$1" -v r="$2" -v lib="$3" -v alg="${alg:-NA}" \
        '$1 == "allgather" { print p "," r "," lib ",allgather," $7 "," $8 ",NA" }
         $1 ~ /^sparcml_/ { print p "," r "," lib "," $1 "," $7 "," $8 "," alg }' >>"$out"
}
for p in $ps; do
    for r in $(seq 1 "$rounds"); do
        echo "bench_psweep_compare: P=$p round $r" >&2
        if ((r % 2)); then one "$p" "$r" A "$lib_a"; one "$p" "$r" B "$lib_b"
        else one "$p" "$r" B "$lib_b"; one "$p" "$r" A "$lib_a"; fi
    done
done

echo "A = $lib_a"
echo "B = $lib_b"
echo "| P | A auto (ms) | B auto (ms) | B / A | allgather (ms) | allgather / B | A ran | B ran |"
echo "|---|---|---|---|---|---|---|---|"
/usr/bin/python3 - "$out" <<'EOF'
import csv, statistics, sys
t, ran = {}, {}
for r in csv.DictReader(open(sys.argv[1])):
    m = "allgather" if r["method"] == "allgather" else r["lib"]
    t.setdefault((int(r["P"]), m), []).append(float(r["median_s"]))
    if m != "allgather":
        ran.setdefault((int(r["P"]), m), set()).add(r["algorithm"])
for p in sorted({k[0] for k in t}):
    a, b, g = (statistics.median(t.get((p, m), [float("nan")])) * 1e3 for m in ("A", "B", "allgather"))
    print("| %d | %.2f | %.2f | %.2f | %.2f | %.2f | %s | %s |" % (p, a, b, b / a, g, g / b,
          "/".join(sorted(ran.get((p, "A"), {"NA"}))), "/".join(sorted(ran.get((p, "B"), {"NA"})))))
EOF
