#!/bin/bash
# The library built for one MPI, preloaded into a program of the other,
# stops the job with one line naming both MPIs and the library to preload
# instead: no signal, no error from the foreign MPI, a status below 128.
# Both ways: this build's library in programs of the other MPI (under that
# MPI's launcher), and the other build's library in programs of this one.
# Programs: C (tests/mpi/no_shim.c), Fortran with `use mpi` and `use
# mpi_f08` (their bindings reach MPI_Init differently), and mpi4py, which
# loads its MPI only on import.  A library in its build tree hints where
# scripts/setup.sh builds the other; an installed one (a copy outside
# .libs) names its own path and prefix instead.  The other build is a sibling of this one
# in the source tree ($SRCDIR/build, $SRCDIR/build-openmpi: scripts/setup.sh);
# without one (make distcheck) the test is skipped.
. "$(dirname "$0")/common.sh"
bin=$(mktemp -d)
trap 'rm -rf "$bin" "$out" "$err"' EXIT

# var BUILDDIR NAME: a variable configure wrote into BUILDDIR's Makefile.
var() { sed -n "s/^$2 = //p" "$1/Makefile"; }
this=$(cd "$(dirname "$SHIM")/../.." && pwd)
this_mpi=$(var "$this" SPARCML_MPI)
other=
for d in "$SRCDIR"/build "$SRCDIR"/build-*; do
    [ -f "$d/Makefile" ] && [ -e "$d/src/.libs/libsparcml.so" ] || continue
    m=$(var "$d" SPARCML_MPI)
    case $m in MPICH | "Open MPI") [ "$m" != "$this_mpi" ] && other=$(cd "$d" && pwd) && break ;; esac
done
case $this_mpi in MPICH | "Open MPI") ;; *) other= ;; esac
if [ -z "$other" ]; then
    echo "ok - wrong MPI both ways # SKIP no build for the other MPI of '$this_mpi' in $SRCDIR"
    exit 77
fi

# Open MPI's launcher refuses root and more ranks than cores unless told
# (the MPICH build's environment does not tell it).
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM OMPI_MCA_rmaps_base_oversubscribe

# stopped WHAT LIB_MPI PROG_MPI: the checks of one run ($rc, $out, $err).
stopped() {
    local line="is built for $2 but the program runs $3 (.*): preload the libsparcml.so built for $3 instead"
    cat "$out" "$err" >"$bin/all"
    check "$1: exit status $rc (non-zero, below 128)" '[ "$rc" -ne 0 ] && [ "$rc" -lt 124 ]'
    check "$1: no signal, no foreign MPI error" \
        '! grep -qiE "signal|segmentation|invalid communicator|fatal error|before MPI_INIT" "$bin/all"'
    check "$1: exactly one line naming $2 and $3" \
        '[ "$(occurrences "^sparcml: .*$line" "$bin/all")" -eq 1 ] && [ "$(occurrences "sparcml:" "$bin/all")" -eq 1 ]'
}

# both LIB_BUILD PROG_BUILD: the LIB_BUILD library in PROG_BUILD's programs.
both() {
    local lib="$1/src/.libs/libsparcml.so" lib_mpi prog_mpi tag mpicc mpifc p prog prefix
    lib_mpi=$(var "$1" SPARCML_MPI)
    prog_mpi=$(var "$2" SPARCML_MPI)
    tag=$(echo "$prog_mpi" | tr -d ' ')
    mpicc=$(var "$2" MPICC)
    mpifc=$(var "$2" MPIFC)
    MPIEXEC=$(var "$2" MPIEXEC)
    if "$mpicc" -I"$SRCDIR/include" -o "$bin/no_shim_$tag" "$SRCDIR/tests/mpi/no_shim.c" >"$bin/cc.log" 2>&1; then
        for p in 1 3; do
            run_mpi "$p" "$YIELD:$lib" -- "$bin/no_shim_$tag" shim
            rc=$?
            stopped "$lib_mpi library, $prog_mpi C program, P=$p" "$lib_mpi" "$prog_mpi"
        done
        check "$lib_mpi library in its build tree: the hint names where scripts/setup.sh builds the other" \
            'grep -q "scripts/setup.sh builds it as build" "$bin/all"'
        # Installed (a copy outside the build's .libs, as make install or
        # make install DESTDIR=... leaves it): the hint names this library's
        # path and install prefix, nothing of a source tree.
        mkdir -p "$bin/installed_$tag/lib"
        cp "$lib" "$bin/installed_$tag/lib/libsparcml.so"
        run_mpi 1 "$YIELD:$bin/installed_$tag/lib/libsparcml.so" -- "$bin/no_shim_$tag" shim
        rc=$?
        stopped "$lib_mpi library installed, $prog_mpi C program" "$lib_mpi" "$prog_mpi"
        prefix=$(var "$1" prefix)
        check "$lib_mpi library installed: the line names its path and prefix ($prefix), no source tree" \
            'grep -qF "sparcml: $bin/installed_$tag/lib/libsparcml.so is built for" "$bin/all" &&
             grep -qF "installed under $prefix;" "$bin/all" &&
             ! grep -qE "setup\.sh|build-openmpi|\.libs" "$bin/all"'
    else
        not_ok "compile tests/mpi/no_shim.c with $mpicc"
    fi
    for prog in fortran_inplace fortran_f08; do
        command -v "$mpifc" >/dev/null || continue
        if ! (cd "$bin" && "$mpifc" -o "${prog}_$tag" "$SRCDIR/tests/mpi/$prog.f90" >cc.log 2>&1); then
            not_ok "compile $prog with $mpifc"
            continue
        fi
        run_mpi 2 "$YIELD:$lib" -- "$bin/${prog}_$tag"
        rc=$?
        stopped "$lib_mpi library, $prog_mpi Fortran $prog, P=2" "$lib_mpi" "$prog_mpi"
    done
    # mpi4py: Debian builds it for Open MPI only.
    if [ "$prog_mpi" = "Open MPI" ] && /usr/bin/python3 -c "import mpi4py" 2>/dev/null; then
        run_mpi 2 "$YIELD:$lib" -- /usr/bin/python3 -c "from mpi4py import MPI; print(MPI.COMM_WORLD.Get_rank())"
        rc=$?
        stopped "$lib_mpi library, mpi4py ($prog_mpi), P=2" "$lib_mpi" "$prog_mpi"
    fi
}

both "$this" "$other"
both "$other" "$this"
finish
