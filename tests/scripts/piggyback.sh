#!/bin/bash
# Calls whose data travels with the agreement records (sparcml(7),
# DESCRIPTION; SPARCML_PIGGYBACK).  tests/mpi/piggyback checks every result
# against the exact sum; here each call's agreement mode, read from the
# verbose lines of rank 0, is checked against the rule, replayed from the
# lines themselves.  Where the latest earlier call ended with the selector
# choosing a split algorithm (the "selector=" field: for a piggybacked
# call, what the selector makes of its agreed numbers), the agreement rides
# on that algorithm's reduce-scatter ("exchange=" names it, else the
# algorithm riding its whole exchange): the call is piggybacked, running that
# algorithm, exactly when it has that call's count and value type, else
# separate.  Otherwise a call is piggybacked, as recursive doubling,
# exactly when the latest earlier call with the same count and value type
# ended with the selector choosing ssar_recursive_double.  Either way only
# where the pools hold a piggybacked run for inputs of up to twice that
# call's max_k -- and unless its dimension differs from that call's or its
# largest input (max_k) exceeds twice that call's (or the dimension,
# whichever is less): then it is "declined" and runs after the agreement.
# The pools hold that run where a call of the same count that ran the same
# algorithm after its agreement (recursive doubling not pipelined) -- it
# reserved the next call's piggybacked run -- had a max_k at least that
# large; elsewhere (other calls' pools may or may not hold it) "separate"
# is right too.  The sequence must contain at least one wrong prediction
# (a piggybacked call the selector would not have run as it ran) and its
# correction (the next call of that count and value type runs after its
# agreement, or piggybacked as the selector said), and piggybacked calls
# on both exchanges (with the default
# cost model set whole: neither measured at MPI_Init nor timed calls,
# whose picks would depend on the machine and its load; it pipelines none
# of these calls, which the replay checks: the data riding in a pipelined
# call's chunks is checked in transparent.sh).  P = 3 (folded) and 4; then
# the same with SPARCML_PIGGYBACK=0.
. "$(dirname "$0")/common.sh"

# replay: read "sparcml: allreduce ..." / "call count=C vtype=V" pairs on
# stdin; print "ok CALLS PIGGYBACKED WRONG CORRECTED DECLINED SPLIT" or
# "bad <line number>: <why>".
replay() {
    awk '
    function is_split(a) { return index(phase, " " a " ") > 0 }
    /^sparcml: allreduce / {
        alg = mode = sel = ""
        for (i = 1; i <= NF; i++) {
            split($i, kv, "=")
            if (kv[1] == "algorithm") alg = kv[2]
            if (kv[1] == "agreement") mode = kv[2]
            if (kv[1] == "exchange") exch = kv[2]
            if (kv[1] == "selector") sel = kv[2]
            if (kv[1] == "max_k") k = kv[2] + 0
            if (kv[1] == "N") dim = kv[2] + 0
            if (kv[1] == "pipeline_chunks") chunks = kv[2] + 0
        }
        next
    }
    /^call count=/ {
        n++
        split($2, c, "="); split($3, v, "=")
        key = c[2] "," v[2]
        on_split = pig && is_split(last_sel)
        if (on_split) {
            runs = last_sel
            want = key == last_key ? "piggybacked" : "separate"
            pk = last_k; pn = last_n
        } else {
            runs = exchange
            want = (key in memo && memo[key]) ? "piggybacked" : "separate"
            pk = memo_k[key]; pn = memo_n[key]
        }
        if (chunks > 1) { printf "bad call %d: pipelined (the rule replayed here is for whole messages)\n", n; bad = 1; exit }
        if (exch != runs) {
            printf "bad call %d (%s): exchange %s\n", n, key, exch; bad = 1; exit
        }
        cap = pk < int(dim / 2) ? 2 * pk : dim
        if (want == "piggybacked" && (dim != pn || k > cap)) want = "declined"
        if (pig == 0) want = "separate"
        held = want == "separate" || (res_n[runs, key] == pn && pk <= res_k[runs, key])
        if (mode != want && (held || mode != "separate")) {
            printf "bad call %d (%s): %s, expected %s\n", n, key, mode, want; bad = 1; exit
        }
        if (mode != "piggybacked" && (is_split(alg) || (alg == exchange && chunks <= 1))) {
            if (res_n[alg, key] != dim) res_k[alg, key] = 0
            if (k > res_k[alg, key]) res_k[alg, key] = k
            res_n[alg, key] = dim
        }
        if (mode == "piggybacked") {
            npig++
            if (on_split) nsplit++
            if (alg != runs) { printf "bad call %d: piggybacked ran %s, not %s\n", n, alg, runs; bad = 1; exit }
        }
        if (pending[key] != "" && (mode != "piggybacked" || alg == pending[key])) { ncorr++; pending[key] = "" }
        if (mode == "piggybacked" && sel != alg) { nwrong++; pending[key] = sel }
        if (mode == "declined") ndecl++
        memo[key] = (sel == exchange)
        memo_k[key] = k
        memo_n[key] = dim
        last_sel = sel; last_key = key; last_k = k; last_n = dim
        alg = mode = sel = exch = "none"
        chunks = 0
    }
    END { if (!bad) printf "ok %d %d %d %d %d %d\n", n, npig, nwrong, ncorr, ndecl, nsplit }' pig="$1" \
        phase=" $phase " exchange="$exchange"
}
# The split algorithms are those on whose first phase (the reduce-scatter)
# the records ride; recursive doubling is the one on whose whole exchange
# they ride (the library's table of algorithms).
phase=$(algorithms_where ride=phase)
exchange=$(algorithms_where ride=exchange)
check "the library names its algorithms ridden on: the first phase: $phase; the whole exchange: $exchange" \
    '[ -n "$phase" ] && [ -n "$exchange" ] && [ "$exchange" = "${exchange%% *}" ]'

for pig in 1 0; do
    for p in 3 4; do
        run_mpi "$p" "$with_shim" SPARCML_VERBOSE=1 $default_model SPARCML_PIGGYBACK=$pig -- "$TESTBIN/piggyback"
        rc=$?
        check "SPARCML_PIGGYBACK=$pig P=$p: every result exact: $(tail -1 "$out")" \
            '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out"'
        read -r verdict calls npig nwrong ncorr ndecl nsplit < <(grep -E '^(sparcml: allreduce|call count=)' "$out" | replay "$pig")
        check "SPARCML_PIGGYBACK=$pig P=$p: agreement modes follow the rule ($verdict, calls ${calls:-?})" \
            '[ "$verdict" = ok ] && [ "$calls" -eq 22 ]'
        if [ "$pig" = 1 ]; then
            check "P=$p: piggybacked calls ${npig:-0} (${nsplit:-0} on a split exchange), wrong predictions ${nwrong:-0}, corrected ${ncorr:-0}, declined ${ndecl:-0}" \
                '[ "${npig:-0}" -ge 8 ] && [ "${nsplit:-0}" -ge 1 ] && [ "${nwrong:-0}" -ge 1 ] && [ "${ncorr:-0}" -ge 1 ] && [ "${ndecl:-0}" -ge 1 ]'
        fi
    done
done
# A pipelined count alternating with another (recursive doubling forced;
# a model under which A's rounds, dimension 65536 at d = 0.05, run in
# C > 1 chunks and B's, 32768 at 2e-4, whole): A1 has no history; A2
# follows it in its chunks; B1 has no slot (separate, whole messages);
# B2 follows B1 in whole messages; A3 has no slot (the latest call ran
# whole messages: separate, pipelined); from then on each B rides in the
# chunks A's call left the exchange (B's slot, its chunks sparse) and each
# A is separate.  modes_chunks: each call's mode and chunks per round.
modes_chunks() {
    awk '/^sparcml: allreduce / { for (i = 1; i <= NF; i++) { if ($i ~ /^agreement=/) a = substr($i, 11)
                                                              if ($i ~ /^pipeline_chunks=/) c = substr($i, 17) }
                                  printf "%s/%s ", a, c }' "$out"
}
alt_model="SPARCML_ALGORITHM=$exchange SPARCML_CALIBRATE=0 SPARCML_ALPHA_US=1 SPARCML_BETA_NS_PER_BYTE=8.3
           SPARCML_GAMMA_NS_PER_ENTRY=2.5 SPARCML_RANKS_PER_CORE=1"
for p in 3 4; do
    run_mpi "$p" "$with_shim" SPARCML_VERBOSE=1 $alt_model -- "$TESTBIN/piggyback" \
        0.05 0.05 b2e-4 b2e-4 0.05 b2e-4 0.05 b2e-4 0.05 b2e-4
    rc=$?
    got=$(modes_chunks)
    c=$(echo "$got" | sed -n 's|^separate/\([0-9]*\) .*|\1|p')
    want="separate/$c piggybacked/$c separate/1 piggybacked/1 $(printf "separate/$c piggybacked/$c %.0s" 1 2 3)"
    check "P=$p: a count in C chunks alternating with one in whole messages: every result exact, modes by the rule (got: $got)" \
        '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" && [ "${c:-0}" -gt 1 ] && [ "$got" = "$want" ]'
done
# Quantized calls ride on the split exchange too (each part's codes go
# behind the record): SSAR split forced, N = 1M floats at d = 0.3 (dense
# slices, quantized with SPARCML_QSGD_BITS=4, and without QSGD): every call
# after the first is piggybacked on the split exchange.
bench="${BENCHBIN:?}/sparcml_bench"
for q in 0 4; do
    run_mpi 4 "$with_shim" SPARCML_VERBOSE=1 $default_model SPARCML_ALGORITHM=ssar_split_allgather \
        SPARCML_QSGD_BITS=$q -- "$bench" --bytes --n 1048576 --density 0.3 --warmup 3
    modes=$(grep '^sparcml: allreduce' "$out" | sed -n 's/.* agreement=\([a-z]*\) exchange=\([a-z_]*\).*/\1,\2/p' |
            tr '\n' ' ')
    check "SSAR split, SPARCML_QSGD_BITS=$q: every call after the first piggybacked on the split exchange (got: $modes)" \
        '[[ "$modes" == "separate,$exchange piggybacked,ssar_split_allgather piggybacked,ssar_split_allgather"* ]] &&
         [ -z "$(echo "$modes" | tr " " "\n" | sed 1d | grep . | grep -v "^piggybacked,ssar_split_allgather$")" ]'
done
finish
