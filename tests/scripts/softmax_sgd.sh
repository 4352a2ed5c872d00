#!/bin/bash
# examples/softmax_sgd, the program with a dense gradient (a plain MPI_FLOAT
# allreduce of all its weights every step):
#   1. without the shim it learns -- the final loss is below half the initial
#      one (ln C) and the accuracy at least 4/C -- and is the same SGD at
#      P = 1 and P = 3 (final losses within 1 %; only the order of the float
#      additions differs);
#   2. under the shim with SPARCML_COMPRESS: a gradient below
#      SPARCML_COMPRESS_MIN_BYTES passes through (P = 1, the same loss as
#      without the shim); at P = 3 with SPARCML_COMPRESS=topk, density 1e-2
#      and error feedback the final loss is within 2 % of the dense one, and
#      without the feedback it is not (the check has teeth).
. "$SRCDIR/tests/scripts/common.sh"
BIN=$EXAMPLES/softmax_sgd
# 640 steps (5 epochs of 128) of a network with 17 544 weights (70 KB), C = 8.
A=(--features=128 --hidden=128 --classes=8 --samples=4096 --batch=32 --epochs=5 --seed=1)
C=8

# field NAME: NAME=value from the summary line of the last run ("" if none)
field() { sed -n "s/^summary .* $1=\([^ ]*\).*/\1/p" "$out"; }
# within A B TOL: |A - B| <= TOL * |B|
within() {
    awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN {
        if (a == "" || b == "") exit 1
        d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b
        exit !(d <= t * m) }'
}
# learns L L0 ACC: L < 0.5 * L0 and ACC >= 4/C
learns() { awk -v l="$1" -v l0="$2" -v a="$3" -v c="$C" 'BEGIN { exit !(l != "" && l0 > 0 && l < 0.5 * l0 && a >= 4 / c) }'; }
relpct() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "") print "n/a"; else printf "%+.2f%%", 100 * (a / b - 1) }'; }

# ---------------------------------------------------------------- 1. dense
declare -A dense
for p in 1 3; do
    run_mpi "$p" "$YIELD" -- "$BIN" "${A[@]}"
    rc=$?
    l0=$(field initial_loss) l=$(field final_loss) acc=$(field final_acc)
    dense[$p]=$l
    check "P=$p dense learns: final loss $l < 0.5 * initial $l0, accuracy $acc >= 4/$C (rc=$rc)" \
        '[ "$rc" -eq 0 ] && learns "$l" "$l0" "$acc"'
done
check "P=3 reaches the loss of P=1 within 1 %: ${dense[3]} vs ${dense[1]} ($(relpct "${dense[3]}" "${dense[1]}"))" \
    'within "${dense[3]}" "${dense[1]}" 0.01'

# ---------------------------------------------------------------- 2. compressed
run_mpi 1 "$with_shim" SPARCML_COMPRESS=topk -- "$BIN" "${A[@]}"
rc=$?
l=$(field final_loss)
check "P=1 SPARCML_COMPRESS=topk, gradient below SPARCML_COMPRESS_MIN_BYTES: the loss without the shim ($l vs ${dense[1]}, rc=$rc)" \
    '[ "$rc" -eq 0 ] && [ -n "$l" ] && [ "$l" = "${dense[1]}" ]'

# The cost model set whole (untimed): compression pays at P = 3, every call compresses.
compress=(SPARCML_COMPRESS=topk SPARCML_COMPRESS_DENSITY=0.01 SPARCML_COMPRESS_MIN_BYTES=4096 $default_model)
run_mpi 3 "$with_shim" "${compress[@]}" -- "$BIN" "${A[@]}"
rc=$?
l=$(field final_loss)
check "P=3 topk density 1e-2 with feedback within 2 % of dense: $l vs ${dense[3]} ($(relpct "$l" "${dense[3]}"), rc=$rc)" \
    '[ "$rc" -eq 0 ] && within "$l" "${dense[3]}" 0.02'
run_mpi 3 "$with_shim" "${compress[@]}" SPARCML_COMPRESS_FEEDBACK=0 -- "$BIN" "${A[@]}"
rc=$?
l=$(field final_loss)
check "control: P=3 topk density 1e-2 without feedback is not: $l ($(relpct "$l" "${dense[3]}"), rc=$rc)" \
    '[ "$rc" -eq 0 ] && [ -n "$l" ] && ! within "$l" "${dense[3]}" 0.02'
finish
