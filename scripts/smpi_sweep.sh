#!/bin/bash
# smpi_sweep.sh -- the library's own code on simulated clusters (SimGrid
# SMPI, Debian's libsimgrid-dev).  SMPI runs every rank in one process, so
# the benchmark and the library's sources (src/*.c with interpose.c, which
# then interposes by being linked in: -Wl,-Bsymbolic binds the benchmark's
# MPI_* calls to it, its PMPI_* calls go to SMPI) are built into one
# smpicc program; SMPI's default dlopen privatisation gives every rank its
# own copy of the library's globals.  bench/smpi/mpi4_shim.h supplies what
# SMPI 3.32 lacks (the MPI-4 *_c calls, MPI_Mprobe/MPI_Mrecv,
# MPI_Comm_test_inter).  Message payloads are real and every result is
# verified (the benchmark's checksum), so message sizes are the library's;
# but the benchmark's large buffers whose contents decide no message size
# (dense method in/out, allgather's dense result, the dense part of the
# sparcml result) are SMPI shared allocations (-DSPARCML_BENCH_SMPI_SHARED),
# and those results are not verified (stderr says "not verified").
# Computation between MPI calls is timed on this machine and injected
# (smpi/host-speed = host speed = 1 Gf: 1 s measured = 1 s simulated; the
# machine is shared, so merges are timed on a loaded core).
#
#   scripts/smpi_sweep.sh build
#   scripts/smpi_sweep.sh plot       bench/results/smpi_{random,identical}.png and,
#       from the network-only runs (smpi_network_only_*.csv: SMPI_CFG=
#       --cfg=smpi/simulate-computation:no), smpi_network_only_*.png, with
#       the dense allreduce of smpi_dense_rab_rdb.csv in every panel
#   scripts/smpi_sweep.sh calibrate [P...]        the rig (8 hosts, 1 Gbit/s,
#       alpha = 20 us) at P = 2..8, N = 16M, d = 1e-3, random: the methods of
#       bench/results/sweep_rig_psweep_r4.csv; prints simulated/measured.
#       SMPI_RIG=rig_line: the rig built with NETSIM_TBF=line (no burst
#       faster than the rate; bench/results/sweep_rig_psweep_line*.csv);
#       SMPI_RIG=rig_line_100m: that rig at 100 Mbit/s, where it is
#       network-bound at every P (sweep_rig_psweep_line100m*.csv);
#       SMPI_METHODS: the methods (default: allgather, auto, recursive
#       doubling, SSAR split, dense); SMPI_RIG_MEASURED=FILE: the links
#       from a measurement of the same sitting as the rig's points (FILE
#       holds netsim.sh measure's alpha_us= and beta_ns_per_byte=, e.g.
#       bench_sweep.sh's rig_alpha_beta.txt; the backbone stays); the
#       CSV's name then ends in _FILE's name, or in SMPI_TAG when set
#       (e.g. SMPI_TAG=_r12_dense: smpi_calibration_rig_line_100m_r12_dense.csv)
#   scripts/smpi_sweep.sh sweep PLATFORM "P..." "DENSITIES" "PATTERNS" [METHODS]
#       PLATFORM gige (1 Gbit/s per node, alpha = 20 us, non-blocking switch)
#       or fattree (100 Gbit/s, two-level non-blocking fat tree of 32 x 32
#       hosts, about 1.5 us end to end); METHODS from dense, allgather, auto,
#       ssar_recursive_double, ssar_split_allgather, dsar_split_allgather,
#       sparcml_dense (default: all but dense)
# Results are appended to bench/results/smpi_*.csv (one line per run, with
# the algorithm the library chose, the wall time, exit status and peak
# memory of the simulation, resident plus swapped);
# SMPI_N (default 16777216), SMPI_REPS (default 5), SMPI_TIMEOUT
# (seconds per run, default 1800), SMPI_MEM_MB (default 12000) and SMPI_RESULTS
# (the directory of the CSVs, default bench/results) adjust a run; SMPI_CFG
# adds smpirun options, e.g. --cfg=smpi/simulate-computation:no (network
# time only: bench/RESULTS.md, "Charged computation") or a trace for
# bench/smpi/bursts.py; SMPI_CHARGE=kernels runs the program whose stream
# kernels are charged at fixed prices per entry instead of timed on this
# noisy host (bench/smpi/charge_kernels.c; computation otherwise not
# simulated; a run whose sums turn dense stops: no price for that).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build-smpi
bench=$out/sparcml_bench_smpi
results=${SMPI_RESULTS:-$top/bench/results}
N=${SMPI_N:-16777216}
reps=${SMPI_REPS:-5}
# SMPI's default message factors were fitted to another cluster: off, so a
# link is exactly its latency and bandwidth; no cross traffic of TCP acks;
# the collectives MPICH would run; the probe's polling quantum fixed (iprobe_s
# below).
cfg=(--cfg=smpi/host-speed:1Gf --cfg=smpi/lat-factor:0:1 --cfg=smpi/bw-factor:0:1
     --cfg=network/crosstraffic:0 --cfg=smpi/coll-selector:mpich --cfg=smpi/grow-injected-times:no
     --log=root.thres:warning --log=xbt_cfg.thres:warning --log=smpi_coll.thres:warning
     --log=smpi_config.thres:error
     --cfg=smpi/shared-malloc:global)
# The benchmark's shared buffers (one N-float vector each): a block of that
# size (rounded up to MiB) makes each one mapping, not N*4/1MiB of them
# (1024 ranks x 64 blocks would pass vm.max_map_count = 65530).
shared_block=$(( (N * 4 + 1048575) / 1048576 * 1048576 ))
cfg+=(--cfg=smpi/shared-malloc-blocksize:$shared_block)

# SimGrid (smpicc, smpirun) and matplotlib for the plot, from Debian.
packages() {
    local missing=() p
    for p in libsimgrid-dev python3-matplotlib; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    echo "smpi_sweep: installing ${missing[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build() {
    local f o objs=()
    packages || return 1
    "$top/scripts/setup.sh" >/dev/null || return 1 # config.h
    mkdir -p "$out"
    # MPICH's configuration without what SMPI 3.32 lacks: MPI-4 large-count
    # and persistent collectives, MPICH's generalized-request classes (so
    # the library takes its MPI-3 paths: int counts, MPI_Iallreduce on a
    # tagged type goes to SMPI; the sweep makes blocking calls only).
    grep -v -e HAVE_PMPI_ALLREDUCE_C -e HAVE_PMPI_ALLREDUCE_INIT -e HAVE_MPIX_GREQUEST_CLASS \
        "$top/build/config.h" >"$out/config.h" || return 1
    local cflags=(-O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -include "$top/bench/smpi/mpi4_shim.h"
                  -I"$out" -I"$top/include" -I"$top/src")
    for f in "$top"/src/*/*.c "$top/bench/sparcml_bench.c"; do
        case $f in */fortran_*.c) continue ;; esac # the MPIs' Fortran bindings
        o=$out/$(basename "$f" .c).o
        # The benchmark's large buffers as SMPI shared allocations (the
        # library's stay real): bench/sparcml_bench.c, xalloc_shared.
        smpicc "${cflags[@]}" -DSPARCML_BENCH_SMPI_SHARED -c "$f" -o "$o" || return 1
        objs+=("$o")
    done
    smpicc -O2 "${objs[@]}" -o "$bench" -Wl,-Bsymbolic -lm -lpthread || return 1
    # The same program with the stream kernels priced instead of timed
    # (SMPI_CHARGE=kernels; bench/smpi/charge_kernels.c).
    smpicc "${cflags[@]}" -c "$top/bench/smpi/charge_kernels.c" -o "$out/charge_kernels.o" || return 1
    local k wraps=()
    for k in merge_add accumulate densify slice range concat copy select from_values; do
        wraps+=("-Wl,--wrap=stream_$k")
    done
    smpicc -O2 "${objs[@]}" "$out/charge_kernels.o" -o "${bench}_kernels" -Wl,-Bsymbolic "${wraps[@]}" \
        -lm -lpthread
}

# platform NAME [P]: writes $out/NAME.xml and $out/NAME.hosts; sets alpha_us and
# beta_ns (for the benchmark's Lemma 5.1 bound and the library's model) and
# iprobe_s: SMPI's MPI_Probe (under the shim's MPI_Mprobe) polls, sleeping
# smpi/iprobe simulated seconds per miss (default 1e-4: it made a tiny
# tagged call 305 us instead of 7 us on the fat tree); a twentieth of alpha
# bounds the error per message at 5 % of a latency.  Only with
# smpi/grow-injected-times off (cfg above): SMPI otherwise multiplies the
# sleep by a counter of failed probes that one static variable keeps for
# all simulated ranks, so with hundreds of ranks polling the quantum was far
# above alpha/20 (fat tree, recursive doubling: 10-36 % too slow at P = 64 to
# 1024, bench/RESULTS.md "The probe's polling quantum").
platform() {
    local name=$1 xml link bb
    case $name in
    rig) # bench/results/rig_alpha_beta.txt: alpha 20.05 us, 120.3 MB/s; the
        # rig's P ranks share 2 cores, so with SMPI_RIG_CORES=2 a rank computes
        # at 2/P of a core (unset: a core each)
        alpha_us=20.05 beta_ns=8.31 link=(120.3MBps 10us) bb=(1TBps FATPIPE) ;;
    rig_line) # the rig with NETSIM_TBF=line (no burst above the rate), from
        # bench/results/rig_line_capacity.txt: alpha 26.57 us, 107.2 MB/s per
        # link, and a shared backbone of 281 MB/s: the 2 cores' packet
        # processing caps the sum of all ranks' traffic (measured with a
        # ring exchange at P = 8; 254 MB/s at P = 4, not reached at P = 2)
        alpha_us=26.57 beta_ns=9.33 link=(107.2MBps 13.28us) bb=(281MBps SHARED) ;;
    rig_line_100m) # the same rig at 100 Mbit/s (netsim.sh up 8 100mbit), from
        # bench/results/rig_line100m_capacity.txt: alpha 46.8 us, 9.45 MB/s
        # per link; a ring exchange at P = 8 moves 9.3 MB/s per rank: the
        # cores keep up, so no shared backbone
        alpha_us=46.82 beta_ns=105.79 link=(9.45MBps 23.41us) bb=(1TBps FATPIPE) ;;
    gige) # 1 Gbit/s per node, 2 x 10 us = 20 us end to end, non-blocking switch
        xml="<cluster id=\"gige\" prefix=\"node-\" suffix=\"\" radical=\"0-1023\" speed=\"1Gf\"
             bw=\"125MBps\" lat=\"10us\" sharing_policy=\"SPLITDUPLEX\"
             bb_bw=\"1PBps\" bb_lat=\"0us\" bb_sharing_policy=\"FATPIPE\"/>"
        alpha_us=20 beta_ns=8 hosts=1024 iprobe_s=1e-6 ;;
    fattree) # 100 Gbit/s, 32 leaf switches of 32 hosts, 32 spines; 4 links x 0.375 us
        xml="<cluster id=\"ft\" prefix=\"node-\" suffix=\"\" radical=\"0-1023\" speed=\"1Gf\"
             bw=\"12.5GBps\" lat=\"0.375us\" sharing_policy=\"SPLITDUPLEX\"
             topology=\"FAT_TREE\" topo_parameters=\"2;32,32;1,32;1,1\"/>"
        alpha_us=1.5 beta_ns=0.08 hosts=1024 iprobe_s=7.5e-8 ;;
    *) echo "smpi_sweep: unknown platform $name" >&2; return 1 ;;
    esac
    if [[ $name == rig* ]]; then
        if [ -n "${SMPI_RIG_MEASURED:-}" ]; then
            alpha_us=$(sed -n 's/^alpha_us=//p' "$SMPI_RIG_MEASURED")
            beta_ns=$(sed -n 's/^beta_ns_per_byte=//p' "$SMPI_RIG_MEASURED")
            [[ $alpha_us =~ ^[0-9.]+$ && $beta_ns =~ ^[0-9.]+$ ]] ||
                { echo "smpi_sweep: no alpha_us= and beta_ns_per_byte= in $SMPI_RIG_MEASURED" >&2; return 1; }
            # A link per host, alpha/2 each way, at 1/beta.
            link=("$(awk -v b="$beta_ns" 'BEGIN { printf "%.4gMBps", 1e3 / b }')"
                  "$(awk -v a="$alpha_us" 'BEGIN { printf "%.4gus", a / 2 }')")
        fi
        xml=$(rig_cluster "${2:-1}" "${link[@]}" "${bb[@]}")
        hosts=8 iprobe_s=1e-6
    fi
    cat >"$out/$name.xml" <<EOF
<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    $xml
  </zone>
</platform>
EOF
    seq 0 $((hosts - 1)) | sed 's/^/node-/' >"$out/$name.hosts"
}

# rig_cluster P LINK_BW LINK_LAT BACKBONE_BW BACKBONE_POLICY: the rig's 8
# hosts, full-duplex links, one backbone, hosts computing at rig_speed P.
rig_cluster() {
    echo "<cluster id=\"rig\" prefix=\"node-\" suffix=\"\" radical=\"0-7\" speed=\"$(rig_speed "$1")\"
             bw=\"$2\" lat=\"$3\" sharing_policy=\"SPLITDUPLEX\"
             bb_bw=\"$4\" bb_lat=\"0us\" bb_sharing_policy=\"$5\"/>"
}

rig_speed() { awk -v p="$1" -v c="${SMPI_RIG_CORES:-0}" 'BEGIN { printf "%.4fGf", (c > 0 && p > c) ? c / p : 1 }'; }

# mem_kb SID: proportional memory (kB) of the session's processes, resident
# (Pss) plus swapped out (SwapPss), so that a run on a machine with a swap
# file is measured and bounded by all it holds.  Not RSS: SMPI's shared
# allocations map one file page many times, and RSS counts every mapping
# (1024 ranks x 64 MiB "resident" in a few MiB of memory); Pss divides a
# page among its mappings.
mem_kb() {
    local p s=0 v
    for p in $(ps -o pid= -s "$1" 2>/dev/null); do
        v=$(awk '/^(Pss|SwapPss):/ { s += $2 } END { print s + 0 }' "/proc/$p/smaps_rollup" 2>/dev/null)
        s=$((s + ${v:-0}))
    done
    echo "$s"
}

# run PLATFORM P DENSITY PATTERN METHOD CSV: one simulation, one CSV line.
run() {
    local plat=$1 P=$2 d=$3 pat=$4 method=$5 csv=$6 bm alg=auto envs=() t0 line chosen
    local prog=$bench charge=()
    if [ "${SMPI_CHARGE:-}" = kernels ]; then
        prog=${bench}_kernels charge=(--cfg=smpi/simulate-computation:no)
    fi
    case $method in
    dense | allgather) bm=$method ;;
    sparcml_dense) bm=sparcml alg=dense ;;
    *) bm=sparcml alg=$method ;;
    esac
    # The operator's settings for the platform; one rank per simulated host.
    # SMPI_COST=calibrated: no cost-model variable, the library measures
    # them at MPI_Init; SMPI_COST=defaults: none either, and no calibration
    # (the built-in defaults).  The ranks per core stay 1 either way: every
    # simulated rank has a host of its own, which the detection on this
    # machine cannot see.
    local label=$method
    [ "$method" = auto ] && [ "${SMPI_COST:-set}" != set ] && label=auto_$SMPI_COST
    envs=(SPARCML_ALGORITHM=$alg SPARCML_RANKS_PER_CORE=1 SPARCML_STATS=1 BENCH_LABEL=$label)
    case ${SMPI_COST:-set} in
    set) envs+=(SPARCML_ALPHA_US=$alpha_us SPARCML_BETA_NS_PER_BYTE=$beta_ns) ;;
    defaults) envs+=(SPARCML_CALIBRATE=0) ;;
    calibrated) ;;
    *) echo "SMPI_COST must be set, defaults or calibrated" >&2; return 1 ;;
    esac
    t0=$SECONDS
    # All ranks live in this one process, with real library buffers: a run that
    # would not fit is stopped at SMPI_MEM_MB of memory, resident or swapped
    # (rc 137, peak in peak_mb), instead of pushing the machine out of memory.
    setsid env "${envs[@]}" timeout "${SMPI_TIMEOUT:-1800}" smpirun -np "$P" \
        -platform "$out/$plat.xml" -hostfile "$out/$plat.hosts" "${cfg[@]}" --cfg=smpi/iprobe:"$iprobe_s" \
        "${charge[@]}" ${SMPI_CFG:-} "$prog" --n "$N" --density "$d" --pattern "$pat" --reps "$reps" --warmup 1 \
        --methods "$bm" --alpha-us "$alpha_us" --beta-ns "$beta_ns" >"$out/run.$plat.$$.log" 2>&1 &
    local pid=$! rc kb peak_kb=0
    while kill -0 "$pid" 2>/dev/null; do
        kb=$(mem_kb "$pid")
        [ "$kb" -gt "$peak_kb" ] && peak_kb=$kb
        if [ "$kb" -gt $((${SMPI_MEM_MB:-12000} * 1024)) ]; then
            kill -9 -- -"$pid" 2>/dev/null
            break
        fi
        sleep 1
    done
    wait "$pid"
    rc=$?
    line=$(cat "$out/run.$plat.$$.log")
    chosen=$(echo "$line" | awk '/^sparcml: [a-z_]+ +[0-9]+ /{ if ($3 > n) { n = $3; a = $2 } } END { print a }')
    if echo "$line" | grep -q "WRONG RESULT"; then rc=99; fi
    line=$(echo "$line" | grep -E "^[a-z_]+,$P,")
    [ -n "$line" ] || line="$label,$P,$N,$d,$pat,float,NA,NA,NA,NA,NA,NA,NA,$reps"
    echo "$plat,$line,$chosen,$((SECONDS - t0)),$rc,$((peak_kb / 1024))" | tee -a "$csv"
}

header="platform,method,P,N,density,pattern,vtype,median_s,min_s,bytes_sent_per_rank,bound_disjoint_s,bound_identical_s,bound_applies,k,reps,algorithm,wall_s,rc,peak_mb"

calibrate() {
    local rig=${SMPI_RIG:-rig} Ps=${*:-2 3 4 5 6 7 8} P m
    local tag=${SMPI_TAG-${SMPI_RIG_MEASURED:+_$(basename "$SMPI_RIG_MEASURED" .txt)}}
    local csv=$results/smpi_calibration${SMPI_RIG:+_$SMPI_RIG}${SMPI_RIG_CORES:+_cores$SMPI_RIG_CORES}$tag.csv
    mkdir -p "$results"
    [ -f "$csv" ] || echo "$header" >"$csv"
    for P in $Ps; do
        platform "$rig" "$P" || return 1
        for m in ${SMPI_METHODS:-allgather auto ssar_recursive_double ssar_split_allgather dense}; do
            run "$rig" "$P" 0.001 random "$m" "$csv"
        done
    done
}

sweep() {
    local plat=$1 Ps=$2 ds=$3 pats=$4 methods=${5:-allgather auto ssar_recursive_double ssar_split_allgather dsar_split_allgather}
    local csv=$results/smpi_$plat.csv P d pat m
    mkdir -p "$results"
    platform "$plat" || return 1
    [ -f "$csv" ] || echo "$header" >"$csv"
    for P in $Ps; do
        for d in $ds; do
            for pat in $pats; do
                for m in $methods; do run "$plat" "$P" "$d" "$pat" "$m" "$csv"; done
            done
        done
    done
}

case ${1:-} in
build) build ;;
plot)
    packages && /usr/bin/python3 "$top/bench/smpi/plot.py" "$results" "$results"/smpi_gige.csv "$results"/smpi_fattree.csv &&
        /usr/bin/python3 "$top/bench/smpi/plot.py" --tag network_only \
            --dense "$results"/smpi_dense_rab_rdb.csv "$results" "$results"/smpi_network_only_*.csv ;;
calibrate) shift; [ -x "$bench" ] || build || exit 1; calibrate "$@" ;;
sweep) shift; [ -x "$bench" ] || build || exit 1; sweep "$@" ;;
*) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
