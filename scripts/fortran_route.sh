#!/usr/bin/env bash
# Which Fortran entry points must libmpicast export for this MPI, and does it export
# exactly those? With route_probe.so preloaded instead of libmpicast (it counts the calls
# reaching the C MPI_Bcast, MPI_Barrier, MPI_Bcast_c, MPI_Init, MPI_Init_thread and
# MPI_Finalize, and the receive, completion and probe calls of dynamic broadcast), each
# Fortran binding (mpif.h,
# `use mpi`, `use mpi_f08`) makes one call at a time. A call that reaches its C name is
# already replaced by libmpicast's C function, so the Fortran symbol the program calls must
# stay the host's; a call that does not reach it needs that symbol exported by libmpicast
# (mpif.h / `use mpi` names in all four manglings). The library's exported Fortran names
# must be exactly that set, and MPI_Bcast_c exported exactly when the host MPI has it.
# Also: the linked Fortran programs ask for libmpicast before every MPI library.
source "$(dirname "$0")/test-lib.sh"

probe=$TC_BINDIR/route_probe.so
[ -e "$probe" ] || fail "$probe not built"
lib=$TC_LIB
for b in mpif usempi f08; do
  [ -x "$TC_BINDIR/f_route_$b" ] || skip "f_route_$b not built (no Fortran compiler or MPI module)"
done

# probe_named NAME CMD... -> the count of C NAME (MPI_Recv, ...) summed over 2 ranks.
probe_named() {
  local name=$1 dir
  shift
  dir=$(mktemp -d "$TC_WORK/probe.XXXX")
  local saved=$TC_LIB
  TC_LIB=$probe launch 2 preload
  TC_LIB=$saved
  ROUTE_PROBE_DIR=$dir timeout -k 10 60 "${LAUNCH[@]}" "$@" >"$dir.out" 2>&1 \
    || { cat "$dir.out" >&2; fail "the probe job failed: $*"; }
  [ "$(find "$dir" -type f | wc -l)" -eq 2 ] || { cat "$dir.out" >&2; fail "the probe wrote no 2 reports: $*"; }
  awk -v k="$name" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) s += kv[2] } }
                    END { print s + 0 }' "$dir"/*
}

# probe_counts CMD... -> "bcast barrier bcast_c init init_thread finalize" summed over 2 ranks.
probe_counts() {
  local dir
  dir=$(mktemp -d "$TC_WORK/probe.XXXX")
  local saved=$TC_LIB
  TC_LIB=$probe launch 2 preload
  TC_LIB=$saved
  ROUTE_PROBE_DIR=$dir timeout -k 10 60 "${LAUNCH[@]}" "$@" >"$dir.out" 2>&1 \
    || { cat "$dir.out" >&2; fail "the probe job failed: $*"; }
  local n
  n=$(find "$dir" -type f | wc -l)
  [ "$n" -eq 2 ] || { cat "$dir.out" >&2; fail "the probe wrote $n reports, want 2: $*"; }
  awk -F'[ =]' '{ b += $2; r += $4; c += $6; i += $8; t += $10; f += $12 } END { print b, r, c, i, t, f }' "$dir"/*
}

# The probe itself must see a C program's broadcast, or every answer below is void.
read -r b _ _ i _ f <<<"$(probe_counts "$TC_BINDIR/int_bcast" --sizes 64 --iters 1)"
[ "$b" -gt 0 ] || fail "route_probe.so did not see int_bcast's MPI_Bcast: the probe is broken"
[ "$i" -gt 0 ] || fail "route_probe.so did not see int_bcast's MPI_Init: the probe is broken"
[ "$f" -gt 0 ] || fail "route_probe.so did not see int_bcast's MPI_Finalize: the probe is broken"

# The receive, completion and probe calls that dynamic broadcast intercepts (ffi::dbcast),
# and their C names.
P2P_CALLS="recv irecv wait test waitall testall waitany testany waitsome testsome iprobe probe
  cancel request_free request_get_status"
p2p_cname() {
  case $1 in
    request_free) echo MPI_Request_free ;;
    request_get_status) echo MPI_Request_get_status ;;
    *) echo "MPI_$(tr '[:lower:]' '[:upper:]' <<<"${1:0:1}")${1:1}" ;;
  esac
}

defined=$(nm -D --defined-only "$lib" | awk '{print $NF}')
exported_fortran=$(grep -E '^(mpi_[a-z0-9_]+|MPI_[A-Z0-9_]+)$' <<<"$defined" | sort -u || true)
required=""
table=""
for b in mpif usempi f08; do
  exe=$TC_BINDIR/f_route_$b
  undef=$(nm -u "$exe" | awk '{print $NF}')
  calls="bcast barrier init init_thread finalize"
  grep -Eq '^mpi_bcast_f08(ts)?_large_$' <<<"$undef" && calls="$calls bcast_large"
  calls="$calls $P2P_CALLS"
  for call in $calls; do
    col=0
    case $call in
      bcast) sym=$(grep -E '^mpi_bcast(_f08|_f08ts)?_$' <<<"$undef" | head -n 1); cname=MPI_Bcast; col=1 ;;
      barrier) sym=$(grep -E '^mpi_barrier(_f08)?_$' <<<"$undef" | head -n 1); cname=MPI_Barrier; col=2 ;;
      bcast_large) sym=$(grep -E '^mpi_bcast_f08(ts)?_large_$' <<<"$undef" | head -n 1); cname=MPI_Bcast_c; col=3 ;;
      init) sym=$(grep -E '^mpi_init(_f08)?_$' <<<"$undef" | head -n 1); cname=MPI_Init; col=4 ;;
      init_thread) sym=$(grep -E '^mpi_init_thread(_f08)?_$' <<<"$undef" | head -n 1); cname=MPI_Init_thread; col=5 ;;
      finalize) sym=$(grep -E '^mpi_finalize(_f08)?_$' <<<"$undef" | head -n 1); cname=MPI_Finalize; col=6 ;;
      *) sym=$(grep -E "^mpi_${call}(_f08|_f08ts)?_\$" <<<"$undef" | head -n 1)
         cname=$(p2p_cname "$call") ;;
    esac
    [ -n "$sym" ] || fail "f_route_$b: cannot tell which symbol its $call calls (undefined: $(tr '\n' ' ' <<<"$undef"))"
    if [ "$col" -gt 0 ]; then
      counts=$(probe_counts "$exe" "$call")
      n=$(cut -d' ' -f"$col" <<<"$counts")
    else
      n=$(probe_named "$cname" "$exe" "$call")
    fi
    if [ "$n" -gt 0 ]; then
      reached=yes
      need="no (the host's $sym calls $cname, which libmpicast replaces)"
    else
      reached=no
      case $sym in
        *_f08_ | *_f08ts_ | *_large_) names=$sym ;;
        *) base=${sym%_}; names="$base ${base}_ ${base}__ $(tr '[:lower:]' '[:upper:]' <<<"$base")" ;;
      esac
      required="$required $names"
      need="yes: $names"
    fi
    table="$table$(printf '%-7s %-12s %-24s reaches %-12s %-4s export: %s' "$b" "$call" "$sym" "$cname" "$reached" "$need")"$'\n'
  done
done
printf '%s' "$table"

want=$(tr ' ' '\n' <<<"$required" | grep -v '^$' | sort -u || true)
note "libmpicast exports (Fortran names): $(tr '\n' ' ' <<<"$exported_fortran")"
note "required by the routes above:       $(tr '\n' ' ' <<<"$want")"
missing=$(comm -23 <(echo "$want") <(echo "$exported_fortran") | tr '\n' ' ')
extra=$(comm -13 <(echo "$want") <(echo "$exported_fortran") | tr '\n' ' ')
[ -z "${missing// /}" ] || fail "libmpicast must export (else these Fortran calls bypass it): $missing"
[ -z "${extra// /}" ] || fail "libmpicast exports Fortran names the host's own binding already routes through its C functions: $extra"

# MPI_Bcast_c where the host has it, and only there.
hostlib=$(ldd "$TC_BINDIR/int_bcast" | awk '$1 ~ /^lib(mpi|mpich)\.so/ {print $3; exit}')
[ -n "$hostlib" ] || fail "cannot find the MPI library of int_bcast"
hostsyms=$(nm -D --defined-only "$hostlib" | awk '{print $NF}')
if grep -qx PMPI_Bcast_c <<<"$hostsyms"; then
  grep -qx MPI_Bcast_c <<<"$defined" || fail "$hostlib has MPI_Bcast_c but libmpicast does not export it"
  note "$hostlib has MPI_Bcast_c: libmpicast exports it"
else
  ! grep -qx MPI_Bcast_c <<<"$defined" || fail "libmpicast exports MPI_Bcast_c, which $hostlib does not have"
  note "$hostlib has no MPI_Bcast_c: libmpicast does not export it"
fi

# Linked Fortran programs: libmpicast before every MPI library (mpif.h, mpi_f08 and C).
for b in mpif usempi f08; do
  exe=$TC_BINDIR/f_$b"_linked"
  [ -e "$exe" ] || continue
  order=$(readelf -d "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -E '^lib(mpicast|mpi|mpich)' || true)
  note "f_${b}_linked NEEDED: $(tr '\n' ' ' <<<"$order")"
  [ "$(head -n 1 <<<"$order")" = libmpicast.so.0 ] || fail "f_${b}_linked: libmpicast.so.0 must come before the MPI libraries"
done
echo "fortran_route: ok"
