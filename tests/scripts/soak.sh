#!/bin/bash
# Soak, P=4: 10,000 tagged allreduces of varying size, density and type,
# every result verified, resident memory and open descriptors flat after a
# warm-up; then 3000 x (MPI_Comm_dup, tagged allreduce, MPI_Comm_free), the
# same (the private duplicate and pool of every communicator are freed with
# it; 3000 exceeds MPICH's 2048 context ids, so leaked duplicates would also
# make MPI_Comm_dup fail).  tests/mpi/soak.c states the RSS threshold.
# SOAK_CALLS and SOAK_COMMS narrow the two loops (scripts/test.sh does so
# for the distcheck and sanitizer re-runs, after the full soak has run).
# In the sanitizer build the RSS limit is not applied (ASan's quarantine
# keeps freed memory by design; LeakSanitizer checks for leaks there);
# descriptors and results still are.
. "$(dirname "$0")/common.sh"
TIMEOUT=300
calls=${SOAK_CALLS:-10000}
comms=${SOAK_COMMS:-3000}
limit=1024
[ -n "${SANITIZE:-}" ] && limit=-1
run_mpi 4 "$with_shim" SPARCML_STATS=1 -- "$TESTBIN/soak" "$calls" "$comms" "$limit"
rc=$?
sed -n 's/^/# /p' "$out"
check "soak, P=4, $calls calls: $(grep '^soak: P=' "$out" | sed 's/^soak: //')" \
    '[ "$rc" -eq 0 ] && grep -q "soak: wrong results 0: PASS" "$out" && [ ! -s "$err" ]'
check "soak, P=4, $comms communicators: $(grep '^soak: comm' "$out" | sed 's/^soak: //')" \
    '[ "$rc" -eq 0 ] && grep -q "^soak: comm dup" "$out"'
finish
