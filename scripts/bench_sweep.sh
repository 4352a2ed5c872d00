#!/bin/bash
# bench_sweep.sh -- the measurement sweeps of bench/RESULTS.md.
#
# usage: scripts/bench_sweep.sh [--quick] [--parts LIST] [--reps R] [--out DIR]
#                               [--rate RATE] [--keep-rig] [--overhead-pairs N]
#                               [--forced "LIST"] [--no-dense]
#
#   --quick          small subset: N = 2^20, 4 densities, P in {2,4,8}, fewer
#                    overhead pairs; a few minutes
#   --parts LIST     comma-separated subset of
#                      shm-density rig-density shm-psweep rig-psweep
#                      shm-identical rig-identical overhead agree
#                      shm-qsgd rig-qsgd shm-peer rig-peer
#                    (default: all of them)
#   --reps R         repetitions per timed point (default 10, at least 10)
#   --out DIR        results directory (default bench/results)
#   --rate RATE      tc rate of the emulated cluster (default 1gbit)
#   --keep-rig       leave the netsim rig up at the end
#   --overhead-pairs N  alternating shim/empty run pairs (default 10)
#   --nice N         nice value of the sweep runs (default 0)
#   --nice-short N   nice value of the short, microsecond-scale runs (overhead,
#                    agreement cost; default -20 as root, else 0): a few
#                    seconds each, kept clear of other jobs' load
#   --densities "LIST"  density-sweep densities (default 1e-5 ... 0.5)
#   --psweep "LIST"     P values of the P sweep (default 2 .. 8)
#   --ident "LIST"      densities of the identical-index runs
#   --qsgd "LIST"       densities of the QSGD runs (default 0.01 0.1)
#   --forced "LIST"     forced algorithms run at each point (default
#                       ssar_recursive_double ssar_split_allgather
#                       dsar_split_allgather dense)
#   --no-dense          no vendor dense allreduce in the auto run (with a
#                       --forced list without dense: the P sweep at 100
#                       Mbit/s, where one dense 64 MB call takes ~10 s)
#   --auto-only         density/P/identical points: only the run of dense,
#                       allgather and auto (for re-measuring auto after a
#                       change of the cost model; the forced runs stay)
#   --tag NAME          write sweep_<env>_<sweep>NAME.csv instead of
#                       overwriting sweep_<env>_<sweep>.csv (for re-running
#                       points measured while the machine was busy: the
#                       report takes the last file's row for each point)
#   Environment: BENCH_QUIET_MAX (s, default 600), BENCH_QUIET_IDLE (%,
#   default 80): wait for an idle machine before each run (see below);
#   BENCH_TIMEOUT (s per mpiexec, default 900); NETSIM_PREFIX (default
#   spbench: the sweep's own rig, never another user's).
#
# What it does (see bench/RESULTS.md for the results and their discussion):
#   * builds the library if needed (scripts/setup.sh) and takes a snapshot of
#     build/src/.libs/libsparcml.so, so that a rebuild during the sweep does
#     not change what is measured; compiles bench/sparcml_bench.c with plain
#     mpicc.mpich, a trivial empty preload, and finds (or builds) the tests'
#     yield preload for oversubscribed shared-memory runs;
#   * density sweep (Figure 3 of the SparCML paper): P = 8, N = 16M floats,
#     d = 1e-5 .. 0.5, random indices: vendor dense MPI_Allreduce, the
#     allgather baseline, sparcml auto and each forced algorithm (one mpiexec
#     per algorithm: the library reads SPARCML_ALGORITHM once), on the
#     1gbit netsim rig and on plain shared memory; "sparcml_auto" gets the
#     environment's measured parameters: beta from a ping-pong
#     (SPARCML_BETA_NS_PER_BYTE), the collective latency as alpha
#     (SPARCML_ALPHA_US: an 8-byte allreduce of all 8 ranks per round; with
#     8 ranks on 2 cores a message waits for its receiver to be scheduled,
#     ~100 us on the rig, not the 18 us of a ping-pong with the other ranks
#     idle; the Lemma 5.1 bounds keep the ping-pong alpha) and gamma
#     (SPARCML_GAMMA_NS_PER_ENTRY=$BENCH_GAMMA, default 17, the value the
#     tables of bench/RESULTS.md ran with; the merge costs 2-3 ns per entry
#     in place, and with BENCH_GAMMA=2.5 auto chooses the same at every
#     point of the rig's density and P sweeps,
#     bench/results/rig_r18_gamma_in_situ.txt),
#     measured with the ranks sharing cores, so given per core with
#     SPARCML_RANKS_PER_CORE=8/cores (model_env); "auto (def.)" runs get neither and the library
#     scales its defaults by the ranks per core it detects: the merge cost
#     per entry of a rank where 8 ranks share 2 cores, measured on the rig
#     as recursive doubling's time at d = 1e-3 less
#     bench/support/exchange_floor's time for its messages, per merged
#     entry: bench/RESULTS.md),
#     "sparcml_auto_defaults" the library's defaults; bytes per rank of every sparcml run
#     from a second run with SPARCML_VERBOSE=1 (sparcml_bench --bytes);
#   * P sweep (2..8) at d = 0.1 %, identical-index runs;
#   * the peer's cases: P = 2, 4, 8 on shared memory and P = 8 on the rig,
#     d = 1e-4, 1e-3, 1e-2, random and identical indices: vendor dense,
#     allgather and the library as a user runs it (no model settings: the
#     calibration at MPI_Init) in one run, then recursive doubling and SSAR
#     split forced (sweep_<env>_peer.csv; the auto rows' algorithm column
#     counts the run's calls, warm-up included, per algorithm:
#     ALG*CALLS+...);
#   * QSGD: P = 8, DSAR split allgather and auto, SPARCML_QSGD_BITS 0 (exact),
#     8, 4, 2: time and bytes per rank (qsgd_<env>.csv);
#   * pass-through overhead: untagged allreduce 8 B .. 1 MiB, shim vs an
#     empty preload, alternating runs, -bind-to core, median ratio per size;
#   * cost of a tiny tagged call (agreement step) vs a plain 8-byte
#     allreduce at P = 2, 4, 8 on shared memory and on the rig;
#   * CSV, markdown tables (summary.md) and PNG plots (gnuplot) in --out.
# Every mpiexec runs under `timeout`.  Needs root for the rig (netsim.sh).
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top" || exit 1

args_all="$*"
forced="ssar_recursive_double ssar_split_allgather dsar_split_allgather dense"
auto_methods=dense,allgather,sparcml
peer_forced="ssar_recursive_double ssar_split_allgather"
opt_dens="" opt_psweep="" opt_ident="" opt_qsgd="" tag="" auto_only=0
cpu_gamma=${BENCH_GAMMA:-17}
nice_sweep=0
if [ "$(id -u)" -eq 0 ]; then nice_short=-20; else nice_short=0; fi
quick=0
reps=10
out="$top/bench/results"
rate=1gbit
keep_rig=0
pairs=10
parts="shm-density,rig-density,shm-psweep,rig-psweep,shm-identical,rig-identical,shm-qsgd,rig-qsgd,shm-peer,rig-peer,overhead,agree"
while [ "$#" -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --parts) parts=$2; shift ;;
        --reps) reps=$2; shift ;;
        --out) out=$2; shift ;;
        --rate) rate=$2; shift ;;
        --keep-rig) keep_rig=1 ;;
        --overhead-pairs) pairs=$2; shift ;;
        --densities) opt_dens=$2; shift ;;
        --nice) nice_sweep=$2; shift ;;
        --nice-short) nice_short=$2; shift ;;
        --psweep) opt_psweep=$2; shift ;;
        --ident) opt_ident=$2; shift ;;
        --qsgd) opt_qsgd=$2; shift ;;
        --auto-only) auto_only=1 ;;
        --forced) forced=$2; shift ;;
        --no-dense) auto_methods=allgather,sparcml ;;
        --tag) tag=$2; shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench_sweep: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ "$reps" =~ ^[0-9]+$ ]] && [ "$reps" -ge 10 ] || { echo "bench_sweep: --reps must be >= 10" >&2; exit 2; }
[[ "$pairs" =~ ^[0-9]+$ ]] && [ "$pairs" -ge 1 ] || { echo "bench_sweep: bad --overhead-pairs" >&2; exit 2; }
has_part() { [[ ",$parts," == *",$1,"* ]]; }

# ------------------------------------------------------------ parameters
if [ "$quick" -eq 1 ]; then
    N=1048576
    densities="1e-4 1e-3 1e-2 0.1"
    psweep="2 4 8"
    ident_densities="1e-3 1e-2"
    peer_densities="1e-3 1e-2"
    qsgd_densities="1e-2 0.1"
    [ "$pairs" -eq 10 ] && pairs=3
    ovh_batches=50
    agree_batches=30
else
    N=16777216
    densities="1e-5 1e-4 1e-3 1e-2 0.05 0.1 0.25 0.5"
    psweep="2 3 4 5 6 7 8"
    ident_densities="1e-4 1e-3 1e-2 0.1"
    peer_densities="1e-4 1e-3 1e-2"
    qsgd_densities="1e-2 0.1"
    ovh_batches=200
    agree_batches=100
fi
[ -n "$opt_dens" ] && densities=$opt_dens
[ -n "$opt_psweep" ] && psweep=$opt_psweep
[ -n "$opt_ident" ] && ident_densities=$opt_ident
[ -n "$opt_qsgd" ] && qsgd_densities=$opt_qsgd
[[ "$tag" =~ ^[A-Za-z0-9_-]*$ ]] || { echo "bench_sweep: bad --tag" >&2; exit 2; }
[[ "$cpu_gamma" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "bench_sweep: bad BENCH_GAMMA" >&2; exit 2; }
[[ "$nice_sweep" =~ ^-?[0-9]+$ && "$nice_short" =~ ^-?[0-9]+$ ]] || { echo "bench_sweep: bad --nice" >&2; exit 2; }
prio=$nice_sweep
PMAX=8
run_timeout=${BENCH_TIMEOUT:-900}           # seconds per mpiexec
export NETSIM_PREFIX=${NETSIM_PREFIX:-spbench} # our own rig, never someone else's
export NETSIM_TIMEOUT=$run_timeout
export HYDRA_CONFIG_FILE=/dev/null

log() { echo "bench_sweep: $*" >&2; }
mkdir -p "$out"
work="$top/build/bench-sweep" # not build/bench: make check builds the bench program there
mkdir -p "$work/logs"
cmdlog="$out/commands.log"
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) scripts/bench_sweep.sh $args_all" >>"$cmdlog"

# ------------------------------------------------------------ build
if [ ! -f build/src/.libs/libsparcml.so ]; then
    log "building the library (scripts/setup.sh)"
    scripts/setup.sh >&2 || { log "build failed"; exit 1; }
fi
shim="$work/libsparcml.snapshot.so"
cp -f "$(readlink -f build/src/.libs/libsparcml.so)" "$shim"
bench="$work/sparcml_bench"
mpicc.mpich -O2 -std=c11 -Wall -Wextra "$top/bench/sparcml_bench.c" -o "$bench" -lm ||
    { log "compiling sparcml_bench failed"; exit 1; }
empty="$work/libempty.so"
echo 'int sparcml_bench_empty_preload;' | gcc -shared -fPIC -O2 -x c - -o "$empty" ||
    { log "compiling the empty preload failed"; exit 1; }
yield="$top/build/tests/support/.libs/libyield.so"
if [ ! -f "$yield" ]; then
    (cd build && timeout 600 make -s check TESTS= >/dev/null 2>&1) || true
fi
if [ ! -f "$yield" ]; then
    yield="$work/libyield.so"
    gcc -shared -fPIC -O2 "$top/tests/support/yield_preload.c" -o "$yield" -ldl ||
        { log "compiling the yield preload failed"; exit 1; }
fi
if ! command -v gnuplot >/dev/null; then
    log "installing gnuplot-nox"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gnuplot-nox >/dev/null ||
        log "WARNING: gnuplot-nox could not be installed: no plots"
fi

{
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host=$(uname -srm) cpus=$(nproc) model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
    echo "mpich=$(mpichversion | head -1 | tr -s ' \t' ' ')"
    echo "git=$(git -C "$top" rev-parse --short HEAD 2>/dev/null) src_dirty=$(git -C "$top" status --porcelain -- src include 2>/dev/null | wc -l)"
    echo "shim_sha256=$(sha256sum "$shim" | cut -c1-16)"
    echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "quick=$quick N=$N reps=$reps rate=$rate cpu_gamma=$cpu_gamma auto_only=$auto_only"
    echo "parts=$parts"
} >"$out/environment.$$.txt"
cat "$out/environment.$$.txt" >&2
{ echo "----"; cat "$out/environment.$$.txt"; } >>"$out/environment.txt"
rm -f "$out/environment.$$.txt"

# ------------------------------------------------------------ launchers
# The machine may be shared: before each measurement wait (at most
# BENCH_QUIET_MAX seconds, default 600) until the CPUs were at least
# BENCH_QUIET_IDLE % (default 80) idle during one second.  BENCH_QUIET_MAX=0
# disables the wait.  Every wait is logged in commands.log.
quiet_max=${BENCH_QUIET_MAX:-600}
quiet_idle=${BENCH_QUIET_IDLE:-80}
quiet_note() {
    echo "#   $*" >>"$cmdlog"
    log "$*"
}
. "$top/scripts/quiet.sh"
. "$top/scripts/stats_mix.sh"

# Both print rank 0's stdout; stderr goes to the run log.
runlog="$work/logs/run.log"
: >"$runlog"
launch_shm() { # P ENV... -- ARGS...
    local p=$1; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    [ "${nowait:-0}" -eq 1 ] || wait_quiet
    echo "shm: nice -n $prio mpiexec.mpich -n $p env LD_PRELOAD=yield:shim ${envs[*]} sparcml_bench $*" >>"$cmdlog"
    nice -n "$prio" timeout -k 10 "$run_timeout" mpiexec.mpich -n "$p" env LD_PRELOAD="$yield:$shim" \
        "${envs[@]}" "$bench" "$@" 2>>"$runlog"
}
launch_rig() { # P ENV... -- ARGS...
    local p=$1; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    [ "${nowait:-0}" -eq 1 ] || wait_quiet
    echo "rig: LD_PRELOAD=shim ${envs[*]} nice -n $prio scripts/netsim.sh run $p -- sparcml_bench $*" >>"$cmdlog"
    env LD_PRELOAD="$shim" "${envs[@]}" nice -n "$prio" timeout -k 10 $((run_timeout + 30)) \
        "$top/scripts/netsim.sh" run "$p" -- "$bench" "$@" 2>>"$runlog"
}

# collective_alpha ENV: the latency a message of a collective sees when all
# PMAX ranks are active (they share 2 cores): an 8-byte MPI_Allreduce
# (recursive doubling, ceil(log2 PMAX) rounds) per round, median of 3 rounds
# of sparcml_bench --agree, in us.  This, not the ping-pong between two
# ranks with the others idle, is the alpha the cost model needs here.
collective_alpha() {
    local t
    wait_quiet
    t=$("launch_$1" "$PMAX" -- --agree --batches 30 |
        awk -F, '$1 == "plain_allreduce_8B" { print $4 }' | sort -g | sed -n 2p)
    awk -v t="$t" -v p="$PMAX" 'BEGIN { l = 0; while (2 ^ l < p) l++; if (t > 0) printf "%.2f", t * 1e6 / l }'
}

rig_up=0
rig_alpha="" rig_beta="" rig_alpha_model=""
rig_start() {
    [ "$rig_up" -eq 1 ] && return 0
    log "starting the netsim rig ($PMAX hosts, $rate, prefix $NETSIM_PREFIX)"
    scripts/netsim.sh up "$PMAX" "$rate" >&2 || { log "netsim up failed"; return 1; }
    rig_up=1
    local m
    wait_quiet
    m=$(timeout -k 10 300 scripts/netsim.sh measure "$PMAX" 2>>"$runlog")
    echo "$m" >"$out/rig_alpha_beta.txt"
    rig_alpha=$(echo "$m" | sed -n 's/^alpha_us=//p')
    rig_beta=$(echo "$m" | sed -n 's/^beta_ns_per_byte=//p')
    [ -n "$rig_alpha" ] && [ -n "$rig_beta" ] || { log "measuring the rig failed"; return 1; }
    log "rig: alpha_us=$rig_alpha beta_ns_per_byte=$rig_beta"
    rig_alpha_model=$(collective_alpha rig)
    [ -n "$rig_alpha_model" ] || { log "measuring the collective latency failed"; return 1; }
    echo "alpha_collective_us=$rig_alpha_model" >>"$out/rig_alpha_beta.txt"
    log "rig: collective alpha_us=$rig_alpha_model (8-byte allreduce at P=$PMAX per round; the model's alpha)"
}
cleanup() {
    if [ "$rig_up" -eq 1 ] && [ "$keep_rig" -eq 0 ]; then
        scripts/netsim.sh down >&2 || true
    fi
}
trap cleanup EXIT

# alpha/beta of shared memory: 2 ranks bound to the 2 cores, and 8 ranks on
# 2 cores (the setting of the shm sweeps; ranks 2..7 wait in a barrier).
shm_alpha="" shm_beta="" shm_alpha_model=""
shm_measure() {
    [ -n "$shm_alpha" ] && return 0
    local pp m
    pp=$(scripts/netsim.sh build 2>>"$runlog" | sed -n 's/^pingpong=//p')
    wait_quiet
    m=$(timeout -k 10 300 mpiexec.mpich -n 2 -bind-to core "$pp" 2>>"$runlog")
    echo "# 2 ranks, -bind-to core (used for the shm bounds)" >"$out/shm_alpha_beta.txt"
    echo "$m" >>"$out/shm_alpha_beta.txt"
    shm_alpha=$(echo "$m" | sed -n 's/^alpha_us=//p')
    shm_beta=$(echo "$m" | sed -n 's/^beta_ns_per_byte=//p')
    wait_quiet
    m=$(timeout -k 10 300 mpiexec.mpich -n "$PMAX" env LD_PRELOAD="$yield" "$pp" 2>>"$runlog")
    { echo "# $PMAX ranks on $(nproc) cores, yield preload (ranks 2..$((PMAX - 1)) idle)"; echo "$m"; } >>"$out/shm_alpha_beta.txt"
    log "shm (2 ranks): alpha_us=$shm_alpha beta_ns_per_byte=$shm_beta"
    shm_alpha_model=$(collective_alpha shm)
    [ -n "$shm_alpha_model" ] || shm_alpha_model=$shm_alpha
    echo "alpha_collective_us=$shm_alpha_model" >>"$out/shm_alpha_beta.txt"
    log "shm: collective alpha_us=$shm_alpha_model (the model's alpha)"
}

# ------------------------------------------------------------ one point
csv_header="env,sweep,method,P,N,density,pattern,vtype,median_s,min_s,bytes_sent_per_rank,bound_disjoint_s,bound_identical_s,bound_applies,k,reps,algorithm"

# bytes_run ENV P LABEL-ENV... -- PROBLEM-ARGS: prints "algorithm bytes"
bytes_run() {
    local where=$1 p=$2; shift 2
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local o
    # byte counts do not depend on timing: no need to wait for an idle machine.
    # The call after two warm-ups: a piggybacked call runs the algorithm
    # predicted from the call before it, so the timed calls' choice shows
    # from the third call on.
    o=$(nowait=1 "launch_$where" "$p" "${envs[@]}" SPARCML_VERBOSE=1 -- --bytes --warmup 2 "$@")
    echo "$o" | awk '/^# bytes-call/ { on = 1; next }
        on && /^sparcml: allreduce/ {
            for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
            print v["algorithm"], v["bytes_sent"]; exit }'
}

# model_env ENV: the cost-model settings sparcml_auto gets in ENV, in the
# array model.  alpha and gamma were measured with PMAX ranks sharing this
# machine's cores; they are given per core with that sharing, so the model
# scales them back and knows the ranks share cores (its copy floor on beta
# applies only then, and binds on shared memory: bench/RESULTS.md).
model_env() {
    local share am=$rig_alpha_model b=$rig_beta
    [ "$1" = shm ] && am=$shm_alpha_model b=$shm_beta
    share=$(awk -v p="$PMAX" -v c="$(nproc)" 'BEGIN { s = p / c; print (s < 1 ? 1 : s) }')
    per_core() { awk -v v="$1" -v s="$share" 'BEGIN { printf "%.6g", v / s }'; }
    model=(SPARCML_ALPHA_US="$(per_core "$am")" SPARCML_BETA_NS_PER_BYTE="$b"
           SPARCML_GAMMA_NS_PER_ENTRY="$(per_core "$cpu_gamma")" SPARCML_RANKS_PER_CORE="$share")
}

# point ENV SWEEP P DENSITY PATTERN: all methods at one problem
point() {
    local where=$1 sweep=$2 p=$3 d=$4 pat=$5
    local a b model=() args o line alg_bytes label
    if [ "$where" = rig ]; then a=$rig_alpha b=$rig_beta; else a=$shm_alpha b=$shm_beta; fi
    model_env "$where"
    # the peer's cases run the library as a user does: its calibration only
    [ "$sweep" = peer ] && model=()
    args=(--n "$N" --density "$d" --pattern "$pat" --reps "$reps" --alpha-us "$a" --beta-ns "$b")
    log "$where $sweep P=$p d=$d $pat"
    # 1. dense, allgather and sparcml auto in one run (interleaved reps)
    runs=("auto::${model[*]}")
    # 2. each forced algorithm; also auto with the library defaults
    if [ "$auto_only" -eq 0 ] && [ "$sweep" = peer ]; then
        for alg in $peer_forced; do runs+=("$alg::"); done
    elif [ "$auto_only" -eq 0 ]; then
        for alg in $forced; do runs+=("$alg::${model[*]}"); done
        runs+=("auto_defaults::")
    fi
    for r in "${runs[@]}"; do
        label=${r%%::*}
        local menv=()
        # shellcheck disable=SC2206 # word splitting of VAR=value pairs is intended
        [ -n "${r#*::}" ] && menv=(${r#*::})
        local alg=$label
        [ "$label" = auto_defaults ] && alg=auto
        local methods=sparcml
        [ "$label" = auto ] && methods=$auto_methods
        # the peer's auto run counts its calls per algorithm (SPARCML_STATS):
        # the choice can change within a run (timed prices, learnt overlap)
        local stats=()
        [ "$sweep" = peer ] && [ "$label" = auto ] && stats=(SPARCML_STATS=1)
        o=$("launch_$where" "$p" SPARCML_ALGORITHM="$alg" BENCH_LABEL="$label" ${menv[@]+"${menv[@]}"} \
                ${stats[@]+"${stats[@]}"} -- "${args[@]}" --methods "$methods")
        local rc=$?
        alg_bytes=$(bytes_run "$where" "$p" SPARCML_ALGORITHM="$alg" ${menv[@]+"${menv[@]}"} \
                -- --n "$N" --density "$d" --pattern "$pat")
        local mix
        mix=$(echo "$o" | stats_mix)
        echo "$o" | grep -E '^(dense|allgather|sparcml_)' | while IFS= read -r line; do
            m=${line%%,*} chosen=""
            if [[ "$m" == sparcml_* ]]; then
                chosen=${alg_bytes% *}
                [ -n "$mix" ] && chosen=$mix
                line=$(echo "$line" | awk -F, -v OFS=, -v by="${alg_bytes#* }" '{ $9 = by; print }')
            fi
            echo "$where,$sweep,$line,$chosen" >>"$csv"
        done
        if [ "$rc" -ne 0 ] || ! echo "$o" | grep -q '^sparcml_'; then
            log "  FAILED: $label (rc=$rc), see $runlog"
            echo "$where,$sweep,sparcml_$label,$p,$N,$d,$pat,float,NA,NA,NA,NA,NA,NA,NA,$reps,FAILED" >>"$csv"
        fi
    done
}

# qsgd_points ENV CSV: QSGD off/8/4/2 bits for DSAR split allgather and auto
# at P = 8, random indices.  The model gets this environment's alpha/beta.
qsgd_points() {
    local where=$1 qcsv=$2 a b o alg_bytes line model=()
    if [ "$where" = rig ]; then a=$rig_alpha b=$rig_beta; else a=$shm_alpha b=$shm_beta; fi
    model_env "$where"
    echo "env,method,P,N,density,qsgd_bits,median_s,min_s,bytes_sent_per_rank,algorithm" >"$qcsv"
    for d in $qsgd_densities; do
        for alg in dsar_split_allgather auto; do
            for bits in 0 8 4 2; do
                log "$where qsgd P=$PMAX d=$d $alg bits=$bits"
                local env=(SPARCML_ALGORITHM="$alg" SPARCML_QSGD_BITS="$bits" "${model[@]}")
                o=$("launch_$where" "$PMAX" BENCH_LABEL="${alg}_q$bits" "${env[@]}"                         -- --n "$N" --density "$d" --reps "$reps" --alpha-us "$a" --beta-ns "$b"                         --methods sparcml)
                alg_bytes=$(bytes_run "$where" "$PMAX" "${env[@]}" -- --n "$N" --density "$d")
                line=$(echo "$o" | grep -m1 '^sparcml_')
                if [ -z "$line" ]; then
                    log "  FAILED: $alg bits=$bits, see $runlog"
                    echo "$where,sparcml_${alg}_q$bits,$PMAX,$N,$d,$bits,NA,NA,NA,FAILED" >>"$qcsv"
                    continue
                fi
                echo "$line" | awk -F, -v OFS=, -v w="$where" -v q="$bits" -v by="${alg_bytes#* }" \
                    -v al="${alg_bytes% *}" '{ print w, $1, $2, $3, $4, q, $7, $8, by, al }' >>"$qcsv"
            done
        done
    done
}

if has_part shm-density || has_part shm-psweep || has_part shm-identical || has_part shm-qsgd || has_part shm-peer || has_part agree; then
    shm_measure
fi
if has_part rig-density || has_part rig-psweep || has_part rig-identical || has_part rig-qsgd || has_part rig-peer || has_part agree; then
    rig_start || { log "rig unavailable: skipping the rig parts"; parts=$(echo "$parts" | tr ',' '\n' | grep -v '^rig-' | tr '\n' ','); }
fi

for where in shm rig; do
    if has_part "$where-density"; then
        csv="$out/sweep_${where}_density${tag}.csv"
        echo "$csv_header" >"$csv"
        for d in $densities; do point "$where" density "$PMAX" "$d" random; done
    fi
    if has_part "$where-psweep"; then
        csv="$out/sweep_${where}_psweep${tag}.csv"
        echo "$csv_header" >"$csv"
        for p in $psweep; do point "$where" psweep "$p" 1e-3 random; done
    fi
    if has_part "$where-identical"; then
        csv="$out/sweep_${where}_identical${tag}.csv"
        echo "$csv_header" >"$csv"
        for d in $ident_densities; do point "$where" identical "$PMAX" "$d" identical; done
    fi
    if has_part "$where-peer"; then
        csv="$out/sweep_${where}_peer${tag}.csv"
        echo "$csv_header" >"$csv"
        peer_ps="2 4 8"
        [ "$where" = rig ] && peer_ps=$PMAX
        for p in $peer_ps; do
            for pat in random identical; do
                for d in $peer_densities; do point "$where" peer "$p" "$d" "$pat"; done
            done
        done
    fi
    if has_part "$where-qsgd"; then
        qsgd_points "$where" "$out/qsgd_${where}${tag}.csv"
    fi
done

# ------------------------------------------------------------ overhead
if has_part overhead; then
    log "pass-through overhead: $pairs alternating pairs, P=2, -bind-to core"
    ovraw="$work/logs/overhead_raw.csv"
    inraw="$work/logs/overhead_inproc_raw.csv"
    echo "pair,preload,bytes,median_s" >"$ovraw"
    : >"$inraw"
    for ((i = 1; i <= pairs; i++)); do
        # alternate which one goes first, so that drift cancels
        if ((i % 2)); then order="shim empty"; else order="empty shim"; fi
        for which in $order; do
            if [ "$which" = shim ]; then pre=$shim; else pre=$empty; fi
            wait_quiet
            echo "overhead: nice -n $nice_short mpiexec.mpich -n 2 -bind-to core env LD_PRELOAD=$which sparcml_bench --overhead --batches $ovh_batches" >>"$cmdlog"
            nice -n "$nice_short" timeout -k 10 "$run_timeout" mpiexec.mpich -n 2 -bind-to core env LD_PRELOAD="$pre" \
                "$bench" --overhead --batches "$ovh_batches" 2>>"$runlog" |
                awk -F, -v pr="$i" -v w="$which" -v in_raw="$inraw" '
                    $1 == "overhead" { print pr "," w "," $3 "," $4 }
                    $1 == "inproc" && w == "shim" { print $3 "," $4 "," $5 "," $6 >> in_raw }' >>"$ovraw"
        done
    done
    # per size: median of per-pair ratios shim/empty, and of the times
    awk -F, 'NR > 1 { t[$1 "," $2 "," $3] = $4; sz[$3] = 1; pr[$1] = 1 }
        function med(a, n,   i, j, x) {
            for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        END {
            print "bytes,median_empty_s,median_shim_s,median_ratio,min_ratio,max_ratio,pairs"
            n = asorti_num(sz, s)
            for (q = 1; q <= n; q++) {
                b = s[q]; k = 0; delete r; delete e; delete h
                for (p in pr) {
                    x = t[p ",shim," b]; y = t[p ",empty," b]
                    if (x == "" || y == "") continue
                    k++; r[k] = x / y; e[k] = y; h[k] = x
                }
                if (!k) continue
                lo = r[1]; hi = r[1]; for (i = 1; i <= k; i++) { if (r[i] < lo) lo = r[i]; if (r[i] > hi) hi = r[i] }
                printf "%s,%.4e,%.4e,%.4f,%.4f,%.4f,%d\n", b, med(e, k), med(h, k), med(r, k), lo, hi, k
            }
        }
        function asorti_num(src, dst,   n, i, j, x, k) {
            n = 0; for (k in src) dst[++n] = k + 0
            for (i = 2; i <= n; i++) { x = dst[i]; for (j = i - 1; j >= 1 && dst[j] > x; j--) dst[j + 1] = dst[j]; dst[j + 1] = x }
            return n }' "$ovraw" >"$out/overhead.csv"
    cat "$out/overhead.csv" >&2
    # In-process pairs (MPI_Allreduce through the shim vs PMPI_Allreduce in
    # alternating batches of the shim runs): median over runs per size.
    sort -t, -k1,1n -k4,4g "$inraw" | awk -F, '
        function flush() { if (n) printf "%s,%.4e,%.4e,%.4f,%.4f,%.4f,%d\n", b, m[int((n + 1) / 2)], q[int((n + 1) / 2)], r[int((n + 1) / 2)], r[1], r[n], n }
        BEGIN { print "bytes,mpi_s_of_median_run,pmpi_s_of_median_run,median_ratio,min_ratio,max_ratio,runs" }
        $1 != b { flush(); b = $1; n = 0 }
        { n++; r[n] = $4; m[n] = $2; q[n] = $3 }
        END { flush() }' >"$out/overhead_inproc.csv"
    cat "$out/overhead_inproc.csv" >&2
fi

# ------------------------------------------------------------ agreement cost
if has_part agree; then
    agraw="$work/logs/agree_raw.csv"
    : >"$agraw"
    for where in shm rig; do
        [ "$where" = rig ] && [ "$rig_up" -ne 1 ] && continue
        for p in 2 4 8; do
            log "agreement cost: $where P=$p"
            model=()
            [ "$where" = rig ] && model_env rig
            prio=$nice_short "launch_$where" "$p" ${model[@]+"${model[@]}"} -- --agree --batches "$agree_batches" |
                awk -F, -v w="$where" 'NF >= 5 && $2 ~ /^[0-9]+$/ { print w "," $1 "," $2 "," $4 }' >>"$agraw"
        done
    done
    # median over the 3 interleaved rounds
    awk -F, '{ key = $1 "," $3; m = $2; sub(/_N[0-9]+_k1$/, "", m); v[key "," m] = v[key "," m] " " $4; keys[key] = 1 }
        function med3(s,   a, n, i, j, x) { n = split(s, a, " ")
            for (i = 2; i <= n; i++) { x = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        END { print "env,P,plain_allreduce_8B_s,tagged_N8_k1_s,agree_emulation_s,tagged_over_plain"
            for (k in keys) { pl = med3(v[k ",plain_allreduce_8B"]); tg = med3(v[k ",sparcml_auto"]); ag = med3(v[k ",agree_emulation_userop"])
                printf "%s,%.3e,%.3e,%.3e,%.2f\n", k, pl, tg, ag, (pl > 0 ? tg / pl : 0) } }' "$agraw" |
        { read -r h; echo "$h"; sort -t, -k1,1r -k2,2n; } >"$out/agree.csv"
    cat "$out/agree.csv" >&2
fi

echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg) date_end=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$out/environment.txt"

# ------------------------------------------------------------ tables and plots
if compgen -G "$out/sweep_*.csv" >/dev/null || [ -f "$out/overhead.csv" ]; then
    "$top/scripts/bench_report.sh" "$out" || log "WARNING: bench_report.sh failed"
fi
log "done: results in $out"
