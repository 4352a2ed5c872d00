#!/bin/bash
# The application's wildcard receives (MPI_ANY_SOURCE, MPI_ANY_TAG), pending
# on the communicators the tagged allreduces run on, are never matched by
# library traffic, whatever the algorithm; its own messages arrive intact.
. "$(dirname "$0")/common.sh"
TIMEOUT=60
algs=$(algorithms)
check "the library names its algorithms: $algs" '[ -n "$algs" ]'
for alg in auto $algs; do
    for p in 1 2 3 4 5; do
        run_mpi "$p" "$with_shim" SPARCML_ALGORITHM=$alg -- "$TESTBIN/isolation"
        rc=$?
        # The one deliberately malformed call reports on stderr; nothing else may.
        check "isolation, algorithm=$alg P=$p: $(tail -1 "$out")" \
            '[ "$rc" -eq 0 ] && ! grep -qv "^sparcml: MPI_Allreduce: rank [0-9]*: nnz > dim" "$err"'
    done
done
finish
