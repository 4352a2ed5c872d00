#!/bin/bash
# QSGD: quantized allreduces give results bitwise identical on all ranks and
# within the quantizer's error bound of the exact sum (integers stay exact),
# for P = 2, 3, 4, 8 (the checks live in tests/mpi/sparse_allreduce.c):
# each number of bits at a power of two and at a P that folds.
# P = 8 runs where the pass's MATRIX_RANKS (as in matrix.sh) holds it, else
# P = 4 (scripts/test.sh's sanitizer pass).
. "$(dirname "$0")/common.sh"
case " ${MATRIX_RANKS:-8} " in *" 8 "*) p8=8 ;; *) p8=4 ;; esac
for pt in "2 3" "2 4" "4 2" "4 $p8" "8 3" "8 4"; do
    read -r bits p <<<"$pt"
    run_mpi "$p" "$with_shim" SPARCML_QSGD_BITS=$bits -- "$TESTBIN/sparse_allreduce"
    rc=$?
    check "QSGD bits=$bits auto P=$p: $(tail -1 "$out")" '[ "$rc" -eq 0 ] && [ ! -s "$err" ]'
done
# Every sparse algorithm forced; those on whose first phase the agreement
# rides (the split reduce-scatter) send their repeated calls' quantized
# parts with the agreement records (SPARCML_PIGGYBACK): SPARCML_STATS
# counts them.
sparse=$(algorithms_where sparse=1)
phase=$(algorithms_where sparse=1 ride=phase)
check "the library names its sparse algorithms: $sparse (first phase ridden: $phase)" '[ -n "$sparse" ] && [ -n "$phase" ]'
for alg in $sparse; do
    for p in 3 $p8; do
        run_mpi "$p" "$with_shim" SPARCML_QSGD_BITS=8 SPARCML_QSGD_BUCKET=100 SPARCML_ALGORITHM=$alg SPARCML_STATS=1 \
            -- "$TESTBIN/sparse_allreduce"
        rc=$?
        rode=$(sed -n "s/.*first phase ran within the agreement step: \([0-9]*\)$/\1/p" "$out")
        check "QSGD bits=8 bucket=100 $alg P=$p: $(grep '^sparse_allreduce' "$out" | tail -1), on the split exchange: ${rode:-0}" \
            '[ "$rc" -eq 0 ] && [ ! -s "$err" ] && grep -q "failures=0" "$out" && case " $phase " in *" $alg "*) [ "${rode:-0}" -gt 0 ] ;; esac'
    done
done
for p in 4 5; do
    run_mpi "$p" "$with_shim" SPARCML_QSGD_BITS=4 SPARCML_QSGD_SPARSE=1 SPARCML_QSGD_SEED=99 \
        -- "$TESTBIN/sparse_allreduce"
    rc=$?
    check "QSGD bits=4 on sparse values too, P=$p: $(tail -1 "$out")" '[ "$rc" -eq 0 ] && [ ! -s "$err" ]'
done
for bad in SPARCML_QSGD_BITS=3 SPARCML_QSGD_BUCKET=0 SPARCML_QSGD_SEED=-1 SPARCML_QSGD_SPARSE=2; do
    run_mpi 2 "$with_shim" "$bad" -- "$TESTBIN/no_shim" shim
    rc=$?
    check "$bad is rejected at start-up" '[ "$rc" -ne 0 ] && grep -q "${bad%%=*}" "$err"'
done
finish
