#!/bin/bash
# bench_report.sh -- tables (summary.md) and plots (*.png) from the CSV files
# that scripts/bench_sweep.sh writes.  Called by bench_sweep.sh; can be rerun
# on its own:  scripts/bench_report.sh [DIR]   (default bench/results)
#
# Inputs in DIR: sweep_*.csv, and if present overhead.csv, agree.csv,
# rig_alpha_beta.txt, shm_alpha_beta.txt.  Outputs in DIR: summary.md,
# fig3_<env>.png (time vs density, log-log), psweep_<env>.png,
# identical_<env>.png, overhead.png.
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-$top/bench/results}
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
# all sweeps in one file (header once)
csv="$data/sweep.csv"
first=1
for f in "$dir"/sweep_*.csv; do
    [ -f "$f" ] || continue
    if [ "$first" -eq 1 ]; then cat "$f"; first=0; else tail -n +2 "$f"; fi
done >"$csv"
[ -s "$csv" ] || echo "env,sweep,method" >"$csv"
md="$dir/summary.md"
: >"$md"

# Columns of sweep.csv:
#  1 env 2 sweep 3 method 4 P 5 N 6 density 7 pattern 8 vtype 9 median_s 10 min_s
# 11 bytes 12 bound_disjoint_s 13 bound_identical_s 14 bound_applies 15 k 16 reps 17 algorithm
awk -F, -v data="$data" -v md="$md" '
function ms(x) { return (x == "" || x == "NA") ? "n/a" : sprintf(x * 1e3 < 1 ? "%.3f" : x * 1e3 < 100 ? "%.2f" : "%.0f", x * 1e3) }
function ratio(a, b) { return (a == "" || b == "" || a == "NA" || b == "NA" || b == 0) ? "n/a" : sprintf("%.2f", a / b) }
function num(x) { return (x == "" || x == "NA") ? "NaN" : x }
function kb(x) { return (x == "" || x == "NA") ? "n/a" : sprintf("%.0f", x / 1024) }
NR == 1 { next }
{
    key = $1 SUBSEP $2 SUBSEP $4 SUBSEP $6
    if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    T[key, $3] = $9; M[key, $3] = $10; B[key, $3] = $11; ALG[key, $3] = $17
    BOUND[key] = ($14 == "identical") ? $13 : $12
    BOUNDKIND[key] = $14; K[key] = $15; NN[key] = $5; PAT[key] = $7
}
END {
    split("sparcml_ssar_recursive_double sparcml_ssar_split_allgather sparcml_dsar_split_allgather sparcml_dense", F, " ")
    short["sparcml_ssar_recursive_double"] = "rec.dbl"; short["sparcml_ssar_split_allgather"] = "SSAR split"
    short["sparcml_dsar_split_allgather"] = "DSAR split"; short["sparcml_dense"] = "sparcml dense"
    split("shm rig", ENVS, " "); split("density psweep identical", SW, " ")
    title["density"] = "Density sweep (random indices)"; title["psweep"] = "P sweep at d = 0.1 % (random indices)"
    title["identical"] = "Identical indices on all ranks"
    for (e = 1; e <= 2; e++) for (s = 1; s <= 3; s++) {
        env = ENVS[e]; sw = SW[s]; any = 0
        for (i = 1; i <= n; i++) { split(order[i], q, SUBSEP); if (q[1] == env && q[2] == sw) any = 1 }
        if (!any) continue
        printf "\n### %s: %s\n\n", env == "rig" ? "1gbit netsim rig" : "shared memory", title[sw] >> md
        printf "Times in ms: median over reps of the max over ranks. "   >> md
        printf "auto = sparcml with SPARCML_ALGORITHM=auto and this environment'"'"'s measured alpha/beta, auto (def.) = with the library'"'"'s default alpha/beta/gamma; `alg` = what auto ran; " >> md
        printf "regret = auto / best forced (both measured); choice = forced time of the algorithm auto chose / best forced (runs of the same kind, so run-to-run noise of one algorithm does not count); best = fastest forced algorithm; bound = Lemma 5.1 (%s).\n\n", sw == "identical" ? "identical" : "disjoint" >> md
        printf "| P | d | k | dense | allgather | auto | alg | auto KiB sent | rec.dbl | SSAR split | DSAR split | sparcml dense | auto (def.) | alg (def.) | bound | dense/auto | allgather/auto | regret | choice | best | auto/bound |\n" >> md
        printf "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n" >> md
        f = data "/" sw "_" env ".dat"
        printf "# x dense allgather auto rd ssar dsar sdense bound auto_def\n" > f
        for (i = 1; i <= n; i++) {
            key = order[i]; split(key, q, SUBSEP)
            if (q[1] != env || q[2] != sw) continue
            best = ""; bestname = ""
            for (j = 1; j <= 4; j++) { x = T[key, F[j]]; if (x != "" && x != "NA" && (best == "" || x + 0 < best + 0)) { best = x; bestname = short[F[j]] } }
            chosen = T[key, "sparcml_" ALG[key, "sparcml_auto"]]
            auto = T[key, "sparcml_auto"]
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", q[3], q[4], K[key], ms(T[key, "dense"]), ms(T[key, "allgather"]),
                ms(auto), ALG[key, "sparcml_auto"], kb(B[key, "sparcml_auto"]), ms(T[key, F[1]]), ms(T[key, F[2]]), ms(T[key, F[3]]), ms(T[key, F[4]]) >> md
            printf " %s | %s |", ms(T[key, "sparcml_auto_defaults"]), ALG[key, "sparcml_auto_defaults"] >> md
            printf " %s | %s | %s | %s | %s | %s | %s |\n", ms(BOUND[key]), ratio(T[key, "dense"], auto), ratio(T[key, "allgather"], auto), ratio(auto, best), ratio(chosen, best), bestname, ratio(auto, BOUND[key]) >> md
            printf "%s %s %s %s %s %s %s %s %s %s\n", sw == "psweep" ? q[3] : q[4], num(T[key, "dense"]), num(T[key, "allgather"]), num(auto),
                num(T[key, F[1]]), num(T[key, F[2]]), num(T[key, F[3]]), num(T[key, F[4]]), num(BOUND[key]), num(T[key, "sparcml_auto_defaults"]) > f
        }
        close(f)
    }
}' "$csv"
{ echo "# Benchmark summary (generated by scripts/bench_report.sh)"; echo; sed 's/^/    /' "$dir/environment.txt" 2>/dev/null;
  for f in rig_alpha_beta.txt shm_alpha_beta.txt; do
      [ -f "$dir/$f" ] && { echo; echo "$f:"; echo; sed 's/^/    /' "$dir/$f"; }
  done; cat "$md"; } >"$md.tmp"
mv "$md.tmp" "$md"

if [ -f "$dir/overhead.csv" ]; then
    {
        echo
        echo "### Pass-through overhead (untagged MPI_FLOAT MPI_Allreduce, P = 2, -bind-to core)"
        echo
        echo "| bytes | empty preload (us) | shim (us) | median ratio shim/empty | min | max | pairs |"
        echo "|---|---|---|---|---|---|---|"
        awk -F, 'NR > 1 { printf "| %d | %.2f | %.2f | %.4f | %.4f | %.4f | %d |\n", $1, $2 * 1e6, $3 * 1e6, $4, $5, $6, $7 }' "$dir/overhead.csv"
    } >>"$md"
    awk -F, 'NR > 1 { print $1, $4, $5, $6 }' "$dir/overhead.csv" >"$data/overhead.dat"
fi
if [ -f "$dir/overhead_inproc.csv" ]; then
    {
        echo
        echo "### Pass-through overhead measured inside one process (MPI_Allreduce through the shim vs PMPI_Allreduce, alternating batches)"
        echo
        echo "| bytes | through the shim (us) | PMPI directly (us) | median ratio over runs | min | max | runs |"
        echo "|---|---|---|---|---|---|---|"
        awk -F, 'NR > 1 { printf "| %d | %.3f | %.3f | %.4f | %.4f | %.4f | %d |\n", $1, $2 * 1e6, $3 * 1e6, $4, $5, $6, $7 }' "$dir/overhead_inproc.csv"
    } >>"$md"
fi
for qf in "$dir"/qsgd_*.csv; do
    [ -f "$qf" ] && head -1 "$qf" | grep -q '^env,method,P,N,density,qsgd_bits' || continue
    {
        echo
        echo "### QSGD on the dense parts ($(basename "$qf"): P = 8, random indices)"
        echo
        echo "| env | d | requested | ran | bits | time (ms) | vs exact | KiB sent per rank | vs exact |"
        echo "|---|---|---|---|---|---|---|---|---|"
        # exact (bits 0) row of the same env/density/requested algorithm is the reference
        awk -F, 'NR > 1 {
            req = $2; sub(/_q[0-9]+$/, "", req); sub(/^sparcml_/, "", req)
            key = $1 SUBSEP $5 SUBSEP req
            if ($6 == 0) { T0[key] = $7; B0[key] = $9 }
            row[++n] = $0; K[n] = key; R[n] = req
        }
        END {
            for (i = 1; i <= n; i++) {
                split(row[i], f, ",")
                t = (f[7] == "NA") ? "n/a" : sprintf("%.2f", f[7] * 1e3)
                kb = (f[9] == "NA") ? "n/a" : sprintf("%.0f", f[9] / 1024)
                rt = (f[7] == "NA" || T0[K[i]] == "" || T0[K[i]] == "NA") ? "n/a" : sprintf("%.2fx", f[7] / T0[K[i]])
                rb = (f[9] == "NA" || B0[K[i]] == "" || B0[K[i]] == "NA") ? "n/a" : sprintf("%.2fx", f[9] / B0[K[i]])
                printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f[1], f[5], R[i], f[10], f[6] == 0 ? "exact" : f[6], t, rt, kb, rb
            }
        }' "$qf"
    } >>"$md"
done
if [ -f "$dir/agree.csv" ]; then
    {
        echo
        echo "### Cost of a tiny tagged call (agreement + algorithm) vs a plain 8-byte allreduce"
        echo
        echo "| env | P | plain 8 B (us) | tagged N=8 k=1 (us) | agreement emulation, user op of 14 int64 (us) | tagged / plain |"
        echo "|---|---|---|---|---|---|"
        awk -F, 'NR > 1 { printf "| %s | %s | %.1f | %.1f | %.1f | %s |\n", $1, $2, $3 * 1e6, $4 * 1e6, $5 * 1e6, $6 }' "$dir/agree.csv"
    } >>"$md"
fi

command -v gnuplot >/dev/null || { echo "bench_report: no gnuplot, no plots" >&2; exit 0; }
plot() { # DAT PNG TITLE XLABEL LOGX
    local dat=$1 png=$2 ttl=$3 xl=$4 logx=$5
    [ -s "$dat" ] || return 0
    gnuplot <<EOF
set terminal pngcairo size 900,600 font "sans,10" noenhanced
set output "$png"
set format y "%g"
set title "$ttl"
set xlabel "$xl"
set ylabel "time per allreduce (s), median"
set logscale y
$( [ "$logx" = 1 ] && echo 'set logscale x' )
set key left top
set grid
set datafile missing "NaN"
plot "$dat" using 1:2 with linespoints lw 2 title "vendor dense MPI_Allreduce", \
     "" using 1:3 with linespoints lw 2 title "allgather baseline", \
     "" using 1:4 with linespoints lw 3 title "sparcml auto", \
     "" using 1:5 with linespoints dt 2 title "ssar_recursive_double", \
     "" using 1:6 with linespoints dt 2 lc rgb "#b8860b" title "ssar_split_allgather", \
     "" using 1:7 with linespoints dt 2 title "dsar_split_allgather", \
     "" using 1:8 with linespoints dt 2 title "sparcml dense", \
     "" using 1:9 with lines lc rgb "black" dt 3 title "Lemma 5.1 bound"
EOF
}
nval=$(awk -F, 'NR == 2 { print $5 }' "$csv")
for env in rig shm; do
    label=$([ "$env" = rig ] && echo "1gbit netsim rig" || echo "shared memory, 8 ranks on 2 cores")
    plot "$data/density_$env.dat" "$dir/fig3_$env.png" "P = 8, N = $nval floats, random indices ($label)" "density" 1
    plot "$data/psweep_$env.dat" "$dir/psweep_$env.png" "d = 0.1 %, N = $nval floats, random indices ($label)" "P (ranks)" 0
    plot "$data/identical_$env.dat" "$dir/identical_$env.png" "P = 8, N = $nval floats, identical indices ($label)" "density" 1
done
if [ -s "$data/overhead.dat" ]; then
    gnuplot <<EOF
set terminal pngcairo size 900,500 font "sans,10" noenhanced
set output "$dir/overhead.png"
set title "Pass-through overhead: untagged MPI_Allreduce, shim / empty preload (P = 2)"
set xlabel "message size (bytes)"
set ylabel "time ratio shim / empty preload"
set logscale x 2
set grid
set key left top
plot "$data/overhead.dat" using 1:2 with linespoints lw 2 title "median over pairs", \
     "" using 1:3:4 with yerrorbars title "min..max over pairs", \
     1.02 with lines dt 2 title "+2 % target", 1.0 with lines lc rgb "black" notitle
EOF
fi
echo "bench_report: wrote $md and plots in $dir" >&2
