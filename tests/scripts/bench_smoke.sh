#!/bin/bash
# bench_smoke.sh -- the benchmark program's smoke run in the test suite: the
# only part of bench/ that `make check` runs (tiny sizes, bitwise comparison
# with the dense MPI_Allreduce; nothing is timed).  The work is done by
# scripts/bench_smoke.sh on the bench/sparcml_bench that `make check` built.
set -u
BENCH="${BENCHBIN:?BENCHBIN not set (run through make check)}/sparcml_bench"
export BENCH
exec bash "${SRCDIR:?}/scripts/bench_smoke.sh"
