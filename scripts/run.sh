#!/bin/bash
# run.sh -- the README's main command: set up and build, then run the
# example application under mpiexec -n 4 with the shim preloaded, printing
# what the shim did.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
b="$top/build"
export HYDRA_CONFIG_FILE=/dev/null
echo "== examples/sparse_sum: 4 ranks, N = 1,000,000, k = 1000 per rank, shim preloaded (SPARCML_VERBOSE=1)"
mpiexec.mpich -n 4 env LD_PRELOAD="$b/src/.libs/libsparcml.so" SPARCML_VERBOSE=1 SPARCML_STATS=1 \
    "$b/examples/sparse_sum" 1000000 1000
