#!/bin/bash
# bench_smoke.sh -- the benchmark's correctness smoke test (the only part of
# bench/ meant for the test suite): builds bench/sparcml_bench.c with plain
# mpicc.mpich and runs `sparcml_bench --smoke` under the shim for several P
# and every SPARCML_ALGORITHM.  --smoke runs tiny problems (all index
# patterns, float and double, sparse and dense results) and fails when the
# tagged result differs from the dense MPI_Allreduce bit for bit.
#
# usage: scripts/bench_smoke.sh
# Environment (as exported by `make check`, all optional):
#   SHIM     libsparcml.so            (default build/src/.libs/libsparcml.so)
#   YIELD    yield preload for oversubscribed runs (default: the tests' one
#            if built, else none)
#   MPIEXEC  launcher (default mpiexec.mpich);  TIMEOUT  seconds per run (120)
#   SRCDIR   source tree (default: this script's parent directory)
#   BENCH    a built sparcml_bench (make check builds bench/sparcml_bench);
#            default: compile bench/sparcml_bench.c with mpicc.mpich here
# Output: one "ok - ..." / "not ok - ..." line per run, then "N passed, M
# failed"; exit status 1 on any failure.
set -u
top=${SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
: "${SHIM:=$top/build/src/.libs/libsparcml.so}"
: "${MPIEXEC:=mpiexec.mpich}"
: "${TIMEOUT:=120}"
if [ -z "${YIELD+set}" ]; then
    YIELD=$(dirname "$SHIM")/../../tests/support/.libs/libyield.so
    [ -f "$YIELD" ] || YIELD=
fi
export HYDRA_CONFIG_FILE=/dev/null
[ -f "$SHIM" ] || { echo "bench_smoke: no shim at $SHIM (build first)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bench=${BENCH:-$tmp/sparcml_bench}
if [ -z "${BENCH:-}" ] && ! mpicc.mpich -O2 -std=c11 -Wall -Wextra -Werror "$top/bench/sparcml_bench.c" -o "$bench" -lm; then
    echo "not ok - compile bench/sparcml_bench.c"
    echo "0 passed, 1 failed"
    exit 1
fi
preload=${YIELD:+$YIELD:}$SHIM
pass=0 fail=0
run() { # P ALGORITHM
    local out
    out=$(timeout -k 10 "$TIMEOUT" "$MPIEXEC" -n "$1" env LD_PRELOAD="$preload" SPARCML_ALGORITHM="$2" \
          "$bench" --smoke 2>&1)
    local rc=$?
    if [ "$rc" -eq 0 ] && [[ "$out" == *"smoke: ok"* ]]; then
        pass=$((pass + 1)); echo "ok - smoke P=$1 $2"
    else
        fail=$((fail + 1)); echo "not ok - smoke P=$1 $2 (exit $rc)"
        echo "$out" | head -20 | sed 's/^/#   /'
    fi
}
for p in 1 2 3 4 8; do run "$p" auto; done
for alg in ssar_recursive_double ssar_split_allgather dsar_split_allgather dense; do
    for p in 3 4; do run "$p" "$alg"; done
done
# Without the shim the tagged call must fail (never a silent wrong answer).
if timeout -k 10 "$TIMEOUT" "$MPIEXEC" -n 2 "$bench" --smoke >"$tmp/noshim" 2>&1; then
    fail=$((fail + 1)); echo "not ok - smoke without the shim must fail"
else
    pass=$((pass + 1)); echo "ok - smoke without the shim fails"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
