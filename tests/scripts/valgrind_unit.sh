#!/bin/bash
# The Check unit tests under valgrind memcheck (in-process: CK_FORK=no):
# no invalid access, no use of uninitialised memory, no definite or
# indirect leak.  Tests tagged "large" (the merge-add on 100,000-entry
# inputs: three minutes of memcheck for paths the small layouts reach;
# the densify of 16 MiB results) run natively and under the sanitizers
# only.  Skipped in the sanitizer
# build (valgrind cannot run ASan binaries; ASan and LeakSanitizer cover
# the same ground there) and with VALGRIND_UNIT=none (scripts/test.sh's
# Open MPI pass: the MPICH pass ran the same unit tests under memcheck).
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
# Two memcheck processes side by side, each about half of the work: the
# merge-add's layout tests (tag "layouts") and the rest, so that the
# suite's longest test uses both cores once the MPI tests are done.
# A bound for a hang, not a timing: the suite needs about 10.6 minutes of
# CPU under memcheck, and make check -j2 runs it beside 8- to 31-rank MPI
# tests on 2 cores, where it may get a fifth of a core (43 minutes).
TIMEOUT=3600
memcheck() { # OUT ERR VAR=value...: the unit tests the Check variables select
    local o=$1 e=$2
    shift 2
    env CK_FORK=no "$@" timeout -k 10 "$TIMEOUT" valgrind -q --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite,indirect "$unit" >"$o" 2>"$e"
}
out2=$(mktemp)
err2=$(mktemp)
trap 'rm -f "$out" "$err" "$out2" "$err2"' EXIT
memcheck "$out2" "$err2" CK_INCLUDE_TAGS=layouts &
layouts=$!
memcheck "$out" "$err" CK_EXCLUDE_TAGS="large layouts"
rc=$?
wait "$layouts"
rc2=$?
check "unit tests under valgrind memcheck, the merge layouts: $(grep -o 'Checks: .*' "$out2"), exit $rc2" \
    '[ "$rc2" -eq 0 ] && grep -q "Failures: 0, Errors: 0" "$out2" && [ ! -s "$err2" ]'
check "unit tests under valgrind memcheck, the rest: $(grep -o 'Checks: .*' "$out"), exit $rc" \
    '[ "$rc" -eq 0 ] && grep -q "Failures: 0, Errors: 0" "$out" && [ ! -s "$err" ]'
finish
