#!/bin/bash
# scale_check.sh -- the larger-P correctness runs in full: the matrix's
# essentials and the malformed-input table at P = 16, 31, 32 and 64, and
# the peak memory per rank at P = 64 (tests/scripts/scale.sh; the test
# suite runs it at P = 16 and 31 with memory at P = 16).  All ranks on this
# machine's cores, with the yield helper.  Prints the TAP lines with the
# time of each run and the total; the log goes to build/scale_check.log.
#   scripts/scale_check.sh [RANKS [MEMORY_RANKS]]   (default "16 31 32 64" 64)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh" >/dev/null || exit 1
cd "$top/build" || exit 1
make -s -j2 check TESTS= >/dev/null 2>&1 || { echo "scale_check: building the test programs failed" >&2; exit 1; }
export MPIEXEC=mpiexec.mpich SHIM="$PWD/src/.libs/libsparcml.so" \
    YIELD="$PWD/tests/support/.libs/libyield.so" TESTBIN="$PWD/tests/mpi" SRCDIR="$top" \
    HYDRA_CONFIG_FILE=/dev/null SCALE_RANKS="${1:-16 31 32 64}" SCALE_MEM_RANKS="${2:-64}"
t0=$SECONDS
"$top/tests/scripts/scale.sh" 2>&1 | tee scale_check.log
rc=${PIPESTATUS[0]}
echo "scale_check: P = $SCALE_RANKS, memory at P = $SCALE_MEM_RANKS: $((SECONDS - t0)) s" | tee -a scale_check.log
exit "$rc"
