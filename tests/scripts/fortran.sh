#!/bin/bash
# Fortran programs (mpif90; `use mpi` and `use mpi_f08`) are caught by the
# preloaded shim, MPI_IN_PLACE included, on either MPI (their bindings
# reach the C layer differently: src/fortran_*.c); without the shim the
# tagged call fails.
. "$(dirname "$0")/common.sh"
bin=$(mktemp -d)
trap 'rm -rf "$bin" "$out" "$err"' EXIT
for prog in fortran_inplace fortran_f08; do
    if ! (cd "$bin" && "$MPIFC" -o "$prog" "$SRCDIR/tests/mpi/$prog.f90"); then
        not_ok "compile $prog with $MPIFC"
        continue
    fi
    for p in 1 3 4; do
        run_mpi "$p" "$with_shim" -- "$bin/$prog"
        rc=$?
        check "$prog: MPI_IN_PLACE, P=$p" '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out"'
    done
    run_mpi 3 "$with_shim" SPARCML_TRANSPARENT=1 SPARCML_TRANSPARENT_MIN_BYTES=1 -- "$bin/$prog"
    rc=$?
    check "$prog: with transparent mode on, P=3" '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out"'
    run_mpi 2 "$YIELD" -- "$bin/$prog"
    check "$prog: the tagged call without the shim fails" '[ $? -ne 0 ]'
done
finish
