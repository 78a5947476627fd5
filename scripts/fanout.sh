#!/usr/bin/env bash
# Fan-out detection (MPICAST_FANOUT=on, docs/fanout.md), preloaded, with rank 0's stats line:
#   TC_PART=ctest   int_fanout (4 ranks): every byte checked by the program, and the stats say
#                   that groups of held MPI_Isends went as dynamic broadcasts;
#   TC_PART=starpu  StarPU's own mpi_cholesky from Debian's starpu-examples (a program nobody
#                   here wrote, linked against Open MPI): -check must pass, and a share of the
#                   tile bytes must have gone by dynamic broadcast. Skipped when StarPU is not
#                   installed (make deps-system installs it) or the flavour is not Open MPI.
source "$(dirname "$0")/test-lib.sh"

NP=${TC_NP:-4}
out=$TC_WORK/job.out

# share LINE: the percentage of the bytes sent on fan-out communicators that went by broadcast.
share() {
  local b p
  b=$(stat_field "$1" fanout_bcast_bytes)
  p=$(stat_field "$1" fanout_p2p_bytes)
  echo $((100 * b / (b + p > 0 ? b + p : 1)))
}

case "${TC_PART:-ctest}" in
ctest)
  launch "$NP" preload
  MPICAST_FANOUT=on MPICAST_STATS=1 timeout -k 10 150 \
    "${LAUNCH[@]}" "$TC_BINDIR/int_fanout" --rounds 20 >"$out" 2>&1 \
    || { cat "$out"; fail "int_fanout failed"; }
  cat "$out"
  grep -q "int_fanout: ok" "$out" || fail "no 'int_fanout: ok' line"
  line=$(stats_line "$out")
  grep -Eq "$STATS_RE" <<<"$line" || fail "malformed stats line: $line"
  groups=$(stat_field "$line" fanout_groups)
  held=$(stat_field "$line" fanout_held)
  note "rank 0: fanout_held=$held fanout_groups=$groups, $(share "$line") % of the bytes by broadcast"
  [ "$groups" -ge 1 ] || fail "fanout_groups=$groups: no fan-out went as a dynamic broadcast"
  [ "$held" -gt "$groups" ] || fail "fanout_held=$held is not above fanout_groups=$groups"
  echo "fanout: ok"
  ;;
starpu)
  [ "$TC_FLAVOUR" = openmpi ] || skip "Debian's StarPU examples are linked against Open MPI"
  bin=$(dpkg -L starpu-examples 2>/dev/null | grep '/starpu/mpi/mpi_cholesky$' | head -n 1 || true)
  [ -n "$bin" ] && [ -x "$bin" ] \
    || skip "StarPU's mpi_cholesky is not installed (apt-get install starpu-examples, or make deps-system)"
  launch "$NP" preload
  # StarPU calibrates its bus model once per machine and keeps it in STARPU_HOME: a home of
  # each rank's own under $TC_WORK, since ranks that calibrate into one home at once read
  # each other's half-written files (StarPU's assertion in check_bus_affinity_file).
  STARPU_NCPU=1 STARPU_SILENT=1 MPICAST_FANOUT=on MPICAST_STATS=1 \
    timeout -k 10 300 "${LAUNCH[@]}" /bin/sh -c \
    'STARPU_HOME="$0/home$OMPI_COMM_WORLD_RANK" exec "$@"' "$TC_WORK" \
    "$bin" -size 1920 -nblocks 12 -check >"$out" 2>&1 \
    || { cat "$out"; fail "mpi_cholesky -check failed under MPICAST_FANOUT=on"; }
  cat "$out"
  ! grep -q "Error\[" "$out" || fail "mpi_cholesky's check found wrong values"
  grep -q "Computation time" "$out" || fail "mpi_cholesky did not finish"
  line=$(stats_line "$out")
  grep -Eq "$STATS_RE" <<<"$line" || fail "malformed stats line: $line"
  groups=$(stat_field "$line" fanout_groups)
  pct=$(share "$line")
  note "rank 0: fanout_groups=$groups, $pct % of the tile bytes it sent went by dynamic broadcast"
  [ "$(stat_field "$line" fanout_bcast_bytes)" -gt 0 ] || fail "no byte went by dynamic broadcast"
  echo "fanout_starpu: ok"
  ;;
*) fail "TC_PART=$TC_PART: ctest or starpu" ;;
esac
