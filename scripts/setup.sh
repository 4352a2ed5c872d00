#!/bin/bash
# setup.sh -- install what is missing (Debian packages), then build sparcml
# in ./build.  Idempotent and quick when nothing changed.  Sourced by run.sh
# and test.sh; can also be run on its own.
#
# The build always uses MPICH's own wrappers (mpicc.mpich, mpiexec.mpich):
# Debian packages such as mpi4py can silently switch the generic `mpicc`
# alternative to Open MPI.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
packages=(mpich libmpich-dev autoconf automake libtool check pkg-config make gcc gfortran
          groff-base man-db valgrind)

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
mkdir -p build
cd build
if [ ! -f Makefile ] || [ ../configure -nt Makefile ]; then
    ../configure --quiet MPICC=mpicc.mpich MPIEXEC=mpiexec.mpich MPIFC=mpif90.mpich
fi
make -s -j2 >/dev/null
echo "setup: built $(pwd)/src/.libs/libsparcml.so with $(mpichversion | head -1 | tr -s ' \t' ' ') ($(readlink -f "$(command -v mpicc.mpich)"))"
