#!/bin/bash
# Pipelined recursive doubling (sparcml(7), SPARCML_PIPELINE_CHUNKS): the
# whole sparse_allreduce matrix (every result against its reference, bitwise
# the same on all ranks) with the rounds cut into 2, 3 or 8 chunks; the
# same bits as whole-message rounds, case by case (--hashes of a run with
# SPARCML_PIPELINE_CHUNKS=1); the SPARCML_STATS report proves the rounds
# were pipelined (a run that never pipelines fails here).  Blocking and
# non-blocking (MPI_Test polling) calls, folded (P = 3, 5) and power-of-two
# P; then the cost model's own choice (a tiny alpha makes chunks pay).
. "$(dirname "$0")/common.sh"
rd=SPARCML_ALGORITHM=ssar_recursive_double
hashes=$(mktemp)
trap 'rm -f "$out" "$err" "$hashes"' EXIT

# pipelined_calls: the report's count of calls with pipelined rounds (0: none).
pipelined_calls() {
    sed -n 's/^sparcml: calls pipelined: \([0-9]*\)$/\1/p' "$out" | grep . || echo 0
}

# run_pair CALL P CHUNKS: whole-message rounds, then CHUNKS chunks.
run_pair() {
    local call=$1 p=$2 chunks=$3 n rc
    run_mpi "$p" "$with_shim" $rd SPARCML_PIPELINE_CHUNKS=1 SPARCML_STATS=1 -- \
        "$TESTBIN/sparse_allreduce" --call=$call --hashes
    rc=$?
    grep '^hash ' "$out" >"$hashes"
    n=$(pipelined_calls)
    check "call=$call P=$p chunks=1: $(grep '^sparse_allreduce' "$out"), none pipelined ($n)" \
        '[ "$rc" -eq 0 ] && [ ! -s "$err" ] && [ "$n" -eq 0 ] && [ -s "$hashes" ]'
    run_mpi "$p" "$with_shim" $rd SPARCML_PIPELINE_CHUNKS=$chunks SPARCML_STATS=1 -- \
        "$TESTBIN/sparse_allreduce" --call=$call --hashes
    rc=$?
    n=$(pipelined_calls)
    check "call=$call P=$p chunks=$chunks: $(grep '^sparse_allreduce' "$out"), pipelined calls $n" \
        '[ "$rc" -eq 0 ] && [ ! -s "$err" ] && [ "$n" -gt 0 ]'
    check "call=$call P=$p chunks=$chunks: every case's result has the bits of whole-message rounds" \
        'grep "^hash " "$out" | cmp -s - "$hashes"'
}

# The narrowed passes of scripts/test.sh (MATRIX_RANKS set: Open MPI, the
# sanitizer distcheck) run a folded blocking pair and the non-blocking one.
if [ -z "${MATRIX_RANKS:-}" ]; then
    run_pair blocking 2 2
    run_pair blocking 5 8
    run_pair blocking 8 3
fi
run_pair blocking 3 3
run_pair test 4 3

# The model's choice: with alpha at 1 ns every round long enough pays for
# the most chunks; auto may then pick recursive doubling, pipelined.
# SPARCML_RANKS_PER_CORE=1 gives each rank a core of its own in the model
# (7 ranks share this machine's 2); the ranks are on one node, where bytes
# move through shared memory on the cores that merge: at a copy's price
# (beta 0.2 ns/B, at most gamma / 8) the model never pipelines, at 0.5 it
# does.  Beta and gamma are set (shared memory's, measured idle), so nothing
# is calibrated: the choice is the model's, not the load's.
p=7
[ -n "${MATRIX_RANKS:-}" ] && p=4
for beta in 0.2 0.5; do
    model="SPARCML_ALPHA_US=0.001 SPARCML_BETA_NS_PER_BYTE=$beta SPARCML_GAMMA_NS_PER_ENTRY=1.7 SPARCML_RANKS_PER_CORE=1"
    # shellcheck disable=SC2086 # the settings are words
    run_mpi "$p" "$with_shim" $model SPARCML_STATS=1 -- "$TESTBIN/sparse_allreduce"
    rc=$?
    n=$(pipelined_calls)
    if [ "$beta" = 0.2 ]; then want='[ "$n" -eq 0 ]'; else want='[ "$n" -gt 0 ]'; fi
    check "auto, $model, P=$p: $(grep '^sparse_allreduce' "$out"), pipelined calls $n" \
        "[ \"\$rc\" -eq 0 ] && [ ! -s \"\$err\" ] && $want"
done
finish
