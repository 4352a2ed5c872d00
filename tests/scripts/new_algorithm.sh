#!/bin/bash
# Adding an algorithm is one file, one row and its line in Makefile.am: a
# copy of the source tree gets tests/support/gather_sum.c (a trivial
# algorithm: the streams gathered, summed in rank order) as
# src/alg/gather_sum.c, its row in src/alg/algorithm_list.h and its line in
# Makefile.am, and nothing else.  The copy builds with -Werror, the library
# lists the algorithm, the table of algorithms the test scripts pick from
# (tests/support/algorithm_table.c) has its row, and
# SPARCML_ALGORITHM=gather_sum sums sparse_allreduce's case matrix at P = 1,
# 3 and 4 (results checked against an independent reference, identical on
# every rank); auto never picks it.
# NEW_ALGORITHM=0 skips it (scripts/test.sh: after the MPICH pass).
. "$(dirname "$0")/common.sh"
if [ "${NEW_ALGORITHM:-1}" = 0 ]; then
    echo "skip: NEW_ALGORITHM=0"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$out" "$err"' EXIT
tar -C "$SRCDIR" --exclude='./build*' --exclude=./.git --exclude='./_build' -cf - . | tar -C "$tmp" -xf -
chmod -R u+w "$tmp"
cp "$SRCDIR/tests/support/gather_sum.c" "$tmp/src/alg/gather_sum.c"
sed -i 's/^\(    X(DENSE, dense_allreduce)\)$/    X(GATHER_SUM, gather_sum) \\\n\1/' "$tmp/src/alg/algorithm_list.h"
sed -i 's|^\(\tsrc/alg/dense_allreduce\.c\) \\$|\1 src/alg/gather_sum.c \\|' "$tmp/Makefile.am"
changed=$( (diff -rq "$SRCDIR/src" "$tmp/src"; diff -q "$SRCDIR/Makefile.am" "$tmp/Makefile.am") | wc -l)
check "the copy adds the file, the row and the Makefile.am line, nothing else ($changed differences)" \
    '[ "$changed" -eq 3 ] && grep -q "X(GATHER_SUM, gather_sum)" "$tmp/src/alg/algorithm_list.h" &&
     grep -q "gather_sum.c" "$tmp/Makefile.am"'
(cd "$tmp" && autoreconf -fi && mkdir b && cd b && ../configure --quiet MPICC="$MPICC" &&
    make -s -j2 src/libsparcml.la tests/support/algorithm_table) >"$out" 2>"$err"
rc=$?
check "the copy with the new algorithm builds (-Wall -Wextra -Werror)" '[ "$rc" -eq 0 ]'
new="$tmp/b/src/.libs/libsparcml.so"
listed=$(SHIM=$new algorithms)
check "the library lists the new algorithm: $listed" 'echo " $listed " | grep -q " gather_sum "'
# The scripts pick algorithms by their rows' properties (common.sh,
# algorithms_where): the new row's are read from its descriptor.
row=$("$tmp/b/tests/support/algorithm_table" | grep "^gather_sum ")
check "the table of algorithms has the new row: $row" \
    '[ "$row" = "gather_sum sparse=1 ride=never pipelines=0 dense_recv=0 memory=none" ] &&
     [ "$(ALGTABLE=$tmp/b/tests/support/algorithm_table algorithms_where sparse=1 ride=never)" = gather_sum ]'
for p in 1 3 4; do
    run_mpi "$p" "$YIELD:$new" SPARCML_ALGORITHM=gather_sum -- "$TESTBIN/sparse_allreduce"
    rc=$?
    check "SPARCML_ALGORITHM=gather_sum P=$p: $(tail -1 "$out")" '[ "$rc" -eq 0 ] && [ ! -s "$err" ]'
done
run_mpi 3 "$YIELD:$new" SPARCML_VERBOSE=1 -- "$TESTBIN/sparse_allreduce"
rc=$?
check "auto never picks it (its cost is infinite): $(tail -1 "$out")" \
    '[ "$rc" -eq 0 ] && grep -q "^sparcml: allreduce algorithm=" "$out" && ! grep -q "algorithm=gather_sum" "$out"'
finish
