#!/usr/bin/env bash
# A program not written for mpicast, run with libmpicast preloaded (TC_FOREIGN=cxx: the
# C++ program int_cxx; mpi4py: c-tests/src/int_mpi4py.py under the mpi4py that `make deps`
# built against this flavour in build/<flavour>/venv). The program checks its data and
# prints how many broadcasts and barriers rank 0 made; rank 0's MPICAST_STATS=1 line must
# show at least that many on the multicast path, and the kernel's Udp InDatagrams must
# grow by at least the datagrams it says it received.
source "$(dirname "$0")/test-lib.sh"
: "${TC_FOREIGN:?}"

NP=4
case $TC_FOREIGN in
  cxx)
    tag=int_cxx
    cmd=("$TC_BINDIR/int_cxx")
    [ -x "${cmd[0]}" ] || fail "${cmd[0]} not built"
    ;;
  mpi4py)
    tag=int_mpi4py
    py=$TC_BUILD/venv/bin/python
    [ -x "$py" ] || fail "no Python venv at $TC_BUILD/venv: run make deps (it builds mpi4py against $TC_FLAVOUR)"
    # Found without importing mpi4py.MPI, which would initialise MPI outside the launcher.
    pkg=$("$py" -c 'import mpi4py, os; print(os.path.dirname(mpi4py.__file__))' 2>/dev/null) \
      || fail "mpi4py is not installed in $TC_BUILD/venv: run make deps"
    so=$(ls "$pkg"/MPI.*.so 2>/dev/null | head -n 1)
    [ -n "$so" ] || fail "no compiled mpi4py.MPI in $pkg"
    mpilib=$(ldd "$so" | awk '$1 ~ /^lib(mpi|mpich)\.so/ {print $1; exit}')
    note "mpi4py $("$py" -c 'import mpi4py; print(mpi4py.__version__)') at $so, linked to ${mpilib:-?}"
    case "$TC_FLAVOUR:$mpilib" in
      openmpi:libmpi.so.40 | mpich:libmpich.so.12) ;;
      *) fail "the mpi4py in $TC_BUILD/venv is not built against $TC_FLAVOUR ($mpilib)" ;;
    esac
    # Which broadcast entry points mpi4py calls: on MPICH the large-count MPI_Bcast_c,
    # which libmpicast must then replace, or every Comm.Bcast would bypass it.
    calls=$(nm -D --undefined-only "$so" | awk '{print $NF}' | grep -E '^MPI_(Bcast|Bcast_c|Barrier)$' | tr '\n' ' ')
    note "mpi4py calls: $calls"
    ours=$(nm -D --defined-only "$TC_LIB" | awk '{print $NF}')
    for c in $calls; do
      grep -qx "$c" <<<"$ours" || fail "mpi4py calls $c but libmpicast does not replace it"
    done
    cmd=("$py" "$T_TOP/c-tests/src/int_mpi4py.py")
    ;;
  *) fail "TC_FOREIGN must be cxx or mpi4py" ;;
esac

launch "$NP" preload
out=$TC_WORK/job.out
before=$(udp_in_datagrams)
MPICAST_STATS=1 timeout -k 10 150 "${LAUNCH[@]}" "${cmd[@]}" >"$out" 2>&1 \
  || { cat "$out"; fail "the job failed"; }
after=$(udp_in_datagrams)
cat "$out"

res=$(grep -E "^$tag: bcasts=[0-9]+ barriers=[0-9]+ ok$" "$out" | tail -n 1 || true)
[ -n "$res" ] || fail "no '$tag: bcasts=N barriers=M ok' line"
want_bcast=$(sed -n 's/.* bcasts=\([0-9]*\) .*/\1/p' <<<"$res")
want_barrier=$(sed -n 's/.* barriers=\([0-9]*\) .*/\1/p' <<<"$res")
line=$(stats_line "$out")
[ -n "$line" ] || fail "no 'mpicast: stats:' line: was libmpicast loaded?"
grep -Eq "$STATS_RE" <<<"$line" || fail "malformed stats line: $line"
bcast=$(stat_field "$line" bcast_mcast)
barrier=$(stat_field "$line" barrier_mcast)
recv=$(stat_field "$line" dgrams_recv)
delta=$((after - before))
note "rank 0 made $want_bcast broadcasts and $want_barrier barriers; stats: bcast_mcast=$bcast barrier_mcast=$barrier dgrams_recv=$recv; Udp InDatagrams grew by $delta"
[ "$bcast" -ge "$want_bcast" ] || fail "bcast_mcast=$bcast < $want_bcast: broadcasts bypassed the multicast path"
[ "$barrier" -ge "$want_barrier" ] || fail "barrier_mcast=$barrier < $want_barrier: barriers bypassed the multicast path"
[ "$recv" -ge 1 ] || fail "rank 0 received no datagram"
[ "$delta" -ge "$recv" ] || fail "Udp InDatagrams grew by $delta, less than dgrams_recv=$recv"
echo "foreign_program ($TC_FOREIGN): ok"
