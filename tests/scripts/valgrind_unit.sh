#!/bin/bash
# The Check unit tests under valgrind memcheck (in-process: CK_FORK=no):
# no invalid access, no use of uninitialised memory, no definite or
# indirect leak: every unit test, about 20 s.  Skipped in the sanitizer
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
# A bound for a hang, not a timing: make check -j2 runs this beside 8- to
# 31-rank MPI tests on 2 cores, where it may get a fifth of a core.
env CK_FORK=no timeout -k 10 600 valgrind -q --error-exitcode=99 --leak-check=full \
    --errors-for-leak-kinds=definite,indirect "$unit" >"$out" 2>"$err"
rc=$?
check "unit tests under valgrind memcheck: $(grep -o 'Checks: .*' "$out"), exit $rc" \
    '[ "$rc" -eq 0 ] && grep -q "Failures: 0, Errors: 0" "$out" && [ ! -s "$err" ]'
finish
