#!/bin/bash
# bench_compress_speed.sh -- SPARCML_COMPRESS (topk, cltk) against the
# vendor's dense MPI_Allreduce of the same gradient, side by side in one run
# (bench/compress_bench.c: dense float gradient, every entry nonzero, fresh
# on each rank at each call; bench/compress_train.py: a training loop);
# results in bench/results/compress_*.
#   speed      on the emulated Gigabit cluster (scripts/netsim.sh, needs
#              root), P = 8, N = 16M floats (64 MiB): topk and cltk at
#              density 1e-3 and 1e-2 -> compress_speed.csv;
#   scale      at density 1e-3: P = 2, 4 on the rig (P = 8 is the speed
#              part's row, when it ran), N = 16M; P = 2 .. 64 on shared
#              memory (yield preload), N = 4M floats (16 MiB: 64 ranks'
#              buffers, residuals and scratch fit in memory and a run takes
#              under a minute) -> compress_scale.csv and compress_scale.png
#              (bytes per rank per call and time per call against P);
#   breakdown  where a compressed call's time goes, with the error
#              feedback's passes and without them
#              (SPARCML_COMPRESS_FEEDBACK=0): P = 1 (one rank's passes
#              alone: acc = eps + g with the selection, densify) and P = 8
#              on the rig, with SPARCML_VERBOSE=1 (the sparse algorithm's
#              time_us, rank 0) -> compress_breakdown.csv;
#   train      bench/compress_train.py: a PyTorch MLP whose 4.5 MiB
#              gradient is averaged with mpi4py, P = 4 on shared memory,
#              Open MPI (Debian's mpi4py), 300 steps, one replica through
#              the library and one straight to the vendor, alternating step
#              by step in one job; topk and cltk at the default density,
#              each route the library chose counted by SPARCML_STATS ->
#              compress_train.csv (the load average before and after each
#              run: the machine may be shared).
# On the rig the cost model (calibrated at MPI_Init, with timed prices)
# chooses the route, as for any program.  On shared memory the selections
# rarely pay (the passes over the buffer cost about what the vendor's
# allreduce does): the scale and breakdown parts measure them anyway, with
# the cost model set whole as for a Gigabit network (scale) or the
# algorithm forced (P = 1, whose route is otherwise the vendor's copy);
# the train part measures the choice.
# Every run has SPARCML_STATS=1 (a few counters per call): bytes per rank
# per call = bytes_sent / (compressed calls x P), warm-up calls included
# (they send as many), cltk's broadcast of the leader's indices included
# (SPARCML_STATS counts each rank's share); bcast_bytes_per_rank_call is that
# share (32 + 4k bytes, rounded up to 8, received by P - 1 ranks, over P),
# computed, not measured.
# The rig's 8 ranks share this machine's 2 cores, and so do the shared-
# memory runs' up to 64: the compressed times are CPU-bound there (each
# rank's passes over its N values run 4 to 32 ranks per core), the
# vendor's at P = 8 on the rig are network-bound.
#   scripts/bench_compress_speed.sh [--no-rig] [--parts speed,scale,breakdown,train]
# Environment: COMPRESS_CALLS (timed pairs per run, default 10),
# COMPRESS_STEPS (training steps, default 300), COMPRESS_QUIET_MAX (seconds
# to wait for an idle machine before each run, default 60),
# COMPRESS_QUIET_IDLE (idle percentage, default 85), NETSIM_PREFIX (the
# rig's namespaces, scripts/netsim.sh).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
b="$top/build"
res="$top/bench/results"
export HYDRA_CONFIG_FILE=/dev/null
rig_wanted=1 parts=speed,scale,breakdown,train
while [ $# -gt 0 ]; do
    case $1 in
    --no-rig) rig_wanted=0 ;;
    --parts) parts=$2; shift ;;
    *) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
    esac
    shift
done
part() { case ",$parts," in *",$1,"*) return 0 ;; esac; return 1; }
make -C "$b" -s -j2 src/libsparcml.la bench/compress_bench tests/support/libyield.la >/dev/null \
    || { echo "bench_compress_speed: build failed" >&2; exit 1; }
shim="$b/src/.libs/libsparcml.so"
yield="$b/tests/support/.libs/libyield.so"
cb="$b/bench/compress_bench"
calls=${COMPRESS_CALLS:-10}
steps=${COMPRESS_STEPS:-300}
big=16777216 small=4194304
# The cost model set whole, as for a Gigabit network: every call compresses.
gigabit="SPARCML_ALPHA_US=20 SPARCML_BETA_NS_PER_BYTE=8.3 SPARCML_GAMMA_NS_PER_ENTRY=2.5"
say() { echo "bench_compress_speed: $*" >&2; }
quiet_max=${COMPRESS_QUIET_MAX:-60}
quiet_idle=${COMPRESS_QUIET_IDLE:-85}
quiet_note() { say "$*"; }
. "$top/scripts/quiet.sh"
mkdir -p "$res"
header=where,P,N,mode,density,k,calls,vendor_median_ms,vendor_mean_ms,compressed_median_ms,compressed_mean_ms,speedup,result_nnz,bytes_per_rank_call,bcast_bytes_per_rank_call,dense_bytes_per_rank_call,bytes_ratio
out=$(mktemp)
rig_up=0
cleanup() { rm -f "$out"; [ $rig_up = 1 ] && "$top/scripts/netsim.sh" down >&2; }
trap cleanup EXIT

# The CSV row of one compress_bench run (one N) joined with its STATS line:
# WHERE on stdin's output.
row() {
    awk -F, -v where="$1" '
        /^[0-9]/ { split($0, r, ","); have = 1 }
        /^sparcml: compressed calls:/ {
            c = $0; sub(/.*compressed calls: /, "", c); calls = c + 0
            s = $0; sub(/.*bytes_sent /, "", s); sent = s + 0
            d = $0; sub(/.*dense_equiv /, "", d); dense = d + 0
        }
        END {
            if (!have || !calls) { print "no result" > "/dev/stderr"; exit 1 }
            P = r[1]; N = r[2]; dens = r[4]
            k = dens * N; k = (k == int(k)) ? k : int(k) + 1
            bc = 0
            if (r[3] == "cltk") { m = 32 + 4 * k; m = int((m + 7) / 8) * 8; bc = (P - 1) * m / P }
            per = sent / (calls * P)
            printf "%s,%s,%s,%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%.0f,%.0f,%.0f,%.5f\n", where, r[1], r[2], r[3], dens, k,
                   r[5], r[6], r[7], r[8], r[9], r[10], r[11], per, bc, dense / (calls * P), sent / dense
        }'
}

# shm P N MODE DENSITY [CALLS]: the selections measured where they would not
# pay (the model set whole).
shm() {
    wait_quiet
    timeout 900 mpiexec.mpich -n "$1" env LD_PRELOAD="$yield:$shim" SPARCML_COMPRESS="$3" \
        SPARCML_COMPRESS_DENSITY="$4" SPARCML_STATS=1 $gigabit "$cb" "$2" "${5:-$calls}" 2 | row shm
}

# rig P N MODE DENSITY
rig() {
    wait_quiet
    env LD_PRELOAD="$shim" SPARCML_COMPRESS="$3" SPARCML_COMPRESS_DENSITY="$4" SPARCML_STATS=1 \
        NETSIM_TIMEOUT=900 "$top/scripts/netsim.sh" run "$1" -- "$cb" "$2" "$calls" 2 | row rig
}

if [ $rig_wanted = 1 ] && { part speed || part scale || part breakdown; }; then
    "$top/scripts/netsim.sh" up 8 1gbit >&2 || { say "netsim up failed"; exit 1; }
    rig_up=1
fi

if part speed && [ $rig_up = 1 ]; then
    say "speed on the rig, P = 8, N = $big"
    {
        echo "$header"
        for m in topk cltk; do
            for d in 0.001 0.01; do rig 8 $big $m $d; done
        done
    } | tee "$res/compress_speed.csv"
fi

if part scale; then
    say "scale at density 1e-3"
    {
        echo "$header"
        if [ $rig_up = 1 ]; then
            for p in 2 4; do
                for m in topk cltk; do rig $p $big $m 0.001; done
            done
            grep ',0.001,' "$res/compress_speed.csv"
        fi
        for p in 2 4 8 16 32 64; do
            for m in topk cltk; do shm $p $small $m 0.001; done
        done
    } | tee "$out"
    # Rows in the order where, mode, P.
    { head -1 "$out"; sed 1d "$out" | sort -t, -k1,1 -k4,4 -k2,2n; } >"$res/compress_scale.csv"
    if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
        /usr/bin/python3 "$top/bench/compress_scale_plot.py" "$res/compress_scale.csv" "$res/compress_scale.png"
    else
        say "no matplotlib (python3-matplotlib), no plot"
    fi
fi

# With SPARCML_COMPRESS_FEEDBACK=0 a call skips the error feedback's work
# (acc = eps + g with its norm, and eps at the sent indices), and only it:
# the difference of the two rows is what it costs.  P = 1 is one rank's
# passes alone on a core (its "vendor" is a copy of the 64 MiB), with the
# algorithm forced (at P = 1 the route is otherwise the vendor's copy);
# alg_median_ms is the median over the calls (warm-up included) of the
# sparse algorithm's time_us that SPARCML_VERBOSE prints (rank 0); the rest
# of a compressed call is the rank's passes over its N values, the
# agreement and, for cltk, the broadcast of the leader's indices.
verbose_median() {
    awk '/^sparcml: allreduce algorithm=/ { t = $0; sub(/.*time_us=/, "", t); v[n++] = t + 0 }
         /^[0-9]/ { split($0, r, ","); vm = r[6]; cm = r[8]; sp = r[10] }
         END {
             for (i = 1; i < n; i++)
                 for (j = i; j > 0 && v[j - 1] > v[j]; j--) { x = v[j]; v[j] = v[j - 1]; v[j - 1] = x }
             printf "%s,%s,%.3f,%s\n", vm, cm, n ? (n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) / 1e3 : -1, sp
         }'
}
if part breakdown; then
    say "where the time goes, N = $big, density 1e-3"
    {
        echo "where,P,N,mode,density,feedback,vendor_median_ms,compressed_median_ms,alg_median_ms,speedup"
        for m in topk cltk; do
            for f in 1 0; do
                wait_quiet
                echo "local,1,$big,$m,0.001,$f,$(timeout 300 mpiexec.mpich -n 1 env LD_PRELOAD="$shim" SPARCML_COMPRESS=$m \
                    SPARCML_COMPRESS_DENSITY=0.001 SPARCML_COMPRESS_FEEDBACK=$f SPARCML_ALGORITHM=ssar_recursive_double \
                    SPARCML_VERBOSE=1 "$cb" $big "$calls" 2 | verbose_median)"
            done
        done
        if [ $rig_up = 1 ]; then
            for m in topk cltk; do
                for f in 1 0; do
                    wait_quiet
                    echo "rig,8,$big,$m,0.001,$f,$(env LD_PRELOAD="$shim" SPARCML_COMPRESS=$m \
                        SPARCML_COMPRESS_DENSITY=0.001 SPARCML_COMPRESS_FEEDBACK=$f SPARCML_VERBOSE=1 NETSIM_TIMEOUT=900 \
                        "$top/scripts/netsim.sh" run 8 -- "$cb" $big 6 2 | verbose_median)"
                done
            done
        fi
    } | tee "$res/compress_breakdown.csv"
fi

# The training loop's summary lines and the STATS report, as a CSV row.
train_row() {
    awk -v mode="$1" -v steps="$2" -v before="$3" -v after="$4" '
        /^replica=library / { for (i = 1; i <= NF; i++) { split($i, kv, "="); lib[kv[1]] = kv[2] } }
        /^replica=vendor / { for (i = 1; i <= NF; i++) { split($i, kv, "="); ven[kv[1]] = kv[2] } }
        /^sparcml: compressed calls:/ {
            s = $0; sub(/.*compressed calls: /, "", s); sel = s + 0
            v = $0; sub(/.*summed exactly by the vendor: /, "", v); vend = v + 0
        }
        END {
            if (!lib["comm_s"] || !ven["comm_s"]) { print "no result" > "/dev/stderr"; exit 1 }
            printf "%s,4,%s,%s,%s,%.3f,%s,%s,%.3f,%d,%d,%s,%s\n", mode, steps, lib["comm_s"], ven["comm_s"],
                   lib["comm_s"] / ven["comm_s"], lib["median_ms"], ven["median_ms"], lib["median_ms"] / ven["median_ms"],
                   sel, vend, before, after
        }'
}
if part train; then
    ompi_shim="$top/build-openmpi/src/.libs/libsparcml.so"
    make -C "$top/build-openmpi" -s -j2 src/libsparcml.la >/dev/null || { say "build-openmpi failed"; exit 1; }
    say "the training loop, P = 4 on shared memory, $steps steps"
    {
        echo "mode,P,steps,library_comm_s,vendor_comm_s,comm_ratio,library_median_ms,vendor_median_ms,median_ratio,selected_calls,vendor_calls,load_before,load_after"
        for m in topk cltk; do
            wait_quiet
            before=$(cut -d' ' -f1 /proc/loadavg)
            timeout 3600 mpirun.openmpi -n 4 --allow-run-as-root --oversubscribe -x LD_PRELOAD="$ompi_shim" \
                -x SPARCML_COMPRESS=$m -x SPARCML_STATS=1 /usr/bin/python3 "$top/bench/compress_train.py" \
                --steps "$steps" >"$out" 2>&1
            train_row $m "$steps" "$before" "$(cut -d' ' -f1 /proc/loadavg)" <"$out"
        done
    } | tee "$res/compress_train.csv"
fi
say "wrote the parts' CSVs in $res ($parts)"
