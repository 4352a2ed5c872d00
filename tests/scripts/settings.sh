#!/bin/bash
# SPARCML_* validation at start-up, verbose and stats output, and settings
# that differ between ranks.
. "$(dirname "$0")/common.sh"
prog="$TESTBIN/no_shim"
# stopped: the job ended as a bad setting ends it (sparcml(7), ENVIRONMENT):
# exit status 1 under both MPIs, the one line PATTERN once in the job's
# stderr and no other line of the library, no MPI_Abort (MPICH's
# "Abort(1) on node", Open MPI's "MPI_ABORT was invoked").
stopped() {
    [ "$rc" -eq 1 ] && [ "$(occurrences "$1" "$err")" -eq 1 ] && [ "$(occurrences "sparcml:" "$err")" -eq 1 ] \
        && ! grep -q "Abort(\|MPI_ABORT" "$err"
}
for bad in SPARCML_ALGORITHM=ring SPARCML_VERBOSE=yes SPARCML_DISABLE=2 SPARCML_ALPHA_US=-3 \
           SPARCML_BETA_NS_PER_BYTE=fast SPARCML_STATS= SPARCML_QSGD_BITS=3 SPARCML_TRANSPARENT=TRUE \
           SPARCML_RANKS_PER_CORE=0 SPARCML_PIGGYBACK=yes SPARCML_COMPRESS=top1 SPARCML_COMPRESS=on \
           SPARCML_COMPRESS_DENSITY=0 SPARCML_COMPRESS_DENSITY=1.5 SPARCML_COMPRESS_DENSITY=1e-3x \
           SPARCML_COMPRESS_MIN_BYTES=-1 SPARCML_COMPRESS_FEEDBACK=on SPARCML_COMPRESS_MAX_BYTES=1G \
           SPARCML_REPRODUCIBLE=2 SPARCML_REPRODUCIBLE=yes; do
    run_mpi 2 "$with_shim" "$bad" -- "$prog" shim
    rc=$?
    check "$bad stops the job (exit status 1, no MPI_Abort) with one line naming it (2 ranks)" \
        'stopped "sparcml: rank [0-9]*: invalid ${bad%%=*}="'
done
# The same at P = 4, where MPI_Abort printed a varying number of lines; a
# value on some ranks only; and SPARCML_PROGRESS_US without
# MPI_THREAD_MULTIPLE (no_shim asks for no thread level).
run_mpi 4 "$with_shim" SPARCML_SPLIT_GATHER=library -- "$prog" shim
rc=$?
check "SPARCML_SPLIT_GATHER=library at P=4: one line from rank 0, exit status 1, no MPI_Abort" \
    'stopped "sparcml: rank 0: invalid SPARCML_SPLIT_GATHER=.library. (expected auto, vendor, doubling or ring)"'
timeout -k 10 "$TIMEOUT" "$MPIEXEC" -n 2 env LD_PRELOAD="$with_shim" "$prog" shim : \
    -n 2 env LD_PRELOAD="$with_shim" SPARCML_PIGGYBACK=2 "$prog" shim >"$out" 2>"$err"
rc=$?
check "a bad value on ranks 2 and 3 of 4: one line from rank 2, exit status 1, no MPI_Abort" \
    'stopped "sparcml: rank 2: invalid SPARCML_PIGGYBACK="'
run_mpi 4 "$with_shim" SPARCML_PROGRESS_US=100 -- "$prog" shim
rc=$?
check "SPARCML_PROGRESS_US without MPI_THREAD_MULTIPLE at P=4: one line, exit status 1, no MPI_Abort" \
    'stopped "sparcml: rank 0: SPARCML_PROGRESS_US needs MPI_THREAD_MULTIPLE"'
# Unknown names never stop a job: those module systems and Spack set are
# ignored without a word, any other is warned about once per job with the
# nearest known name.
run_mpi 3 "$with_shim" SPARCML_ROOT=/opt/sparcml SPARCML_DIR=/opt/sparcml/lib/cmake SPARCML_VERSION=0.3 \
    SPARCML_INCLUDE=/opt/sparcml/include -- "$prog" shim
rc=$?
check "SPARCML_ROOT, _DIR, _VERSION, _INCLUDE: the job runs and the library says nothing" \
    '[ "$rc" -eq 0 ] && [ ! -s "$err" ] && ! grep -q sparcml: "$out" && grep -q "summed correctly" "$out"'
run_mpi 3 "$with_shim" SPARCML_TRANSPARNT=1 -- "$prog" shim
rc=$?
check "SPARCML_TRANSPARNT=1 (3 ranks): one warning line with the suggestion, the job succeeds" \
    '[ "$rc" -eq 0 ] && grep -q "summed correctly" "$out" && [ "$(occurrences "sparcml:" "$err")" -eq 1 ] &&
     [ "$(grep -cx "sparcml: warning: unknown variable SPARCML_TRANSPARNT ignored (did you mean SPARCML_TRANSPARENT?)" "$err")" -eq 1 ]'
# Ranks with different environments: each name once, by the lowest rank
# holding it (rank 1 and rank 2 here, rank 0 has neither).
timeout -k 10 "$TIMEOUT" "$MPIEXEC" -n 1 env LD_PRELOAD="$with_shim" "$prog" shim : \
    -n 1 env LD_PRELOAD="$with_shim" SPARCML_ALGORTIHM=dense "$prog" shim : \
    -n 2 env LD_PRELOAD="$with_shim" SPARCML_ALGORTIHM=dense SPARCML_XYZZY=1 "$prog" shim >"$out" 2>"$err"
rc=$?
check "unknown names on some ranks of 4: one warning per name, with a suggestion only for the near one" \
    '[ "$rc" -eq 0 ] && grep -q "summed correctly" "$out" && [ "$(occurrences "sparcml:" "$err")" -eq 2 ] &&
     [ "$(occurrences "unknown variable SPARCML_ALGORTIHM ignored (did you mean SPARCML_ALGORITHM?)" "$err")" -eq 1 ] &&
     [ "$(occurrences "unknown variable SPARCML_XYZZY ignored (see sparcml(7)" "$err")" -eq 1 ]'
# Keyword values in any case (booleans are 0 or 1).
run_mpi 2 "$with_shim" SPARCML_COMPRESS=TOPK SPARCML_SPLIT_GATHER=Ring SPARCML_RANKS_PER_CORE=AUTO \
    SPARCML_ALGORITHM=Dense -- "$prog" shim
rc=$?
check "SPARCML_COMPRESS=TOPK, SPARCML_SPLIT_GATHER=Ring, SPARCML_RANKS_PER_CORE=AUTO, SPARCML_ALGORITHM=Dense are accepted" \
    '[ "$rc" -eq 0 ] && [ ! -s "$err" ] && grep -q "summed correctly" "$out"'
run_mpi 3 "$with_shim" SPARCML_VERBOSE=1 -- "$prog" shim
check "SPARCML_VERBOSE=1: one line per call on rank 0" \
    '[ "$(grep -c "^sparcml: allreduce algorithm=" "$out")" -eq 1 ]'
# Ranks per core: detected from the ranks on this machine over its online
# CPUs (all ranks of a test run here), or as set.
cpus=$(getconf _NPROCESSORS_ONLN)
for p in 1 2 4 8; do
    want=$(awk -v p="$p" -v c="$cpus" 'BEGIN { r = p / c; printf "%g", (r > 1 ? r : 1) }')
    run_mpi "$p" "$with_shim" SPARCML_VERBOSE=1 -- "$prog" shim
    got=$(sed -n 's/^sparcml: allreduce .* ranks_per_core=\([0-9.e+]*\).*/\1/p' "$out")
    check "P=$p on $cpus CPUs: ranks per core detected as $want (got ${got:-nothing})" '[ "$got" = "$want" ]'
done
run_mpi 2 "$with_shim" SPARCML_VERBOSE=1 SPARCML_RANKS_PER_CORE=3.5 -- "$prog" shim
check "SPARCML_RANKS_PER_CORE=3.5 is used as set" 'grep -q "ranks_per_core=3.5 " "$out"'
run_mpi 3 "$with_shim" SPARCML_STATS=1 SPARCML_ALGORITHM=dense -- "$prog" shim
check "SPARCML_STATS=1: report at MPI_Finalize counts the collective call once (3 ranks)" \
    'grep -Eq "^sparcml: dense +1 " "$out"'
# The report's counts match the calls made: sparse_allreduce reports how many
# tagged calls each rank made (world and a sub-communicator); the report
# counts each collective call once: half of them on MPI_COMM_WORLD, half on
# one of the two halves (even and odd ranks), so 3/2 of a rank's calls.
calls_sum() { awk '/^sparcml: [a-z_]+ +[0-9]+ / { s += $3 } END { print s + 0 }' "$out"; }
run_mpi 3 "$with_shim" SPARCML_STATS=1 -- "$TESTBIN/sparse_allreduce"
made=$(( $(sed -n 's/.*calls_per_rank=\([0-9]*\).*/\1/p' "$out") * 3 / 2 ))
check "SPARCML_STATS=1: calls per algorithm add up to the $made calls made" \
    '[ -n "$made" ] && [ "$(calls_sum)" -eq "$made" ]'
run_mpi 2 "$with_shim" SPARCML_STATS=1 SPARCML_ALGORITHM=dense -- "$TESTBIN/sparse_allreduce"
made=$(( $(sed -n 's/.*calls_per_rank=\([0-9]*\).*/\1/p' "$out") * 3 / 2 ))
check "SPARCML_STATS=1: forced dense calls are reported as vendor fallbacks" \
    'grep -q "fallbacks to the vendor.s dense allreduce: $made (cost model chose dense: 0, forced by SPARCML_ALGORITHM: $made)" "$out"'
run_mpi 2 "$with_shim" SPARCML_STATS=1 -- "$TESTBIN/sparse_errors"
check "SPARCML_STATS=1: failed calls are reported by reason" \
    'grep -Eq "^sparcml: failed calls: index >= dim +2\$" "$out"'
# Each rank writes its stdout to a file of its own: Open MPI forwards the
# ranks' output in chunks of a pipe's size, cut anywhere, so under load one
# rank's lines land inside the other's (a report line, once: CI of 10b4882).
# The rank comes from the launcher (PMI_RANK: MPICH, OMPI_COMM_WORLD_RANK:
# Open MPI).
rank_dir=$(mktemp -d)
timeout -k 10 "$TIMEOUT" "$MPIEXEC" -n 2 sh -c \
    'exec env LD_PRELOAD="$1" SPARCML_STATS=1 SPARCML_VERBOSE=1 "$2" >"$0/stdout.${PMI_RANK:-}${OMPI_COMM_WORLD_RANK:-}"' \
    "$rank_dir" "$with_shim" "$TESTBIN/sparse_errors" 2>"$err"
cat "$rank_dir"/stdout.* >"$out"
nranks=$(find "$rank_dir" -name 'stdout.?' | wc -l)
rm -rf "$rank_dir"
nfailed=$(awk '/^sparcml: failed calls: / { s += $NF } END { print s + 0 }' "$out")
# Both leaders of the inter-communicator case print their line.
nlines=$(grep -c "^sparcml: allreduce failed: " "$out")
check "SPARCML_VERBOSE=1: a line for each failed call ($nlines lines, $nfailed failed calls, $nranks ranks' files)" \
    '[ "$nranks" -eq 2 ] && [ "$nfailed" -gt 0 ] && [ "$nlines" -eq "$nfailed" ]'
run_mpi 3 "$with_shim" -- "$prog" shim
check "silent by default" '[ ! -s "$err" ] && ! grep -q sparcml: "$out"'
# Different settings on different ranks must fail, not deadlock.
timeout -k 10 "$TIMEOUT" "$MPIEXEC" -n 1 env LD_PRELOAD="$with_shim" SPARCML_ALGORITHM=dense "$prog" shim : \
    -n 1 env LD_PRELOAD="$with_shim" "$prog" shim >"$out" 2>"$err"
rc=$?
# The line names the first variable that differs and the values of rank 0
# and the lowest rank whose settings differ from rank 0's (the defaults as
# sparcml(7) gives them).
check "settings differing between ranks are an error on every rank, the line names the variable and two values" \
    '[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$(occurrences "settings differ between ranks" "$err")" -eq 1 ] &&
     grep -q "settings differ between ranks: SPARCML_ALGORITHM is dense on rank 0 and auto on rank 1\$" "$err"'
# The same for the settings that change what the first call on a
# communicator does (ranks per core, detected collectively unless set) or
# how the agreement travels.
for run in "SPARCML_RANKS_PER_CORE=2 auto" "SPARCML_PIGGYBACK=0 1" "SPARCML_COMPRESS_DENSITY=0.5 0.01" \
    "SPARCML_COMPRESS_FEEDBACK=0 1"; do
    read -r var default <<<"$run"
    timeout -k 10 "$TIMEOUT" "$MPIEXEC" -n 1 env LD_PRELOAD="$with_shim" "$var" "$prog" shim : \
        -n 2 env LD_PRELOAD="$with_shim" "$prog" shim >"$out" 2>"$err"
    rc=$?
    check "$var on one rank of 3 is an error on every rank, named with rank 1's $default" \
        '[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$(occurrences "settings differ between ranks" "$err")" -eq 1 ] &&
         grep -q "settings differ between ranks: ${var%%=*} is ${var#*=} on rank 0 and $default on rank 1\$" "$err"'
done
# Settings that change which collective calls a rank makes outside a tagged
# call (the report's at MPI_Finalize, whether tags are registered, which
# untagged calls transparent mode takes) are compared at MPI_Init: one line
# naming the variable and the values of two ranks (set on rank 0; the
# default, from sparcml(7), on rank 1), the job stops as for a bad value.
for case in SPARCML_STATS=1:0 SPARCML_DISABLE=1:0 SPARCML_TRANSPARENT=1:0 SPARCML_TRANSPARENT_MIN_BYTES=4096:1048576 \
            SPARCML_COMPRESS=TopK:off SPARCML_COMPRESS_MIN_BYTES=4096:1048576; do
    var=${case%:*} default=${case##*:}
    value=${var#*=}
    [ "$value" = TopK ] && value=topk
    timeout -k 10 "$TIMEOUT" "$MPIEXEC" -n 1 env LD_PRELOAD="$with_shim" "$var" "$prog" shim : \
        -n 2 env LD_PRELOAD="$with_shim" "$prog" shim >"$out" 2>"$err"
    rc=$?
    check "$var on one rank of 3 stops the job at MPI_Init with one line naming it and both values" \
        'stopped "sparcml: settings differ between ranks: ${var%%=*} is $value on rank 0 and $default on rank 1 (it must be equal on all ranks: sparcml(7))"'
done
finish
