#!/bin/bash
# SPARCML_STATS and SPARCML_VERBOSE say one thing (sparcml(7), STATISTICS):
#  - the report's bytes_sent (its table, summed over ranks) is the per-call
#    lines' bytes_sent summed over the calls, for tagged, transparent and
#    compressed calls (tests/mpi/stats_calls and a CLT-k run: every rank
#    sends the same bytes, so the sum over ranks is P times rank 0's, whose
#    lines VERBOSE prints), and a compressed or transparent line repeats
#    the bytes_sent of the algorithm's line above it;
#  - a call that the vendor runs after a learnt choice hands it the
#    vendor's bandwidth-optimal share and nothing else: 2 (P - 1) / P of the
#    buffer;
#  - "-" where nothing was measured: a learnt vendor call's scan and
#    nonzeros, a vendor never timed, an exact compressed call's held-back
#    fraction;
#  - every field name and summary line the runs print is in sparcml(7).
. "$(dirname "$0")/common.sh"
# The cost model set whole (no calibration, no timed prices): the choices,
# and with them every rank's bytes, do not depend on timing.  Every rank
# gets the same data, and recursive doubling and the vendor then send the
# same bytes on every rank; a split algorithm need not (each rank sends
# every part but its own).
model=$default_model
P=4
N=65536 # tests/mpi/stats_calls.c
outs=()
keep() { local f; f=$(mktemp); cp "$out" "$f"; outs+=("$f"); }
trap 'rm -f "$out" "$err" "${outs[@]}"' EXIT

# Sum of the table's bytes_sent column (rows: name, calls, bytes, ...).
table_bytes() {
    awk '/^sparcml: algorithm +calls +bytes_sent/ { t = 1; next }
         t && /^sparcml: [a-z_]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+$/ { s += $4 }
         END { print s + 0 }' "$out"
}
# Sum of bytes_sent= over the per-call lines that match $1.
line_bytes() {
    awk -v kind="$1" '$0 ~ "^sparcml: " kind " " {
        for (i = 1; i <= NF; i++) if ($i ~ /^bytes_sent=/) { sub(/^bytes_sent=/, "", $i); s += $i } }
        END { print s + 0 }' "$out"
}
# Lines of kind $1 whose bytes_sent differs from the allreduce line just
# above them (where one is).
repeats_differ() {
    awk -v kind="$1" '
        function sent(   i) { for (i = 1; i <= NF; i++) if ($i ~ /^bytes_sent=/) return substr($i, 12); return "" }
        /^sparcml: allreduce algorithm=/ { last = sent(); next }
        $0 ~ "^sparcml: " kind " " { if (last != "" && sent() != last) bad++; last = "" }
        END { print bad + 0 }' "$out"
}
good() { [ "$rc" -eq 0 ] && grep -q "^failures=0" "$out"; }

run_mpi $P "$with_shim" $model SPARCML_STATS=1 SPARCML_VERBOSE=1 -- "$TESTBIN/stats_calls" tagged
rc=$?
keep
t=$(table_bytes) v=$(line_bytes "allreduce")
check "tagged, P=$P: the table's bytes_sent ($t) is P x the calls' lines' ($v)" \
    'good && [ "$t" -gt 0 ] && [ "$t" -eq $((P * v)) ]'

run_mpi $P "$with_shim" $model SPARCML_ALGORITHM=dense SPARCML_STATS=1 SPARCML_VERBOSE=1 -- "$TESTBIN/stats_calls" tagged
rc=$?
keep
t=$(table_bytes) v=$(line_bytes "allreduce")
check "tagged, dense forced, P=$P: the table's bytes_sent ($t) is P x the calls' lines' ($v)" \
    'good && grep -q "^sparcml: fallbacks to the vendor.s dense allreduce: 6 " "$out" && [ "$t" -gt 0 ] &&
     [ "$t" -eq $((P * v)) ]'

run_mpi $P "$with_shim" $model SPARCML_TRANSPARENT=1 SPARCML_TRANSPARENT_MIN_BYTES=4096 SPARCML_STATS=1 \
    SPARCML_VERBOSE=1 -- "$TESTBIN/stats_calls" transparent
rc=$?
keep
t=$(table_bytes) v=$(line_bytes "transparent allreduce")
check "transparent, P=$P: the table's bytes_sent ($t) is P x the calls' lines' ($v)" \
    'good && [ "$t" -gt 0 ] && [ "$t" -eq $((P * v)) ]'
check "transparent: each sparse call's line repeats its algorithm line's bytes_sent" \
    'good && grep -q "route=sparse" "$out" && [ "$(repeats_differ "transparent allreduce")" -eq 0 ]'
learnt=$((2 * (P - 1) * N * 4 / P))
check "transparent: a learnt vendor call sends the vendor's share only (bytes_sent=$learnt), nothing measured shows -" \
    'good && grep -q "route=vendor_learnt max_nonzeros=- scan_us=- vendor_ms=[-0-9.]* chosen_by=- bytes_sent=$learnt\$" "$out" &&
     ! grep "route=vendor_learnt" "$out" | grep -vq "bytes_sent=$learnt\$"'
check "transparent: the vendor's time before it was ever timed is -" \
    'good && grep -q "route=sparse .* vendor_ms=- " "$out" && ! grep -q "vendor_ms=0.000 " "$out"'

run_mpi $P "$with_shim" $model SPARCML_COMPRESS=cltk SPARCML_COMPRESS_MIN_BYTES=4096 SPARCML_COMPRESS_DENSITY=0.01 \
    SPARCML_STATS=1 SPARCML_VERBOSE=1 -- "$TESTBIN/compress" model
rc=$?
keep
t=$(table_bytes) v=$(line_bytes "allreduce") c=$(sed -n 's/^sparcml: compressed calls: .*(bytes_sent \([0-9]*\) .*/\1/p' "$out")
check "cltk, P=$P: the table's bytes_sent ($t) is P x the calls' lines' ($v) and the compressed calls' ($c)" \
    'good && [ "$t" -gt 0 ] && [ "$t" -eq $((P * v)) ] && [ "$c" = "$t" ]'
check "cltk: each compressed line repeats its algorithm line's bytes_sent (the index broadcast in both)" \
    'good && [ "$(repeats_differ "compressed allreduce")" -eq 0 ] && [ "$(line_bytes "compressed allreduce")" -eq "$v" ]'

# Feedback memory full on one rank: every call is summed exactly by the
# vendor (the table's vendor row), nothing held back to measure.
timeout -k 10 "$TIMEOUT" "$MPIEXEC" -n 1 env LD_PRELOAD="$with_shim" SPARCML_COMPRESS_MIN_BYTES=4096 \
    SPARCML_COMPRESS=cltk SPARCML_STATS=1 SPARCML_VERBOSE=1 SPARCML_COMPRESS_MAX_BYTES=0 "$TESTBIN/compress" capped : \
    -n $((P - 1)) env LD_PRELOAD="$with_shim" SPARCML_COMPRESS_MIN_BYTES=4096 SPARCML_COMPRESS=cltk SPARCML_STATS=1 \
    SPARCML_VERBOSE=1 "$TESTBIN/compress" capped >"$out" 2>"$err"
rc=$?
keep
t=$(table_bytes) v=$(line_bytes "compressed allreduce")
check "cltk summed exactly, P=$P: the vendor row's bytes_sent ($t) is P x the lines' ($v), held_back=-" \
    'good && grep -q "^sparcml: vendor " "$out" && [ "$t" -gt 0 ] && [ "$t" -eq $((P * v)) ] &&
     grep -q "route=exact held_back=- " "$out"'

# Failed, piggybacked and pipelined calls (their summary lines).  Each
# rank writes its stdout to a file of its own: both leaders of
# sparse_errors' inter-communicator print a failed call's line, and the
# launcher forwards the ranks' output in chunks cut anywhere (one rank's
# line may land inside another's).
for alg in "ssar_recursive_double 4" "ssar_split_allgather 1"; do
    read -r a chunks <<<"$alg"
    rank_dir=$(mktemp -d)
    timeout -k 10 "$TIMEOUT" "$MPIEXEC" -n 3 env YIELD_SLEEP_US="$YIELD_SLEEP_US" SPARCML_ALGORITHM=$a \
        SPARCML_PIPELINE_CHUNKS=$chunks SPARCML_STATS=1 SPARCML_VERBOSE=1 $error_strings sh -c \
        'exec env LD_PRELOAD="$1" "$2" >"$0/stdout.${PMI_RANK:-}${OMPI_COMM_WORLD_RANK:-}"' \
        "$rank_dir" "$with_shim" "$TESTBIN/sparse_errors" 2>"$err"
    rc=$?
    cat "$rank_dir"/stdout.* >"$out"
    rm -rf "$rank_dir"
    check "sparse_errors with $a (SPARCML_PIPELINE_CHUNKS=$chunks): $(grep "^sparse_errors" "$out")" \
        '[ "$rc" -eq 0 ] && grep -q "^sparcml: failed calls" "$out"'
    keep
done

# Every field the runs printed is in sparcml(7)'s STATISTICS section: the
# name= tokens of the per-call lines, the table's column and row names,
# the summary lines' leading words.
section=$(sed -n '/^\.SH STATISTICS/,/^\.SH [^S]/p' "$SRCDIR/man/sparcml.7")
names=$(cat "${outs[@]}" | grep -o '^sparcml: .*' | grep -oE '[A-Za-z_]+=' | sort -u)
columns=$(cat "${outs[@]}" | awk '/^sparcml: algorithm +calls/ { for (i = 2; i <= NF; i++) print $i }' | sort -u)
rows=$(cat "${outs[@]}" | awk '/^sparcml: algorithm +calls/ { t = 1; next }
    t && /^sparcml: [a-z_]+ +[0-9]+ +[0-9]+ / { print $2 }' | sort -u)
summaries=$(cat "${outs[@]}" | sed -n 's/^sparcml: \([a-z][a-z ,'"'"'-]*\): .*/\1/p' | sort -u)
check "the runs print fields, columns, rows and summary lines ($(echo $names | wc -w), $(echo $columns | wc -w), $(echo $rows | wc -w), $(echo "$summaries" | wc -l))" \
    '[ -n "$names" ] && [ -n "$columns" ] && [ -n "$rows" ] && [ -n "$summaries" ]'
for f in $names; do
    check "field $f is in sparcml(7), STATISTICS" 'grep -q "^\.B $f\$" <<<"$section"'
done
for f in $columns; do
    check "table column $f is in sparcml(7), STATISTICS" 'grep -q "^\.B $f\$" <<<"$section"'
done
for f in $rows; do
    check "table row $f is in sparcml(7), STATISTICS" 'grep -qw -- "$f" <<<"$section"'
done
while IFS= read -r f; do
    check "summary line \"$f:\" is in sparcml(7), STATISTICS" 'grep -qF "\"sparcml: $f:" <<<"$section"'
done <<<"$summaries"
finish
