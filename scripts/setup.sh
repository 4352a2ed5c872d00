#!/bin/bash
# setup.sh -- install what is missing (Debian packages), then build sparcml
# in ./build.  Idempotent and quick when nothing changed.  Sourced by run.sh
# and test.sh; can also be run on its own.
#
# Two builds, each with its MPI's own wrappers: build/ (mpicc.mpich,
# mpiexec.mpich) and build-openmpi/ (mpicc.openmpi, mpirun.openmpi); Debian
# packages such as mpi4py switch the generic `mpicc` alternative.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
packages=(mpich libmpich-dev openmpi-bin libopenmpi-dev python3-mpi4py python3-numpy python3-pip python3-venv python3-setuptools python3-torch python3-sklearn
          autoconf automake libtool check pkg-config make gcc gfortran
          groff-base man-db mandoc valgrind)

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: need root to install Debian packages: ${missing[*]}" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ] \
   || [ tests/Makefile.inc -nt configure ]; then
    autoreconf -fi >/dev/null
fi
# One build per MPI, each with that MPI's own wrappers (never the generic
# alternatives, which installing Open MPI or mpi4py switches): build/ for
# MPICH, build-openmpi/ for Open MPI.
configure_in() { # DIR, configure arguments...
    local dir=$1
    shift
    mkdir -p "$top/$dir"
    cd "$top/$dir"
    if [ ! -f Makefile ] || [ ../configure -nt Makefile ]; then
        ../configure --quiet "$@"
    fi
    make -s -j2 >/dev/null
}
configure_in build MPICC=mpicc.mpich MPIEXEC=mpiexec.mpich MPIFC=mpif90.mpich
echo "setup: built $top/build/src/.libs/libsparcml.so with $(mpichversion | head -1 | tr -s ' \t' ' ') ($(readlink -f "$(command -v mpicc.mpich)"))"
configure_in build-openmpi MPICC=mpicc.openmpi MPIEXEC=mpirun.openmpi MPIFC=mpif90.openmpi
echo "setup: built $top/build-openmpi/src/.libs/libsparcml.so with Open MPI $(ompi_info --version 2>/dev/null | sed -n 's/.*v\([0-9.]*\).*/\1/p' | head -1) ($(readlink -f "$(command -v mpicc.openmpi)"))"
cd "$top/build"
