#!/usr/bin/env bash
# The shared object as built for one flavour: SONAME and symlinks, linked
# against that flavour's MPI (and not the other's), the replaced and
# extension symbols exported, and linked test programs asking for
# libmpicast before the MPI library (so its MPI_Bcast wins).
source "$(dirname "$0")/test-lib.sh"

lib=$TC_LIB
dir=$(dirname "$lib")
command -v readelf >/dev/null || fail "readelf missing (binutils)"

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
note "SONAME: ${soname:-none}"
[ "$soname" = libmpicast.so.0 ] || fail "SONAME is '${soname:-none}', want libmpicast.so.0"
[ "$(readlink "$dir/libmpicast.so.0")" = "$(basename "$lib")" ] || fail "$dir/libmpicast.so.0 must link to $(basename "$lib")"
[ "$(readlink "$dir/libmpicast.so")" = libmpicast.so.0 ] || fail "$dir/libmpicast.so must link to libmpicast.so.0"

needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
note "NEEDED: $needed"
case "$TC_FLAVOUR" in
  openmpi) want='libmpi\.so'; other='libmpich' ;;
  mpich) want='libmpich\.so|libmpi\.so\.12'; other='libmpi\.so\.40|libopen-' ;;
esac
grep -Eq "$want" <<<"$needed" || fail "the $TC_FLAVOUR build does not link $want"
! grep -Eq "$other" <<<"$needed" || fail "the $TC_FLAVOUR build links another MPI: $needed"

defined=$(nm -D --defined-only "$lib" | awk '{print $NF}')
for sym in MPI_Bcast MPI_Barrier MPI_Init MPI_Init_thread MPI_Finalize MPICAST_Get_stats MPICAST_Version \
  MPICAST_Status_string MPICAST_Mcast_enable MPICAST_Imcast MPICAST_Mcast_irecv MPICAST_Wait; do
  grep -qx "$sym" <<<"$defined" || fail "$sym is not exported"
done
note "exported MPI/PMPI/MPICAST symbols: $(grep -E '^(P?MPI|MPICAST)_' <<<"$defined" | tr '\n' ' ')"
! grep -qx 'PMPI_Bcast\|PMPI_Barrier' <<<"$defined" || fail "the library must not define PMPI_* (the host's)"

for prog in int_bcast_linked api_header_cxx; do
  exe=$TC_BINDIR/$prog
  order=$(readelf -d "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -nE '^(libmpicast|libmpi|libmpich)' || true)
  note "$prog NEEDED: $(tr '\n' ' ' <<<"$order")"
  first=$(head -n 1 <<<"$order" | cut -d: -f2)
  [ "$first" = libmpicast.so.0 ] || fail "$prog: libmpicast.so.0 must come before the MPI library"
done
# Linked after the MPI library (`-lmpi -lmpicast`), mpicast is loaded but never called: it
# says so once (from rank 0) when it is loaded; linked before it, it says nothing.
: "${MPI_C_COMPILER:?}"
mpilib=$(readelf -d "$TC_BINDIR/int_bcast" | sed -n 's/.*(NEEDED).*\[\(libmpi[^]]*\)\].*/\1/p' | head -n 1)
[ -n "$mpilib" ] || fail "cannot tell the MPI library int_bcast links"
cat >"$TC_WORK/order.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int x = 0;
  MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
EOF
"$MPI_C_COMPILER" "$TC_WORK/order.c" -o "$TC_WORK/right" -L"$dir" -lmpicast -Wl,-rpath,"$dir"
"$MPI_C_COMPILER" "$TC_WORK/order.c" -o "$TC_WORK/wrong" -Wl,--no-as-needed -l:"$mpilib" \
  -L"$dir" -lmpicast -Wl,-rpath,"$dir"
launch 2 linked
for w in right wrong; do
  timeout -k 10 60 "${LAUNCH[@]}" "$TC_WORK/$w" >"$TC_WORK/$w.out" 2>&1 || fail "$w: the program failed"
  n=$(grep -c 'libmpicast comes after it on the link line' "$TC_WORK/$w.out" || true)
  want=$([ $w = wrong ] && echo 1 || echo 0)
  [ "$n" = "$want" ] || { cat "$TC_WORK/$w.out"; fail "$w order: $n warnings, want $want"; }
done
note "link order: the wrong order warned once, the right one not at all"
echo "check_link: ok"
