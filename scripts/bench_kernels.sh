#!/bin/bash
# bench_kernels.sh -- build the kernel benchmark and time the stream kernels
# and top-k selection against memcpy, and the merge-add against its portable
# path and a plain two-pointer merge-add, side by side in one run (best of 5).
# Writes bench/results/kernels.csv.
set -eu
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
make -C build -s bench/kernel_bench >/dev/null
mkdir -p bench/results
build/bench/kernel_bench | tee bench/results/kernels.csv
