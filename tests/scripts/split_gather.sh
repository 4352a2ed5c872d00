#!/bin/bash
# The split algorithms' three gathers (src/alg/split_gather.c,
# SPARCML_SPLIT_GATHER): with each forced -- the vendor's allgatherv, the
# library's recursive doubling (Bruck's dissemination where P is not a
# power of two) and the library's ring -- ssar_split_allgather and
# dsar_split_allgather run the case matrix of sparse_allreduce (reference
# sums, bitwise identical results on every rank) at P = 1, 2, 3, 4, 5, 7, 8,
# each P blocking, non-blocking (MPI_Test in a loop) or persistent; every call
# that gathered names the forced gather on its verbose line and none names
# another; and the three give the same bits (the first result hash of
# every case, written to a file: Open MPI may cut a line of standard output
# into another rank's; compared line by line).  The same with QSGD (4 bits:
# the sizes are allgathered first) at P = 3, 4 and 5 (those of them in
# MATRIX_RANKS), the vendor's and the ring.  Under auto the model's choice
# shows (below).
. "$(dirname "$0")/common.sh"
TIMEOUT=180
bench="${BENCHBIN:?}/sparcml_bench"
hashes=$(mktemp)
trap 'rm -f "$out" "$err" "$hashes" "$hashes".*' EXIT

gathers=(vendor doubling ring)

# run_gather GATHER P ALG [VAR=value ...] -- ARGS: one run of sparse_allreduce;
# its hashes go to $hashes.GATHER.
run_gather() {
    local g=$1 p=$2 alg=$3 others
    shift 3
    others=$(printf '%s\n' "${gathers[@]}" | grep -vx "$g" | sed 's/^/gather=/' | paste -sd'|')
    rm -f "$hashes.$g"
    run_mpi "$p" "$with_shim" SPARCML_ALGORITHM="$alg" SPARCML_SPLIT_GATHER="$g" SPARCML_VERBOSE=1 "$@" --hashes="$hashes.$g"
    rc=$?
    check "gather=$g $alg P=$p ${*//$TESTBIN\//}: $(tail -1 "$out")" \
        '[ "$rc" -eq 0 ] && [ ! -s "$err" ] && grep -q "failures=0" "$out" &&
         grep -q "gather=$g" "$out" && ! grep -Eq "$others" "$out"'
}

# same_bits DESCRIPTION GATHER...: the runs just made gave the vendor's hashes.
same_bits() {
    local what=$1 g
    shift
    for g in "$@"; do
        check "$what: the vendor's and the $g gathers give the same bits ($(wc -l <"$hashes.vendor") cases)" \
            '[ -s "$hashes.vendor" ] && cmp -s "$hashes.vendor" "$hashes.$g"'
    done
}

calls=(blocking test persistent)
shift_calls=0
for alg in ssar_split_allgather dsar_split_allgather; do
    i=0
    # MATRIX_RANKS narrows P as in matrix.sh (scripts/test.sh's Open MPI and
    # sanitizer passes; the full range runs in the MPICH pass).
    for p in ${MATRIX_RANKS:-1 2 3 4 5 7 8}; do
        # One call mode per (algorithm, P), in turn and shifted between the
        # algorithms, so that every mode meets every exchange of each
        # algorithm (recursive doubling at 4 and 8, Bruck's at 3, 5 or 7, the
        # ring at each); half of the value types each.
        call=${calls[$(((i + shift_calls) % 3))]}
        [ $((i % 2)) = 0 ] && types=float,int64 || types=double,int32
        for g in "${gathers[@]}"; do
            run_gather "$g" "$p" "$alg" -- "$TESTBIN/sparse_allreduce" --call=$call --types=$types
        done
        same_bits "$alg P=$p --call=$call" doubling ring
        i=$((i + 1))
    done
    shift_calls=1
    for p in $(printf '%s\n' ${MATRIX_RANKS:-3 4 5} | grep -x '[345]'); do
        for g in vendor ring; do
            run_gather "$g" "$p" "$alg" SPARCML_QSGD_BITS=4 -- "$TESTBIN/sparse_allreduce" --types=float,double
        done
        same_bits "$alg P=$p QSGD bits=4" ring
    done
done

# auto_gather P N DENSITY [VAR=VALUE...]: the gather the model chose for
# the timed call.
auto_gather() {
    local p=$1 n=$2 d=$3
    shift 3
    run_mpi "$p" "$with_shim" SPARCML_ALGORITHM=ssar_split_allgather SPARCML_VERBOSE=1 "$@" -- \
        "$bench" --bytes --n "$n" --density "$d" --warmup 1
    grep '^sparcml: allreduce' "$out" | tail -1 | sed -n 's/.* gather=\([a-z]*\).*/\1/p'
}
# The cost model set (no calibration, so no measured vendor_gather; one
# rank per core, so alpha and beta are the model's own): the vendor's below
# where MPICH's allgather runs a ring (512 KiB at P = 4, 80 KiB at P = 5),
# the library's recursive doubling from there up to where its bytes' 1/8
# penalty outweighs a ring's P - 1 - ceil(log2 P) extra rounds (that many
# times 8 alpha / beta, times P / (P - 1), in all: one extra round at P = 4
# and 5, 5.33 MB and 5 MB), the library's ring beyond.  Gathered:
# P = 4, N = 1M, d = 0.1: ~2.8 MB; d = 1e-3: ~32 KB; N = 4M, d = 0.1: ~11
# MB; P = 5, N = 1M, d = 0.01: ~400 KB; N = 256K, d = 1e-3: ~10 KB.
# Calibrated: the vendor's gather measured slower than the library's
# recursive doubling is priced (vendor_gather above 1.125) gives the
# library's everywhere; else the vendor's below its ring threshold (the
# points at d = 1e-3) and the library's above.
model="SPARCML_ALPHA_US=100 SPARCML_BETA_NS_PER_BYTE=0.2 SPARCML_GAMMA_NS_PER_ENTRY=2 SPARCML_RANKS_PER_CORE=1"
for pt in "4 1048576 0.1 doubling" "4 1048576 0.001 vendor" "4 4194304 0.1 ring" "5 1048576 0.01 doubling" \
    "5 262144 0.001 vendor"; do
    read -r p n d want <<<"$pt"
    # shellcheck disable=SC2086
    got=$(auto_gather "$p" "$n" "$d" $model)
    check "auto, model set, P=$p N=$n density $d: the $want gather (got: $got)" '[ "$got" = "$want" ]'
    got=$(auto_gather "$p" "$n" "$d")
    factor=$(sed -n 's/^sparcml: calibrated .* vendor_gather=\([0-9.e+]*\) .*/\1/p' "$out")
    if awk -v f="$factor" 'BEGIN { exit !(f > 1.125) }' || [ "$d" != 0.001 ]; then
        legal="doubling|ring"
    else
        legal=vendor
    fi
    check "auto, calibrated (vendor_gather=$factor), P=$p N=$n density $d: $legal (got: $got)" \
        '[ -n "$factor" ] && [[ "$got" =~ ^($legal)$ ]]'
done

# bytes_sent counts each gather's bytes once: DSAR's dense slices are
# (P - 1) / P of N whichever gather moves them, give or take the sizes of
# the slices a rank forwards (which ones differs between the patterns; the
# slices' ends are rounded, so they differ by up to a few hundred
# elements), so the timed call's bytes_sent agree within 1 % of a dense
# allreduce's 2 (P - 1) / P of N (dense_bytes) under all three -- a gather
# counted twice adds half of that -- and stay below it: the reduce-scatter
# at d = 0.4 adds (P - 1) / P of 0.4 N entries of 8 bytes.  (At d = 0.4
# the slices' union is 78-87 % dense at P = 3, 4: they travel dense.)
for p in 3 4; do
    sent=()
    for g in "${gathers[@]}"; do
        run_mpi "$p" "$with_shim" SPARCML_ALGORITHM=dsar_split_allgather SPARCML_SPLIT_GATHER="$g" \
            SPARCML_VERBOSE=1 -- "$bench" --bytes --n 1048576 --density 0.4 --warmup 1
        line=$(grep '^sparcml: allreduce.* result=dense .* gather='"$g" "$out" | tail -1)
        sent+=("$(sed -n 's/.* bytes_sent=\([0-9]*\) dense_bytes=\([0-9]*\) .*/\1 \2/p' <<<"$line")")
    done
    check "dsar P=$p: bytes_sent (and dense_bytes) vendor/doubling/ring: ${sent[*]}" \
        '[ -n "${sent[0]}" ] && printf "%s\n" "${sent[@]}" | awk "
             NR == 1 { first = \$1 } { d = \$1 - first; if (d < 0) d = -d; if (d > \$2 / 100 || \$1 >= \$2) bad = 1 }
             END { exit !(NR == 3 && !bad) }"'
done
finish
