#!/bin/bash
# A Fortran program (mpif90, `use mpi`) is caught by the preloaded shim,
# MPI_IN_PLACE included; without the shim its tagged call fails.
. "$(dirname "$0")/common.sh"
bin=$(mktemp -d)
trap 'rm -rf "$bin" "$out" "$err"' EXIT
if ! (cd "$bin" && "$MPIFC" -o fortran_inplace "$SRCDIR/tests/mpi/fortran_inplace.f90"); then
    not_ok "compile the Fortran test with $MPIFC"
    finish
    exit 1
fi
for p in 1 3 4; do
    run_mpi "$p" "$with_shim" -- "$bin/fortran_inplace"
    rc=$?
    check "Fortran MPI_IN_PLACE, P=$p" '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out"'
done
run_mpi 3 "$with_shim" SPARCML_TRANSPARENT=1 SPARCML_TRANSPARENT_MIN_BYTES=1 -- "$bin/fortran_inplace"
rc=$?
check "Fortran MPI_IN_PLACE with transparent mode on, P=3" '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out"'
run_mpi 2 "$YIELD" -- "$bin/fortran_inplace"
check "Fortran tagged call without the shim fails" '[ $? -ne 0 ]'
finish
