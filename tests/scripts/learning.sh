#!/bin/bash
# The selector's overlap estimate must follow the data, also after a dense
# result.  Identical indices at d = 0.2 on P = 4: before anything is known
# the model assumes random indices (a union of 59 % of N: dense slices, DSAR
# split); the first result shows the union is only 20 % of N, so later calls
# must move to SSAR split (sparse slices, 2.5x fewer bytes).  A dense result
# carries no union size: it is counted per rank and summed in the next
# agreement step (src/core/op.c).  Control: random indices at the same
# density really fill 59 %, and the choice must stay DSAR.  The algorithm of
# every call is read from SPARCML_VERBOSE=1 (the default cost-model
# settings, not measured at MPI_Init, and one rank per core whatever this
# machine has: the expectations are derived from them).
. "$(dirname "$0")/common.sh"
bench="${BENCHBIN:?}/sparcml_bench"

# algorithms PATTERN: the algorithm of each call, one per line (rank 0)
algorithms() {
    run_mpi 4 "$with_shim" SPARCML_VERBOSE=1 SPARCML_CALIBRATE=0 SPARCML_RANKS_PER_CORE=1 -- "$bench" --bytes --n 1048576 --density 0.2 \
        --pattern "$1" --warmup 4
    grep '^sparcml: allreduce' "$out" | sed -n 's/.*algorithm=\([a-z_]*\).*/\1/p'
}

seq_ident=$(algorithms identical | tr '\n' ' ')
check "identical indices: first call DSAR, later calls SSAR split (got: $seq_ident)" \
    '[[ "$seq_ident" == "dsar_split_allgather ssar_split_allgather"* ]] &&
     [[ "$seq_ident" == *"ssar_split_allgather " ]]'
seq_rand=$(algorithms random | tr '\n' ' ')
check "random indices: every call DSAR (got: $seq_rand)" \
    '[ -n "$seq_rand" ] && [ -z "$(echo "$seq_rand" | tr " " "\n" | grep -v "^dsar_split_allgather$" | grep .)" ]'
finish
