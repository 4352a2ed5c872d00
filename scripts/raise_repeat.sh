#!/bin/bash
# raise_repeat.sh [REPS] -- tests/scripts/raise.sh with REPS (default 20)
# runs of each default-handler case, against both builds (MPICH: build/,
# Open MPI: build-openmpi/), two busy loops beside each job: every run must
# show the reason on every rank before the job aborts.  Builds first
# (scripts/setup.sh); prints each build's result line and any failed check.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
if ! setup=$("$top/scripts/setup.sh" 2>&1); then
    echo "$setup"
    exit 1
fi
reps=${1:-20}
rc=0
for b in build build-openmpi; do
    RAISE_REPS=$reps make -s -C "$top/$b" check TESTS=tests/scripts/raise.sh >/dev/null 2>&1 || rc=1
    log="$top/$b/tests/scripts/raise.sh.log"
    echo "$b ($reps runs of each case): $(tail -2 "$log" | head -1)"
    grep "^not ok" "$log"
done
exit $rc
