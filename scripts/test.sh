#!/bin/bash
# test.sh -- the README's test command (and what .ci/run calls): set up and
# build, run the whole test suite, check that the tarball builds and passes
# its quick tests (make distcheck), then print "N passed, M failed".
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh" || exit 1
cd "$top/build" || exit 1
export HYDRA_CONFIG_FILE=/dev/null
make -s -j2 check >/dev/null 2>&1
check_rc=$?
# Per-test summaries (every script ends with its own "N passed, M failed").
for log in tests/unit/*.log tests/scripts/*.log; do
    [ -f "$log" ] || continue
    case "$log" in *test-suite.log) continue ;; esac
    grep -E '^(not ok|FAIL)' "$log" | sed "s|^|  $log: |"
done
passed=$(cat tests/scripts/*.log 2>/dev/null | grep -c '^ok - ')
failed=$(cat tests/scripts/*.log 2>/dev/null | grep -c '^not ok - ')
unit=$(grep -ho 'Checks: [0-9]*, Failures: [0-9]*, Errors: [0-9]*' tests/unit/check_sparcml.log)
echo "unit tests (Check): ${unit:-did not run}"
read -r uc uf ue < <(echo "$unit" | tr -dc '0-9 ' | awk '{print $1, $2, $3}')
passed=$((passed + ${uc:-0} - ${uf:-0} - ${ue:-0}))
failed=$((failed + ${uf:-0} + ${ue:-0}))
if [ "$check_rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=1
    echo "make check failed:"
    tail -30 test-suite.log 2>/dev/null
fi
# The tarball: complete and self-contained.  Its test suite runs with the
# case matrix narrowed to P = 3 (the full matrix ran above).
if MATRIX_RANKS=3 make -s distcheck >distcheck.log 2>&1; then
    passed=$((passed + 1))
    echo "ok - make distcheck"
else
    failed=$((failed + 1))
    echo "not ok - make distcheck (see build/distcheck.log)"
    tail -20 distcheck.log
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
