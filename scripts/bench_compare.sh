#!/bin/bash
# bench_compare.sh -- two builds of libsparcml.so side by side, in one run.
#
# usage: scripts/bench_compare.sh LIB_A LIB_B [OUT.csv]
#
# Measures LIB_A (the reference) and LIB_B (the candidate) with the same
# benchmark program on the same problems, alternating A and B in one
# session, so that slow drift of the machine affects both alike.  Each round
# runs every case once with each library (a fresh mpiexec each), A first in
# odd rounds and B first in even ones: the second run of a pair can find the
# machine in another state (page cache, frequency, the other run's exit), so
# a fixed order would bias every case the same way;
# the table reports, per case, the median over the rounds for A and for B,
# the ratio B/A of the medians, and each library's spread over the rounds
# (its minimum and maximum divided by its median).
#
# The cases (MPICH, shared memory, NP ranks with the yield preload):
#   tagged_d1e-3   one tagged MPI_Allreduce of a float stream, N = 16M,
#                  density 1e-3, random indices, SPARCML_ALGORITHM=auto
#                  (sparcml_bench --methods sparcml; per round the median
#                  over --reps of the slowest rank); tagged_d1e-3_double
#                  with VTYPES=double
#   tagged_d1e-4   the same at density 1e-4 (DENSITIES sets the list)
#   untagged_<S>B  the pass-through: an untagged MPI_FLOAT MPI_Allreduce of
#                  S bytes (8 B .. 1 MiB) with the library preloaded
#                  (sparcml_bench --overhead; median per-call time over
#                  --batches)
#   untagged_inproc_<S>B  the same call through the library (MPI_Allreduce)
#                  over straight to the vendor (PMPI_Allreduce), alternating
#                  batches in one process: the library's own pass-through
#                  cost with machine noise mostly cancelled (a ratio, not
#                  a time; 1.00 = no cost)
#   tiny_tagged    a tiny tagged call, N = 8, k = 1 (sparcml_bench --agree;
#                  median of its 3 interleaved rounds)
#   plain_8B       the untagged 8-byte allreduce timed in the same --agree
#                  runs: a control that involves no library code path but
#                  the pass-through
# Before the timed rounds, one untimed run per library and density records
# the algorithm the library chooses (SPARCML_VERBOSE=1): if A and B choose
# differently, a time difference of the tagged cases is that choice.
#
# How to read it: the "A spread" column is the noise of this machine for that
# case (A run ROUNDS times in the same session), in the units of B/A: B/A
# inside it is "within" the noise; "B slower" / "B faster" means B's median
# lies outside A's range, which is worth more rounds (ROUNDS=9) before
# calling it a difference.  With the default NP = 8 on a machine with fewer
# cores the runs are CPU-bound: the ranks take turns on the cores (the yield
# preload makes waiting ranks give up their core), so times include
# scheduling and are noisier than on a cluster, and any extra CPU work of B
# shows in them in full.
# The machine should be otherwise idle: the script waits (at most
# COMPARE_QUIET_MAX s, default 300) for 80 % idle CPUs before each round.
#
# Environment:
#   BENCHBIN   build directory holding sparcml_bench (default build/bench)
#   YIELD      the yield preload (default build/tests/support/.libs/libyield.so)
#   ROUNDS     rounds, A B then B A and so on (default 7, at least 3)
#   NP         ranks (default 8)
#   N          dimension of the tagged cases (default 16777216)
#   REPS       repetitions per tagged run (default 50)
#   BATCHES    batches per --overhead and --agree run (default 60)
#   DENSITIES  densities of the tagged cases (default "1e-3 1e-4")
#   VTYPES     value types of the tagged cases (default float; "float double")
#   ALGORITHM  SPARCML_ALGORITHM of the tagged cases (default auto)
#   PATTERN    their indices: random, identical or disjoint (default random)
#   CASES      which cases run (default "tagged overhead agree")
#   TABLE_SIZES  untagged sizes (bytes) shown in the table (default
#              "8 8192 1048576"; the CSV holds all of 8 B .. 1 MiB)
#   COMPARE_TIMEOUT  seconds per mpiexec (default 600)
#   COMPARE_QUIET_MAX  seconds to wait for an idle machine (default 300; 0: no wait)
# Output: the table on stdout, progress on stderr; OUT.csv (default
# bench_compare.csv) holds every round's value and the summary, in long
# form: case,lib,round,value (lib A, B or B/A; round 1..ROUNDS, median,
# min, max or ratio; value in seconds, or a ratio for untagged_inproc_*).
# Ranks are launched as
#   mpiexec.mpich -n NP env LD_PRELOAD=$YIELD:$LIB ... $BENCHBIN/sparcml_bench ...
# with HYDRA_CONFIG_FILE=/dev/null.
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
if [ "$#" -lt 2 ] || [ "$#" -gt 3 ]; then usage >&2; exit 2; fi

top=$(cd "$(dirname "$0")/.." && pwd)
lib_a=$(readlink -f "$1") lib_b=$(readlink -f "$2") out=${3:-bench_compare.csv}
name_a=$1 name_b=$2
benchbin=${BENCHBIN:-$top/build/bench}
bench=$benchbin/sparcml_bench
yield=${YIELD:-$top/build/tests/support/.libs/libyield.so}
rounds=${ROUNDS:-7} np=${NP:-8} N=${N:-16777216} reps=${REPS:-50} batches=${BATCHES:-60}
run_timeout=${COMPARE_TIMEOUT:-600}
quiet_max=${COMPARE_QUIET_MAX:-300}
table_sizes=${TABLE_SIZES:-8 8192 1048576}
densities=${DENSITIES:-1e-3 1e-4} vtypes=${VTYPES:-float} algorithm=${ALGORITHM:-auto} pattern=${PATTERN:-random}
cases=${CASES:-tagged overhead agree}
export HYDRA_CONFIG_FILE=/dev/null

log() { echo "bench_compare: $*" >&2; }
for f in "$lib_a" "$lib_b" "$yield"; do
    [ -f "$f" ] || { log "no such file: $f"; exit 2; }
done
[ -x "$bench" ] || { log "no benchmark program $bench (make check TESTS= builds it; or set BENCHBIN)"; exit 2; }
for v in rounds np N reps batches; do
    [[ "${!v}" =~ ^[0-9]+$ ]] || { log "bad $v=${!v}"; exit 2; }
done
[ "$rounds" -ge 3 ] || { log "ROUNDS must be at least 3"; exit 2; }
for d in $densities; do [[ "$d" =~ ^[0-9.]+(e-?[0-9]+)?$ ]] || { log "bad density $d in DENSITIES"; exit 2; }; done
for t in $vtypes; do [[ "$t" =~ ^(float|double)$ ]] || { log "bad value type $t in VTYPES"; exit 2; }; done
for c in $cases; do [[ "$c" =~ ^(tagged|overhead|agree)$ ]] || { log "bad case $c in CASES"; exit 2; }; done
command -v mpiexec.mpich >/dev/null || { log "mpiexec.mpich not found"; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
raw=$tmp/raw.csv   # case,lib,round,value
: >"$raw"

quiet_idle=80
quiet_note() { log "$*"; }
. "$(dirname "${BASH_SOURCE[0]}")/quiet.sh"

# run LIB ENV... -- ARGS...: rank 0's stdout; stderr to the run log
runlog=$tmp/run.log
run() {
    local lib=$1; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    timeout -k 10 "$run_timeout" mpiexec.mpich -n "$np" env LD_PRELOAD="$yield:$lib" \
        ${envs[@]+"${envs[@]}"} "$bench" "$@" 2>>"$runlog"
}
fail() { log "FAILED: $*"; tail -20 "$runlog" >&2; exit 1; }

# one case with one library: appends "case,lib,round,value" lines to $raw
tagged() { # LIB WHICH ROUND DENSITY VTYPE
    local o v name=tagged_d$4
    [ "$5" = float ] || name=${name}_$5
    o=$(run "$1" SPARCML_ALGORITHM="$algorithm" BENCH_LABEL=auto -- --n "$N" --density "$4" --pattern "$pattern" \
            --vtype "$5" --methods sparcml --reps "$reps") || fail "tagged d=$4 $5 with $1"
    v=$(echo "$o" | awk -F, '$1 == "sparcml_auto" { print $7; exit }')
    [ -n "$v" ] || fail "tagged d=$4 $5 with $1: no result line"
    echo "$name,$2,$3,$v" >>"$raw"
}
overhead() { # LIB WHICH ROUND
    local o
    o=$(run "$1" -- --overhead --batches "$batches") || fail "--overhead with $1"
    echo "$o" | awk -F, -v w="$2" -v r="$3" '
        $1 == "overhead" { printf "untagged_%sB,%s,%s,%s\n", $3, w, r, $4 }
        $1 == "inproc"   { printf "untagged_inproc_%sB,%s,%s,%s\n", $3, w, r, $6 }' >"$tmp/o"
    grep -q '^untagged_8B,' "$tmp/o" || fail "--overhead with $1: no result lines"
    cat "$tmp/o" >>"$raw"
}
agree() { # LIB WHICH ROUND
    local o
    o=$(run "$1" SPARCML_ALGORITHM=auto BENCH_LABEL=auto -- --agree --batches "$batches") ||
        fail "--agree with $1"
    echo "$o" | awk -F, -v w="$2" -v r="$3" '
        function med3(s,   a, n) { n = split(s, a, " "); if (n < 3) return a[1] + 0
            if (a[1] + 0 > a[2] + 0) { x = a[1]; a[1] = a[2]; a[2] = x }
            if (a[2] + 0 > a[3] + 0) { x = a[2]; a[2] = a[3]; a[3] = x }
            if (a[1] + 0 > a[2] + 0) { x = a[1]; a[1] = a[2]; a[2] = x }
            return a[2] }
        $1 == "plain_allreduce_8B" { p = p " " $4 }
        $1 ~ /^sparcml_auto_N/     { t = t " " $4 }
        END { if (t != "") { printf "tiny_tagged,%s,%s,%s\n", w, r, med3(t)
                             printf "plain_8B,%s,%s,%s\n", w, r, med3(p) } }' >"$tmp/o"
    grep -q '^tiny_tagged,' "$tmp/o" || fail "--agree with $1: no result lines"
    cat "$tmp/o" >>"$raw"
}

t_start=$SECONDS
log "A = $name_a"
log "B = $name_b"
log "$rounds rounds, NP=$np on $(nproc) cores, N=$N, reps=$reps, batches=$batches"

# the algorithm each library chooses (untimed)
declare -A chosen
chosen_line=
for d in $densities; do
    [[ " $cases " == *" tagged "* ]] || break
    for w in A B; do
        lib=$lib_a; [ "$w" = B ] && lib=$lib_b
        chosen[$w$d]=$(run "$lib" SPARCML_ALGORITHM="$algorithm" SPARCML_VERBOSE=1 -- --bytes --n "$N" \
            --density "$d" --pattern "$pattern" 2>&1 | awk '/^# bytes-call/ { on = 1; next }
                on && /^sparcml: allreduce/ { for (i = 1; i <= NF; i++) if ($i ~ /^algorithm=/) { sub(/^algorithm=/, "", $i); print $i; exit } }')
        log "d=$d: $w chooses ${chosen[$w$d]:-?}"
    done
    chosen_line="$chosen_line${chosen_line:+; }d=$d A=${chosen[A$d]:-?} B=${chosen[B$d]:-?}"
done

for ((r = 1; r <= rounds; r++)); do
    wait_quiet
    log "round $r/$rounds ($((SECONDS - t_start)) s)"
    order="A B"; [ $((r % 2)) -eq 0 ] && order="B A"
    for c in $cases; do
        case $c in
            tagged)
                for d in $densities; do
                    for t in $vtypes; do
                        for w in $order; do
                            lib=$lib_a; [ "$w" = B ] && lib=$lib_b
                            tagged "$lib" "$w" "$r" "$d" "$t"
                        done
                    done
                done ;;
            *)
                for w in $order; do
                    lib=$lib_a; [ "$w" = B ] && lib=$lib_b
                    "$c" "$lib" "$w" "$r"
                done ;;
        esac
    done
done
elapsed=$((SECONDS - t_start))

# summary: per case and library the median, min and max over the rounds
summary=$tmp/summary.csv
awk -F, '
    function sort(a, n,   i, j, x) { for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x } }
    function med(a, n) { return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    { k = $1 SUBSEP $2; n[k]++; v[k, n[k]] = $4 + 0; if (!($1 in seen)) { seen[$1] = 1; order[++nc] = $1 } }
    END {
        for (c = 1; c <= nc; c++) {
            cs = order[c]
            for (w = 0; w < 2; w++) {
                lib = w ? "B" : "A"; k = cs SUBSEP lib; m = n[k]
                delete a; for (i = 1; i <= m; i++) a[i] = v[k, i]
                sort(a, m)
                md[lib] = med(a, m); lo[lib] = a[1]; hi[lib] = a[m]
                printf "%s,%s,median,%.6e\n%s,%s,min,%.6e\n%s,%s,max,%.6e\n", cs, lib, md[lib], cs, lib, lo[lib], cs, lib, hi[lib]
            }
            printf "%s,B/A,ratio,%.4f\n", cs, (md["A"] > 0 ? md["B"] / md["A"] : 0)
        }
    }' "$raw" >"$summary"

{
    echo "# scripts/bench_compare.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -srm) cpus=$(nproc) mpich=$(mpichversion 2>/dev/null | head -1 | sed 's/.*:[[:space:]]*//')"
    echo "# A=$name_a sha256=$(sha256sum "$lib_a" | cut -c1-16)"
    echo "# B=$name_b sha256=$(sha256sum "$lib_b" | cut -c1-16)"
    echo "# NP=$np N=$N reps=$reps batches=$batches rounds=$rounds (A B in odd rounds, B A in even) elapsed_s=$elapsed"
    echo "# SPARCML_ALGORITHM=$algorithm chose: $chosen_line"
    echo "case,lib,round,value"
    cat "$raw" "$summary"
} >"$out"

# the table
echo "A: $name_a"
echo "B: $name_b"
echo "$np ranks on $(nproc) cores (CPU-bound shared memory), $rounds rounds A B, B A, ..., $elapsed s"
echo "SPARCML_ALGORITHM=$algorithm chose: $chosen_line"
echo
awk -F, -v sizes=" $table_sizes " '
    function fmt(c, x) { if (c ~ /^untagged_inproc_/) return sprintf("%.3f", x)
        if (x >= 1e-3) return sprintf("%.2f ms", x * 1e3); return sprintf("%.2f us", x * 1e6) }
    function band(lo, hi, m) { return m > 0 ? sprintf("%.3f-%.3f", lo / m, hi / m) : "-" }
    { val[$1, $2, $3] = $4; if (!($1 in seen)) { seen[$1] = 1; order[++nc] = $1 } }
    END {
        printf "| %-24s | %-10s | %-10s | %-5s | %-13s | %-13s | %-8s |\n", "case", "A median", "B median", "B/A", "A spread", "B spread", "B vs A"
        printf "|%s|%s|%s|%s|%s|%s|%s|\n", "---", "---:", "---:", "---:", "---", "---", "---"
        for (c = 1; c <= nc; c++) {
            cs = order[c]
            if (cs ~ /^untagged_/) { b = cs; sub(/^untagged_(inproc_)?/, "", b); sub(/B$/, "", b)
                if (index(sizes, " " b " ") == 0) continue }
            am = val[cs, "A", "median"]; bm = val[cs, "B", "median"]
            alo = val[cs, "A", "min"]; ahi = val[cs, "A", "max"]
            verdict = bm > ahi ? "B slower" : bm < alo ? "B faster" : "within"
            printf "| %-24s | %10s | %10s | %5s | %-13s | %-13s | %-8s |\n", cs, fmt(cs, am), fmt(cs, bm),
                sprintf("%.3f", val[cs, "B/A", "ratio"]), band(alo, ahi, am),
                band(val[cs, "B", "min"], val[cs, "B", "max"], bm), verdict
        }
    }' "$raw" "$summary"
echo
echo "raw rounds and summary: $out"
