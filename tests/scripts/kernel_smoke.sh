#!/bin/bash
# kernel_smoke.sh -- bench/kernel_bench --smoke in the test suite: the
# library's merge-add must write the same bytes as the pre-issue-13 kernel
# kept in the benchmark, on the benchmark's inputs.  Nothing is timed.
set -eu
exec "${BENCHBIN:?BENCHBIN not set (run through make check)}/kernel_bench" --smoke
