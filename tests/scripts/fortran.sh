#!/bin/bash
# Fortran programs (mpif90; `use mpi` and `use mpi_f08`) are caught by the
# preloaded shim, MPI_IN_PLACE included, on either MPI (their bindings
# reach the C layer differently: src/fortran_*.c); without the shim the
# tagged call fails; compression takes their REAL and DOUBLE PRECISION sums.
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
# Compression of REAL and DOUBLE PRECISION sums (at density 1: exact).
if (cd "$bin" && "$MPIFC" -o fortran_compress "$SRCDIR/tests/mpi/fortran_compress.f90"); then
    for mode in topk cltk; do
        run_mpi 3 "$with_shim" SPARCML_COMPRESS=$mode SPARCML_COMPRESS_MIN_BYTES=4096 SPARCML_COMPRESS_DENSITY=1 \
            SPARCML_VERBOSE=1 -- "$bin/fortran_compress"
        rc=$?
        check "fortran_compress: $mode, REAL and DOUBLE PRECISION in place, 6 calls compressed, P=3" \
            '[ "$rc" -eq 0 ] && grep -q "failures=0" "$out" && [ "$(grep -c "compressed allreduce" "$out")" -eq 6 ]'
    done
else
    not_ok "compile fortran_compress with $MPIFC"
fi
finish
