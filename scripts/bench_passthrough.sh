#!/bin/bash
# bench_passthrough.sh -- what an untagged call costs with the library
# preloaded: bench/passthrough_bench, 8-byte MPI_FLOAT MPI_SUM
# MPI_Allreduce calls on MPI_COMM_WORLD, under MPICH and Open MPI, with
# three preloads built here: the library, an empty shared object (the
# vendor alone) and bench/support/bare_interposer.c (the hop any
# interposer takes, and nothing else).
#   1. time: at P = 1 and 2 (one rank per core), ROUNDS rounds of one run
#      with each preload, the one that goes first rotating; each run times
#      21 batches of 100,000 calls and reports its fastest batch (the
#      slowest rank's time in it), the one other processes disturbed
#      least.  Per MPI and P: the medians of the runs' ns per call and the
#      median, minimum and maximum over the rounds of library / empty and
#      of library / bare.  In the same rounds, one run per preload of
#      passthrough_bench --inproc (100 pairs of batches of 10,000 calls
#      through MPI_Allreduce and straight to PMPI_Allreduce, alternating in
#      one process: the machine's noise mostly cancels): its fastest
#      MPI_Allreduce batch over its fastest PMPI_Allreduce batch, 1 with
#      the empty preload by construction.
#   2. instructions: callgrind at P = 1 counts allreduce_calls, the loop
#      around the calls, in a run of N and one of 2N calls: the difference
#      over N is the instructions per call, without start-up or first-call
#      costs; also for MPI_Iallreduce and MPI_Wait (--nonblocking).  (At
#      P = 2 the vendor's polling for the other rank makes the count vary;
#      the library's part of it does not depend on P.)
# Timing on a shared machine is noisy: the timed runs go at nice -20 when
# run as root (NICE sets another value), and the ratios' spread is printed
# beside their median; read the instruction counts beside both.
#   scripts/bench_passthrough.sh [ROUNDS]     (default 10; 0: instructions only)
# Prints CSV: mpi,P,measure,empty,bare,library,lib_empty,lib_empty_min,
# lib_empty_max,lib_bare,lib_bare_min,lib_bare_max,rounds; measure
# ns_per_call, inproc_ratio (each preload's median in-process ratio, the
# library's median, minimum and maximum in the lib_empty columns),
# instructions_per_call or, for MPI_Iallreduce and MPI_Wait,
# instructions_per_nonblocking_call.  SHIM_MPICH and SHIM_OPENMPI name
# other builds of libsparcml.so to measure; PS the process counts timed
# (default "1 2"); CALLGRIND=no leaves the instructions out.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-10}
[[ "$rounds" =~ ^[0-9]+$ ]] || { echo "usage: bench_passthrough.sh [ROUNDS]" >&2; exit 2; }
export HYDRA_CONFIG_FILE=/dev/null
say() { echo "bench_passthrough: $*" >&2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for mpi in mpich openmpi; do
    b=build
    [ "$mpi" = openmpi ] && b=build-openmpi
    make -C "$top/$b" -s -j2 src/libsparcml.la bench/passthrough_bench >/dev/null || { say "$b: build failed"; exit 1; }
    "mpicc.$mpi" -O2 -fno-plt -shared -fPIC "$top/bench/support/bare_interposer.c" -o "$tmp/bare_$mpi.so" &&
        "mpicc.$mpi" -shared -fPIC -x c /dev/null -o "$tmp/empty_$mpi.so" || { say "$mpi: cannot build the preloads"; exit 1; }
done
if [ "$(id -u)" -eq 0 ]; then nice=${NICE:--20}; else nice=${NICE:-0}; fi
[[ "$nice" =~ ^-?[0-9]+$ ]] || { say "bad NICE"; exit 2; }
shim_mpich=${SHIM_MPICH:-$top/build/src/.libs/libsparcml.so}
shim_openmpi=${SHIM_OPENMPI:-$top/build-openmpi/src/.libs/libsparcml.so}

# [prio=NICE] launch MPI P PRELOAD program args...
launch() {
    local mpi=$1 p=$2 pre=$3
    shift 3
    case $mpi in
        mpich) nice -n "${prio:-0}" timeout -k 10 300 mpiexec.mpich -n "$p" -bind-to core env LD_PRELOAD="$pre" "$@" ;;
        openmpi) nice -n "${prio:-0}" timeout -k 10 300 mpirun.openmpi --allow-run-as-root --oversubscribe \
                     --bind-to core -n "$p" env LD_PRELOAD="$pre" "$@" ;;
    esac
}
bench_of() { [ "$1" = mpich ] && echo "$top/build/bench/passthrough_bench" || echo "$top/build-openmpi/bench/passthrough_bench"; }
preload_of() { # MPI empty|bare|library
    case $2 in
        library) [ "$1" = mpich ] && echo "$shim_mpich" || echo "$shim_openmpi" ;;
        *) echo "$tmp/$2_$1.so" ;;
    esac
}

# Prints the ns per call with the empty, bare and library preloads, then
# their in-process ratios, one line per round.
time_rounds() { # MPI P
    local kinds=(empty bare library) ns r
    for ((i = 0; i < rounds; i++)); do
        declare -A t=() q=()
        for ((k = 0; k < 3; k++)); do
            local which=${kinds[$(((i + k) % 3))]} pre
            pre=$(preload_of "$1" "$which")
            ns=$(prio=$nice launch "$1" "$2" "$pre" "$(bench_of "$1")" 100000 21 | sed -n 's/^ns_per_call,//p')
            r=$(prio=$nice launch "$1" "$2" "$pre" "$(bench_of "$1")" --inproc 10000 100 |
                awk -F, '$1 == "inproc" { print $2 / $3 }')
            [ -n "$ns" ] && [ -n "$r" ] || { say "$1 P=$2 $which: no result"; return 1; }
            t[$which]=$ns q[$which]=$r
        done
        echo "${t[empty]} ${t[bare]} ${t[library]} ${q[empty]} ${q[bare]} ${q[library]}"
    done
}

# Instructions per call of allreduce_calls at P = 1 with PRELOAD.
instructions() { # MPI PRELOAD [--nonblocking]
    local n=20000 ir=()
    for calls in $n $((2 * n)); do
        launch "$1" 1 "$2" valgrind --tool=callgrind --collect-atstart=no --toggle-collect=allreduce_calls \
            --callgrind-out-file="$tmp/cg.out" "$(bench_of "$1")" ${3:+"$3"} "$calls" 1 >/dev/null 2>"$tmp/cg.err" ||
            { say "$1: callgrind failed"; cat "$tmp/cg.err" >&2; return 1; }
        ir+=("$(sed -n 's/^totals: //p' "$tmp/cg.out")")
    done
    awk -v a="${ir[0]}" -v b="${ir[1]}" -v n="$n" 'BEGIN { printf "%.1f\n", (b - a) / n }'
}

echo "mpi,P,measure,empty,bare,library,lib_empty,lib_empty_min,lib_empty_max,lib_bare,lib_bare_min,lib_bare_max,rounds"
for mpi in mpich openmpi; do
    for p in ${PS:-1 2}; do
        [ "$rounds" -eq 0 ] && continue
        say "$mpi P=$p: $rounds rounds"
        time_rounds "$mpi" "$p" >"$tmp/rounds" || exit 1
        awk -v m="$mpi" -v p="$p" '
            function med(a, n,   i, j, x) {
                for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
                return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
            { n++; e[n] = $1; b[n] = $2; l[n] = $3; re[n] = $3 / $1; rb[n] = $3 / $2; qe[n] = $4; qb[n] = $5; ql[n] = $6 }
            END { me = med(e, n); mb = med(b, n); ml = med(l, n); mre = med(re, n); mrb = med(rb, n)
                  printf "%s,%d,ns_per_call,%.2f,%.2f,%.2f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%d\n",
                         m, p, me, mb, ml, mre, re[1], re[n], mrb, rb[1], rb[n], n
                  mqe = med(qe, n); mqb = med(qb, n); mql = med(ql, n)
                  printf "%s,%d,inproc_ratio,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,,,,%d\n",
                         m, p, mqe, mqb, mql, mql, ql[1], ql[n], n }' "$tmp/rounds"
    done
    for mode in blocking nonblocking; do
        [ "${CALLGRIND:-yes}" = no ] && continue
        say "$mpi: callgrind, $mode"
        flag= measure=instructions_per_call
        [ "$mode" = nonblocking ] && flag=--nonblocking measure=instructions_per_nonblocking_call
        e=$(instructions "$mpi" "$(preload_of "$mpi" empty)" $flag) &&
            b=$(instructions "$mpi" "$(preload_of "$mpi" bare)" $flag) &&
            l=$(instructions "$mpi" "$(preload_of "$mpi" library)" $flag) || exit 1
        awk -v m="$mpi" -v w="$measure" -v e="$e" -v b="$b" -v l="$l" \
            'BEGIN { printf "%s,1,%s,%s,%s,%s,%.4f,,,%.4f,,,\n", m, w, e, b, l, l / e, l / b }'
    done
done
