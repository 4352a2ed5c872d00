#!/bin/bash
# The Check unit tests under valgrind memcheck (in-process: CK_FORK=no):
# no invalid access, no use of uninitialised memory, no definite or
# indirect leak.  Skipped in the sanitizer build (valgrind cannot run ASan
# binaries; ASan and LeakSanitizer cover the same ground there) and with
# VALGRIND_UNIT=none (scripts/test.sh's Open MPI pass: the MPICH pass ran
# the same unit tests under memcheck).
. "$(dirname "$0")/common.sh"
if [ -n "${SANITIZE:-}" ]; then
    echo "# skipped: sanitizer build"
    exit 77
fi
case ${VALGRIND_UNIT:-} in
'') ;;
none)
    echo "# skipped: VALGRIND_UNIT=none"
    exit 77
    ;;
*)
    echo "VALGRIND_UNIT=${VALGRIND_UNIT}: only \"none\" (skip) is understood"
    exit 1
    ;;
esac
unit="$TESTBIN/../unit/check_sparcml"
if ! command -v valgrind >/dev/null; then
    not_ok "valgrind is installed (Debian package valgrind; scripts/setup.sh installs it)"
    finish
    exit 1
fi
# A bound for a hang, not a timing: the suite needs about 9 minutes of CPU
# under memcheck (70 % of it the merge-add's tests), and make check -j2 runs
# it beside 8- to 31-rank MPI tests on 2 cores, where each half may get a
# fifth of a core (22 minutes).
TIMEOUT=1800
# Two processes, one per core: the cases tagged "merge" (two of the merge
# kernels' tests, about half of the time) and the rest; together every case
# once (the count is the native run's).
out2=$(mktemp)
err2=$(mktemp)
trap 'rm -f "$out" "$err" "$out2" "$err2"' EXIT
memcheck() { # CHECK-TAG-VARIABLE=merge OUT ERR
    env CK_FORK=no "$1" timeout -k 10 "$TIMEOUT" valgrind -q --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite,indirect "$unit" >"$2" 2>"$3"
}
memcheck CK_INCLUDE_TAGS=merge "$out" "$err" &
memcheck CK_EXCLUDE_TAGS=merge "$out2" "$err2"
rc2=$?
wait $!
rc=$?
checks() { grep -o 'Checks: [0-9]*' "$1" | grep -o '[0-9]*'; }
total=$(($(checks "$out" || echo 0) + $(checks "$out2" || echo 0)))
native=$(CK_FORK=no "$unit" 2>/dev/null | checks /dev/stdin)
check "unit tests under valgrind memcheck: $total checks (merge: $(checks "$out"), the rest: $(checks "$out2")), exit $rc, $rc2" \
    '[ "$rc" -eq 0 ] && [ "$rc2" -eq 0 ] && grep -q "Failures: 0, Errors: 0" "$out" &&
     grep -q "Failures: 0, Errors: 0" "$out2" && [ ! -s "$err" ] && [ ! -s "$err2" ] && [ "$total" = "$native" ]'
finish
