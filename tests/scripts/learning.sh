#!/bin/bash
# The selector's overlap estimate must follow the data, also after a dense
# result.  Identical indices at d = 0.2 on P = 4: before anything is known
# the model assumes random indices (a union of 59 % of N: dense slices, DSAR
# split); the first result shows the union is only 20 % of N, so later calls
# must move to SSAR split (sparse slices, 2.5x fewer bytes).  A dense result
# carries no union size: it is counted per rank and summed in the next
# agreement step (src/core/op.c).  Control: random indices at the same
# density really fill 59 %, and the choice must stay DSAR.  The algorithm of
# every call is read from SPARCML_VERBOSE=1 (the default cost model set
# whole, so neither measured at MPI_Init nor corrected by the calls' times,
# and one rank per core whatever this machine has: the expectations are
# derived from them): its "selector="
# field, what the selector makes of the call's agreed numbers.  The second
# call still runs DSAR, piggybacked on the prediction of the first (its
# data rode on DSAR's reduce-scatter, sparcml(7)); from the third on the
# calls run what the selector chose.
. "$(dirname "$0")/common.sh"
bench="${BENCHBIN:?}/sparcml_bench"

# algorithms PATTERN FIELD: FIELD (algorithm or selector) of each call, one
# per line (rank 0)
algorithms() {
    # shellcheck disable=SC2086 # the settings are words
    run_mpi 4 "$with_shim" SPARCML_VERBOSE=1 $default_model SPARCML_RANKS_PER_CORE=1 -- "$bench" --bytes \
        --n 1048576 --density 0.2 --pattern "$1" --warmup 4
    grep '^sparcml: allreduce' "$out" | sed -n "s/.* $2=\([a-z_]*\).*/\1/p"
}

seq_ident=$(algorithms identical selector | tr '\n' ' ')
check "identical indices: the selector chooses DSAR for the first call, SSAR split for later calls (got: $seq_ident)" \
    '[[ "$seq_ident" == "dsar_split_allgather ssar_split_allgather"* ]] &&
     [[ "$seq_ident" == *"ssar_split_allgather " ]] &&
     [ -z "$(echo "$seq_ident" | tr " " "\n" | sed 1d | grep -v "^ssar_split_allgather$" | grep .)" ]'
seq_ran=$(grep '^sparcml: allreduce' "$out" | sed -n 's/.* algorithm=\([a-z_]*\).*/\1/p' | tr '\n' ' ')
check "identical indices: from the third call on, the calls run SSAR split (got: $seq_ran)" \
    '[[ "$seq_ran" == "dsar_split_allgather dsar_split_allgather ssar_split_allgather"* ]] &&
     [ -z "$(echo "$seq_ran" | tr " " "\n" | sed 1,2d | grep -v "^ssar_split_allgather$" | grep .)" ]'
seq_rand=$(algorithms random algorithm | tr '\n' ' ')
check "random indices: every call DSAR (got: $seq_rand)" \
    '[ -n "$seq_rand" ] && [ -z "$(echo "$seq_rand" | tr " " "\n" | grep -v "^dsar_split_allgather$" | grep .)" ]'
finish
