#!/bin/bash
# The calls' times correct the model's prices (src/core/op.c, "timing").
# A tagged call of dense data (N = 65536 floats, every index set) under a
# model of slow rounds (alpha 1 ms, beta 0.1 ns/B) goes to the vendor's
# dense allreduce: its price (a few ms) is the lowest.  With a vendor whose
# float allreduces of these buffers sleep 200 ms
# (tests/support/slow_vendor_preload.c, a lower bound whatever the machine
# and its load), call 1 runs the vendor untimed (a first run), call 2 runs
# it timed, and from call 3 on the agreement carries that time: the vendor
# costs at least 200 ms, far above every sparse algorithm's price and
# time; trying one is rationed (sparcml(7): 3 calls a trial, the first at
# once, later ones while trial calls stay at most 1 + calls / 4), so calls
# 3-5 are the trial of a sparse algorithm, which then (far below 200 ms)
# runs on: calls 3-12 run sparse.  Controls: the same vendor with the whole
# model set (nothing timed): the vendor all along; the plain vendor under
# rounds priced at 100 ms (its price some 400 ms, which no run of these
# buffers comes near): timed, within its price, the vendor all along.
# Algorithms and agreed multiples from SPARCML_VERBOSE=1 (rank 0's lines).
# Density bands: SSAR split forced on one count, 4 calls of dense data
# then 6 at d = 1e-4 (tests/mpi/piggyback with densities): the dense calls'
# multiple shows from a later dense call on, the first sparse call shows
# none (another band), a later sparse call its own.
. "$(dirname "$0")/common.sh"
bench="${BENCHBIN:?}/sparcml_bench"
slow="$YIELD:$SLOWVENDOR:$SHIM"
partial_model="SPARCML_CALIBRATE=0 SPARCML_ALPHA_US=1000 SPARCML_BETA_NS_PER_BYTE=0.1 SLOW_VENDOR_MS=200"

# field NAME: NAME's value in each call's line, space-separated
field() { grep '^sparcml: allreduce ' "$out" | sed -n "s/.* $1=\([^ ]*\).*/\1/p" | tr '\n' ' '; }
run() {
    run_mpi "$1" "$2" SPARCML_VERBOSE=1 $3 -- "$bench" --bytes --n 65536 --density 1 --warmup 11
}
vendor_only=$(printf 'dense %.0s' $(seq 12))
for p in 3 4; do
    run "$p" "$slow" "$partial_model"
    rc=$?
    ran=$(field algorithm)
    timed=$(field timed_over)
    check "a slow vendor, timed, P=$p: the vendor twice, then sparse (got: $ran; timed: $timed)" \
        '[ "$rc" -eq 0 ] && [ ! -s "$err" ] && [[ "$ran" == "dense dense "* ]] &&
         [ "$(echo "$ran" | wc -w)" -eq 12 ] && [ -z "$(echo "$ran" | tr " " "\n" | sed 1,2d | grep "^dense$")" ] &&
         [[ "$timed" == "- - dense:"* ]]'
done
run 3 "$slow" "$partial_model SPARCML_GAMMA_NS_PER_ENTRY=2.5"
rc=$?
ran=$(field algorithm)
check "a slow vendor, the whole model set: not timed, the vendor all along (got: $ran)" \
    '[ "$rc" -eq 0 ] && [ ! -s "$err" ] && [ "$ran" = "$vendor_only" ] && [ "$(field timed_over)" = "$(printf -- "- %.0s" $(seq 12))" ]'
run 3 "$with_shim" "SPARCML_CALIBRATE=0 SPARCML_ALPHA_US=100000 SPARCML_BETA_NS_PER_BYTE=0.1"
rc=$?
ran=$(field algorithm)
check "the plain vendor under slow rounds, timed: within its price, the vendor all along (got: $ran)" \
    '[ "$rc" -eq 0 ] && [ ! -s "$err" ] && [ "$ran" = "$vendor_only" ] && [[ "$(field timed_over)" == "- - dense:"* ]]'
piggyback="$TESTBIN/piggyback"
run_mpi 3 "$with_shim" SPARCML_VERBOSE=1 SPARCML_CALIBRATE=0 SPARCML_ALPHA_US=20 \
    SPARCML_ALGORITHM=ssar_split_allgather -- "$piggyback" 1 1 1 1 1e-4 1e-4 1e-4 1e-4 1e-4 1e-4
rc=$?
read -r -a timed <<<"$(field timed_over)"
check "one count, two densities: each band's own multiple (got: ${timed[*]})" \
    '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" && [ "${#timed[@]}" -eq 10 ] &&
     [[ "${timed[3]}" == ssar_split_allgather:* ]] && [ "${timed[4]}" = - ] &&
     [[ "${timed[9]}" == ssar_split_allgather:* ]]'
finish
