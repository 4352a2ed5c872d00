#!/bin/bash
# Larger P, oversubscribed on this machine's cores (the yield helper is
# preloaded as everywhere):
#  - the essentials of the case matrix: every algorithm forced and auto;
#    float and int64; random, identical, disjoint and skewed (one rank
#    empty, one dense) indices at five densities; MPI_IN_PLACE; a split
#    sub-communicator; the result checked against a reference (every
#    rank's regenerated input, summed by the vendor; each rank checks its
#    own 1/P of the indices) and its hash compared across ranks (bitwise
#    identical everywhere);
#  - the malformed-input table (bad input on all ranks and on one rank:
#    the documented error class on every rank, nothing written outside the
#    buffers, no hang);
#  - the peak memory per rank of a tagged call of 2^20 floats against
#    docs/design.md's bound (tests/mpi/memory_peak.c).
# SCALE_RANKS (default "16 31"; "none" skips) and SCALE_MEM_RANKS (default
# 16) choose P;
# scripts/scale_check.sh runs P = 16, 31, 32, 64 and memory at P = 64.
# Memory is not checked in the sanitizer build (ASan's shadow and
# quarantine are in every peak).
. "$(dirname "$0")/common.sh"
if [ "${SCALE_RANKS:-}" = none ]; then
    echo "skip: SCALE_RANKS=none (scripts/test.sh's Open MPI pass; the MPICH pass runs it)"
    exit 77
fi
TIMEOUT=${SCALE_TIMEOUT:-900}
algs=$(algorithms)
check "the library names its algorithms: $algs" '[ -n "$algs" ]'
for p in ${SCALE_RANKS:-16 31}; do
    for alg in auto $algs; do
        t0=$SECONDS
        run_mpi "$p" "$with_shim" SPARCML_ALGORITHM=$alg -- "$TESTBIN/sparse_allreduce" \
            --types=float,int64 --check=slice
        rc=$?
        check "algorithm=$alg P=$p ($((SECONDS - t0)) s): $(tail -1 "$out")" \
            '[ "$rc" -eq 0 ] && [ ! -s "$err" ]'
    done
    t0=$SECONDS
    run_mpi "$p" "$with_shim" $error_strings -- "$TESTBIN/sparse_errors"
    rc=$?
    check "malformed inputs, P=$p ($((SECONDS - t0)) s): $(tail -1 "$out")" '[ "$rc" -eq 0 ]'
    # With the bad index on every rank, every rank says so.
    n=$(grep -o "sparcml: MPI_Allreduce: rank [0-9]*: index >= dim: sendbuf entry 2" "$err" | sort -u | wc -l)
    check "malformed inputs, P=$p: $n of $p ranks report the bad index" '[ "$n" -eq "$p" ]'
done
[ -n "${SANITIZE:-}" ] && finish && exit
# Each row's memory bound (its Memory line's claim in its descriptor,
# memory_bound, in units of the dense result size D, as the table of
# algorithms prints it); a row that claims none fails the script rather
# than go unmeasured; auto may choose any row: the largest.  The vendor's
# own scratch varies by about 100 kB from call to call; the library's
# set-up on a communicator (its private communicator, a few hundred kB
# inside MPI, independent of D) is measured and printed apart, by a tagged
# call on an empty stream before the measured calls.  d = 0.45: every
# input just below the sparse/dense line, the sum dense (the worst case);
# d = 0.01: a sum that fills in to about half at P = 64.
declare -A bound
while read -r name claim; do bound[$name]=$claim; done < <("$ALGTABLE" | sed -n 's/^\([^ ]*\) .* memory=\([0-9.]*\)$/\1 \2/p')
bound[auto]=$(printf '%s\n' "${bound[@]}" | sort -g | tail -1)
unbounded=$(for alg in $algs; do [ -n "${bound[$alg]:-}" ] || printf ' %s' "$alg"; done)
check "every algorithm the library lists claims a memory bound in its row (none for:${unbounded:- none missing})" \
    '[ -z "$unbounded" ]'
for p in ${SCALE_MEM_RANKS:-16}; do
    for d in 0.45 0.01; do
        for alg in auto $algs; do
            [ -n "${bound[$alg]:-}" ] || continue
            run_mpi "$p" "$with_shim" SPARCML_ALGORITHM=$alg -- "$TESTBIN/memory_peak" 1048576 "$d" "${bound[$alg]}"
            rc=$?
            check "memory, algorithm=$alg: $(tail -1 "$out")" '[ "$rc" -eq 0 ] && [ ! -s "$err" ]'
        done
    done
done
finish
