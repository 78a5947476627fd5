#!/usr/bin/env bash
# Install the built flavour into a scratch prefix with cmake/ (what
# `make install` does), then build c-tests/consumer against it the way a user
# would (TC_VIA=cmake: find_package(mpicast); pkgconfig: mpicast.pc)
# and run it on 2 ranks, expecting multicast.
source "$(dirname "$0")/test-lib.sh"
: "${TC_VIA:?} ${MPI_C_COMPILER:?}"

W=$TC_WORK
prefix=$W/prefix
note "installing $TC_FLAVOUR into $prefix"
cmake -S "$T_TOP/cmake" -B "$W/install-build" -DMPICAST_BUILD="$TC_BUILD" \
  -DMPICAST_FLAVOUR="$TC_FLAVOUR" -DCMAKE_INSTALL_PREFIX="$prefix" >"$W/install.log" 2>&1 \
  || { cat "$W/install.log"; fail "configuring the install failed"; }
cmake --install "$W/install-build" >>"$W/install.log" 2>&1 || { cat "$W/install.log"; fail "install failed"; }
libdir=$(dirname "$(find "$prefix" -name 'libmpicast.so.*.*.*' | head -n 1)")
for f in "$libdir/libmpicast.so" "$libdir/libmpicast.so.0" "$prefix/include/mpicast.h" \
         "$libdir/cmake/mpicast/mpicastConfig.cmake" "$libdir/cmake/mpicast/mpicastConfigVersion.cmake" \
         "$libdir/pkgconfig/mpicast.pc"; do
  [ -e "$f" ] || fail "not installed: ${f#"$prefix"/}"
done
[ -L "$libdir/libmpicast.so.0" ] && [ -L "$libdir/libmpicast.so" ] || fail "the .so names must be symlinks"

args=(-DCONSUMER_VIA="$TC_VIA" -DMPI_C_COMPILER="$MPI_C_COMPILER")
# The Fortran module: installed whenever this machine has a Fortran compiler, and then a
# Fortran consumer is built against it too.
fc=$(command -v "mpif90.$TC_FLAVOUR" || true)
if command -v gfortran >/dev/null && [ -n "$fc" ]; then
  [ -e "$prefix/include/mpicast.mod" ] || fail "not installed: include/mpicast.mod (the Fortran module)"
  args+=(-DCONSUMER_FORTRAN=ON -DMPI_Fortran_COMPILER="$fc")
fi
case "$TC_VIA" in
  cmake) args+=(-DCMAKE_PREFIX_PATH="$prefix") ;;
  pkgconfig)
    export PKG_CONFIG_PATH=$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
    libs=$(pkg-config --libs mpicast)
    note "pkg-config --libs mpicast: $libs"
    # -lmpicast must precede the MPI library for its symbols to win.
    grep -Eq -- '-lmpicast .*-lmpi' <<<"$libs" || fail "pkg-config puts -lmpicast after the MPI library: $libs"
    ;;
esac
cmake -S "$T_TOP/c-tests/consumer" -B "$W/consumer" "${args[@]}" >"$W/consumer.log" 2>&1 \
  || { cat "$W/consumer.log"; fail "configuring the consumer failed"; }
grep -E 'mpicast' "$W/consumer.log" || true
cmake --build "$W/consumer" >>"$W/consumer.log" 2>&1 || { cat "$W/consumer.log"; fail "building the consumer failed"; }

exe=$W/consumer/consumer
needed=$(readelf -d "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
note "consumer NEEDED: $needed"
grep -q 'libmpicast.so.0' <<<"$needed" || fail "the consumer does not need libmpicast.so.0"

launch 2 linked
TC_EXPECT=mcast timeout -k 10 60 "${LAUNCH[@]}" "$exe" || fail "the consumer failed"
if [ -e "$W/consumer/consumer_f" ]; then
  TC_EXPECT=mcast timeout -k 10 60 "${LAUNCH[@]}" "$W/consumer/consumer_f" || fail "the Fortran consumer failed"
fi
echo "consumer ($TC_VIA): ok"
