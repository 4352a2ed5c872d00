#!/bin/bash
# Tag bookkeeping (tests/mpi/tags.c): 1000 tagged types alive at once, a
# rejected rename leaves name and tag alone, a plain rename untags, a
# duplicate is tagged exactly when its name is a tag.
. "$(dirname "$0")/common.sh"
for p in 1 3; do
    run_mpi "$p" "$with_shim" -- "$TESTBIN/tags"
    rc=$?
    check "tag bookkeeping, P=$p: $(cat "$out")" '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out"'
    check "tag bookkeeping, P=$p: the rejected tag says why, once per rank" \
        '[ "$(occurrences "cannot tag a datatype as .sparcml:v1:bogus.: malformed tag" "$err")" -eq "$p" ]'
done
finish
