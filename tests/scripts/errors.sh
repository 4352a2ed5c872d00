#!/bin/bash
# Malformed input on all ranks and on one rank: every rank gets the MPI
# error, nothing hangs (timeout), nothing is written outside the buffers.
# Forced recursive doubling runs the same table with most bad calls taking
# the path where data travels with the agreement records (in whole
# messages, and in 4 chunks per round: SPARCML_PIPELINE_CHUNKS), and
# SPARCML_PIGGYBACK=0 with none of them doing so; forced
# ssar_split_allgather with most bad calls taking the split exchange, the
# data riding on its reduce-scatter.
. "$(dirname "$0")/common.sh"
TIMEOUT=120
for p in 1 2 3 4 5 8; do
    run_mpi "$p" "$with_shim" $error_strings -- "$TESTBIN/sparse_errors"
    rc=$?
    check "malformed inputs, P=$p: $(tail -1 "$out")" '[ "$rc" -eq 0 ]'
    check "malformed inputs, P=$p: each error has a one-line message" \
        'grep -q "sparcml: MPI_Allreduce: rank [0-9]*: index >= dim: sendbuf entry 2" "$err"'
    # One line per rank that found the problem: the bad index on all P
    # ranks, then on the last rank only: P + 1 lines, none from the others.
    n=$(occurrences "index >= dim" "$err")
    check "malformed inputs, P=$p: only the ranks at fault print (index >= dim: $n lines)" \
        '[ "$n" -eq $((p + 1)) ]'
    for run in "ssar_recursive_double 1 0" "ssar_recursive_double 0 0" "ssar_recursive_double 1 4" \
        "ssar_split_allgather 1 0"; do
        read -r alg pig chunks <<<"$run"
        run_mpi "$p" "$with_shim" SPARCML_ALGORITHM=$alg SPARCML_STATS=1 SPARCML_PIPELINE_CHUNKS=$chunks \
            SPARCML_PIGGYBACK=$pig $error_strings -- "$TESTBIN/sparse_errors"
        rc=$?
        check "malformed inputs, $alg, SPARCML_PIPELINE_CHUNKS=$chunks, SPARCML_PIGGYBACK=$pig, P=$p: $(grep sparse_errors: "$out")" \
            '[ "$rc" -eq 0 ]'
        [ "$chunks" -gt 1 ] && [ "$p" -gt 1 ] &&
            check "P=$p: the rounds were pipelined, the data riding in the chunks" \
                'grep -q "^sparcml: calls pipelined: [1-9]" "$out"'
        # Each call counted once; of the 51..56 bad calls, all but the
        # first and those that change count or type follow a correct call
        # with the same count and type.
        # In chunks, no data rides from P = 8: there a piggybacked sum (up to
        # P times twice the 3 entries of the calls before) could be dense in
        # sparse_errors' 64 dimensions, and no chunk may go dense.
        f=$(sed -n 's/^sparcml: failed calls whose data travelled with the agreement records: //p' "$out")
        if [ "$chunks" -gt 1 ] && [ "$p" -ge 8 ]; then
            check "$alg in chunks, P=$p: no data travelled with the records" '[ -z "$f" ]'
        elif [ "$pig" = 1 ]; then
            check "$alg, P=$p: bad calls whose data travelled with the records: ${f:-0}" '[ "${f:-0}" -ge 40 ] && [ "${f:-0}" -le 56 ]'
        else
            check "P=$p, SPARCML_PIGGYBACK=0: no data travelled with the records" '[ -z "$f" ]'
        fi
    done
done
finish
