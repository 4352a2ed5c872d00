#!/bin/bash
# bench_compress.sh -- the compressed allreduce (SPARCML_COMPRESS) on two
# unmodified training programs: how close each compressor gets to the dense
# final loss in the same number of steps, and what it does to the time.
#
# usage: scripts/bench_compress.sh [--dense-only] [--out DIR]
#
#   --dense-only   only the references (no shim); needs no SPARCML_COMPRESS
#   --out DIR      results directory (default bench/results)
#
# Programs (plain MPI programs, MPICH, P = 4 on shared memory, the tests'
# yield preload on every rank so that the 4 ranks share the 2 cores without
# busy-polling):
#   topk_sgd     examples/topk_sgd --sync=dense --epochs=5 --seed=1: logistic
#                regression on the URL-like sparse data of scripts/run.sh,
#                N = 3M; its gradient (12 MB) is summed with a plain
#                MPI_FLOAT allreduce, mostly zeros: a rank's mini-batch
#                (250 samples of ~100 features, popular ones repeating)
#                touches fewer than k = 30 000 entries at density 1e-2, so
#                top-k at 1e-2 sends all of it (the dense loss, with or
#                without feedback); at 1e-3 it drops values
#   softmax_sgd  examples/softmax_sgd --seed=1: a one-hidden-layer softmax
#                classifier on dense data, 1 066 000 weights (4.3 MB), all
#                of its gradient non-zero
# Cases, each program:
#   dense          no shim: the vendor's allreduce (the reference)
#   topk, cltk     the shim with SPARCML_COMPRESS=topk / cltk at
#                  SPARCML_COMPRESS_DENSITY 1e-2 and 1e-3, each with and
#                  without SPARCML_QSGD_BITS=8, error feedback on; the
#                  cost model set whole as for a Gigabit network, so that
#                  every call compresses
#   topk, no feedback  topk at 1e-2 with SPARCML_COMPRESS_FEEDBACK=0 (ablation)
# Both programs' gradients exceed SPARCML_COMPRESS_MIN_BYTES (default 1 MiB);
# their loss and timing sums are small and stay exact.  topk at 1e-2 runs
# with SPARCML_STATS=1 too, and its report is kept.
#
# Output:
#   DIR/compress_convergence.csv  program,mode,density,qsgd_bits,feedback,
#       final_loss,loss_vs_dense,seconds,seconds_vs_dense
#     final_loss: the program's training loss after the last epoch;
#     seconds: its training time (evaluation and start-up excluded:
#     softmax_sgd's seconds, topk_sgd's compute_s + comm_s); *_vs_dense:
#     divided by the program's dense value.  Dense rows have density 1,
#     qsgd_bits 0 and no feedback value.
#   DIR/compress_stats.txt  the SPARCML_STATS report of one compressed run
#     per program, with its command
#   a markdown table of the CSV on stdout; progress on stderr.
# Before measuring, a one-rank run with SPARCML_COMPRESS=topk checks that the
# shim knows the variable: if it does not, the script stops (exit 1) with
# the shim's message.  A run that fails is reported and its row holds
# "failed"; the exit status is then 1.
#
# SHIM overrides the library (default build/src/.libs/libsparcml.so, MPICH).
# The machine should be otherwise idle: before each of the 21 runs the script
# waits (at most BENCH_QUIET_MAX s, default 60; 0: no wait) for
# BENCH_QUIET_IDLE % (default 80) idle CPUs.  On an idle 2-core machine the
# dense runs take about 3 s (topk_sgd) and 8 s (softmax_sgd), and the whole
# script 5 to 10 minutes, plus those waits.
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
dense_only=0
top=$(cd "$(dirname "$0")/.." && pwd)
res=$top/bench/results
while [ "$#" -gt 0 ]; do
    case $1 in
    -h|--help) usage; exit 0 ;;
    --dense-only) dense_only=1 ;;
    --out) [ "$#" -ge 2 ] || { usage >&2; exit 2; }; res=$2; shift ;;
    *) usage >&2; exit 2 ;;
    esac
    shift
done

say() { echo "bench_compress: $*" >&2; }
bash "$top/scripts/setup.sh" >/dev/null || { say "setup failed"; exit 1; }
b=$top/build
make -C "$b" -s examples/topk_sgd examples/softmax_sgd tests/support/libyield.la >/dev/null ||
    { say "build failed"; exit 1; }
shim=${SHIM:-$b/src/.libs/libsparcml.so}
yield=$b/tests/support/.libs/libyield.so
P=4
run_timeout=600
export HYDRA_CONFIG_FILE=/dev/null
mkdir -p "$res"
csv=$res/compress_convergence.csv
stats=$res/compress_stats.txt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

quiet_max=${BENCH_QUIET_MAX:-60}
quiet_idle=${BENCH_QUIET_IDLE:-80}
quiet_note() { say "$*"; }
. "$top/scripts/quiet.sh"

programs=(topk_sgd softmax_sgd)
# cmd_of PROGRAM: sets cmd to the program's command line
cmd_of() {
    case $1 in
    topk_sgd) cmd=("$b/examples/topk_sgd" --sync=dense --epochs=5 --seed=1) ;;
    softmax_sgd) cmd=("$b/examples/softmax_sgd" --seed=1) ;;
    esac
}

# The shim must know SPARCML_COMPRESS (a tiny model: its gradient stays below
# the threshold, so this only checks that the variable is accepted).
if [ "$dense_only" -eq 0 ]; then
    if ! timeout -k 10 120 mpiexec.mpich -n 1 env LD_PRELOAD="$yield:$shim" SPARCML_COMPRESS=topk \
        "$b/examples/softmax_sgd" --features=8 --hidden=8 --samples=16 --batch=16 --epochs=1 \
        >"$tmp/probe.out" 2>"$tmp/probe.err"; then
        say "the shim does not run with SPARCML_COMPRESS=topk, so the compressed cases cannot run:"
        sed 's/^/    /' "$tmp/probe.err" | head -5 >&2
        say "(--dense-only runs the references alone)"
        exit 1
    fi
fi

# case_row PROGRAM MODE DENSITY BITS FEEDBACK [STATS]: one run; appends
# "program,mode,density,qsgd_bits,feedback,final_loss,seconds" to $tmp/rows
nfailed=0
case_row() {
    local prog=$1 mode=$2 dens=$3 bits=$4 fb=$5 st=${6:-0} pre=$yield log=$tmp/run.out
    local envs=() loss secs
    if [ "$mode" != dense ]; then
        pre=$yield:$shim
        # The cost model set whole, as for a Gigabit network: every call
        # compresses (on shared memory the model would mostly choose the
        # vendor's exact sum, and this measures the compressors' loss).
        envs=(SPARCML_COMPRESS="$mode" SPARCML_COMPRESS_DENSITY="$dens" SPARCML_COMPRESS_FEEDBACK="$fb"
              SPARCML_ALPHA_US=20 SPARCML_BETA_NS_PER_BYTE=8.3 SPARCML_GAMMA_NS_PER_ENTRY=2.5)
        [ "$bits" -gt 0 ] && envs+=(SPARCML_QSGD_BITS="$bits")
        [ "$st" -eq 1 ] && envs+=(SPARCML_STATS=1)
    fi
    cmd_of "$prog"
    wait_quiet
    local line="mpiexec.mpich -n $P env LD_PRELOAD=${pre//$top\//} ${envs[*]:+${envs[*]} }${cmd[*]#"$top"/}"
    say "$prog $mode ${dens} bits=$bits feedback=${fb:--}: $line"
    if timeout -k 10 "$run_timeout" mpiexec.mpich -n "$P" env LD_PRELOAD="$pre" ${envs[@]+"${envs[@]}"} \
        "${cmd[@]}" >"$log" 2>"$tmp/run.err"; then
        loss=$(sed -n 's/^summary .*final_loss=\([^ ]*\).*/\1/p' "$log")
        if [ "$prog" = topk_sgd ]; then
            secs=$(sed -n 's/^summary .*comm_s=\([^ ]*\) compute_s=\([^ ]*\).*/\1 \2/p' "$log" |
                awk '{ printf "%.4f", $1 + $2 }')
        else
            secs=$(sed -n 's/^summary .* seconds=\([^ ]*\).*/\1/p' "$log")
        fi
    fi
    if [ -z "${loss:-}" ] || [ -z "${secs:-}" ]; then
        say "FAILED: $line"
        sed 's/^/    /' "$tmp/run.err" | tail -5 >&2
        nfailed=$((nfailed + 1))
        loss=failed secs=failed
    fi
    say "  final_loss=$loss seconds=$secs"
    echo "$prog,$mode,$dens,$bits,$fb,$loss,$secs" >>"$tmp/rows"
    if [ "$st" -eq 1 ]; then
        { echo "== $prog: $line"; grep '^sparcml: ' "$log" || echo "(no report lines)"; echo; } >>"$tmp/stats"
    fi
}

: >"$tmp/rows"
{
    echo "# SPARCML_STATS reports of scripts/bench_compress.sh, $(date -u '+%Y-%m-%d %H:%M UTC'),"
    echo "# build of $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown), P = $P, MPICH"
    echo
} >"$tmp/stats"
for prog in "${programs[@]}"; do
    case_row "$prog" dense 1 0 ""
    [ "$dense_only" -eq 1 ] && continue
    for mode in topk cltk; do
        for dens in 0.01 0.001; do
            for bits in 0 8; do
                st=0
                [ "$mode" = topk ] && [ "$dens" = 0.01 ] && [ "$bits" -eq 0 ] && st=1
                case_row "$prog" "$mode" "$dens" "$bits" 1 "$st"
            done
        done
    done
    case_row "$prog" topk 0.01 0 0
done

# the ratios to each program's dense row
{
    echo "program,mode,density,qsgd_bits,feedback,final_loss,loss_vs_dense,seconds,seconds_vs_dense"
    awk -F, -v OFS=, '
        function ratio(a, b) { return (a == "failed" || b == "failed" || b == 0) ? "n/a" : sprintf("%.4f", a / b) }
        $2 == "dense" { dl[$1] = $6; ds[$1] = $7 }
        { print $1, $2, $3, $4, $5, $6, ratio($6, dl[$1]), $7, ratio($7, ds[$1]) }' "$tmp/rows"
} >"$csv"
if [ "$dense_only" -eq 1 ]; then
    say "wrote $csv"
else
    cp "$tmp/stats" "$stats"
    say "wrote $csv and $stats"
fi

echo "| program | mode | density | QSGD bits | feedback | final loss | vs dense | seconds | vs dense |"
echo "|---|---|---|---|---|---|---|---|---|"
awk -F, 'NR > 1 { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, ($5 == "" ? "-" : $5), $6, $7, $8, $9 }' "$csv"
[ "$nfailed" -eq 0 ]
