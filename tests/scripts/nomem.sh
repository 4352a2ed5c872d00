#!/bin/bash
# One rank out of memory (tests/mpi/nomem.c with the failalloc preload):
# every rank gets MPI_ERR_NO_MEM from the call, with one line from the rank
# that ran out, nothing hangs, and the next call is right -- blocking,
# non-blocking and persistent.  Then the input stream's pool, which the
# scan reserves before the agreement at a room that depends on earlier
# calls ("room": tests/mpi/nomem.c): a rank without the room or the grown
# pool still completes the call on the stream's bytes, and one without
# those fails it on every rank (recursive doubling forced, so that no call
# goes to the vendor).  Last, tagged calls of every algorithm, whose
# scratch is reserved once the problem is agreed ("tagged": three calls
# fail on every rank, one line each, from the rank out of memory; a
# piggybacked call allocates nothing, and one a rank declines fails on
# every rank together where that rank cannot reserve after the
# agreement).
. "$(dirname "$0")/common.sh"
TIMEOUT=120
# Under the sanitizers libasan comes first in the preload list and serves
# aligned_alloc itself, so the failing allocation cannot be injected there;
# the plain builds run this test.
if [ "${SANITIZE:-0}" = 1 ]; then
    echo "ok - one rank out of memory # SKIP under the sanitizers (libasan serves aligned_alloc)"
    exit 77
fi
for how in blocking wait persistent; do
    for p in 1 2 3 4; do
        run_mpi "$p" "$YIELD:$FAILALLOC:$SHIM" SPARCML_TRANSPARENT=1 -- "$TESTBIN/nomem" "$how"
        rc=$?
        check "one rank out of memory, $how, P=$p: $(tail -1 "$out")" '[ "$rc" -eq 0 ]'
        check "one rank out of memory, $how, P=$p: one line, from that rank" \
            '[ "$(occurrences "out of memory" "$err")" -eq 1 ] && grep -q "rank $((p - 1)): out of memory" "$err"'
    done
done
for how in blocking wait persistent; do
    for p in 1 2 4; do
        run_mpi "$p" "$YIELD:$FAILALLOC:$SHIM" SPARCML_TRANSPARENT=1 SPARCML_ALGORITHM=ssar_recursive_double \
            -- "$TESTBIN/nomem" "$how" room
        rc=$?
        check "input pool out of memory, $how, P=$p: $(tail -1 "$out")" '[ "$rc" -eq 0 ]'
        check "input pool out of memory, $how, P=$p: one line, from that rank" \
            '[ "$(occurrences "out of memory" "$err")" -eq 1 ] && grep -q "rank $((p - 1)): out of memory" "$err"'
    done
done
# tagged P ALGORITHM HOW [piggybacked | CHUNKS]: piggybacked runs recursive
# doubling whole, or a split algorithm, so that the calls piggyback (on
# recursive doubling, or on the split algorithm's reduce-scatter); the
# others never piggyback and pipeline recursive doubling in CHUNKS
# (default 0: as the model says).
tagged() {
    local p=$1 alg=$2 how=$3 pig=${4:-} fails=3 chunks=${4:-0} piggyback=0
    [ "$pig" = piggybacked ] && chunks=1 piggyback=1
    [ "$pig" = piggybacked ] || pig=
    run_mpi "$p" "$YIELD:$FAILALLOC:$SHIM" SPARCML_ALGORITHM="$alg" SPARCML_PIPELINE_CHUNKS=$chunks \
        SPARCML_PIGGYBACK=$piggyback -- "$TESTBIN/nomem" "$how" tagged $pig
    rc=$?
    check "tagged, $alg ${4:-}, $how, P=$p: $(tail -1 "$out")" '[ "$rc" -eq 0 ]'
    check "tagged, $alg ${4:-}, $how, P=$p: $fails lines, from that rank" \
        '[ "$(occurrences "out of memory" "$err")" -eq "$fails" ] && [ "$(grep -c "rank $((p - 1)): out of memory" "$err")" -eq "$fails" ]'
}
algs=$(algorithms)
check "the library names its algorithms: $algs" '[ -n "$algs" ]'
for p in 2 3 4; do
    for alg in $algs; do tagged "$p" "$alg" blocking; done
    tagged "$p" ssar_recursive_double blocking piggybacked
    tagged "$p" ssar_split_allgather blocking piggybacked
done
tagged 3 dsar_split_allgather blocking piggybacked
tagged 4 ssar_recursive_double blocking 4
for how in wait persistent; do
    tagged 3 ssar_split_allgather "$how"
    tagged 3 ssar_recursive_double "$how" piggybacked
    tagged 3 ssar_split_allgather "$how" piggybacked
done
tagged 8 ssar_split_allgather blocking
tagged 8 ssar_recursive_double blocking piggybacked
finish
