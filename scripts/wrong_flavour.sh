#!/usr/bin/env bash
# A libmpicast built for the other MPI flavour, preloaded under this flavour's
# program, must stop the job with a message naming both flavours and the
# library to use, not crash or hang. Needs both flavours built.
. "$(dirname "$0")/test-lib.sh"
case "$TC_FLAVOUR" in
  openmpi) other=mpich; running="Open MPI"; built="MPICH" ;;
  mpich) other=openmpi; running="MPICH"; built="Open MPI" ;;
esac
other_lib="$TC_BUILD/../$other/lib/libmpicast.so"
[ -e "$other_lib" ] || skip "no $other build at $other_lib"
out="$TC_WORK/out.txt"
launch 2 plain
if [ "$TC_FLAVOUR" = openmpi ]; then
  LAUNCH+=(-x "LD_PRELOAD=$other_lib")
else
  LAUNCH+=(-genv LD_PRELOAD "$other_lib")
fi
set +e
timeout -k 5 60 "${LAUNCH[@]}" "$TC_BINDIR/int_bcast" --sizes 100000 --iters 1 >"$out" 2>&1
rc=$?
set -e
cat "$out"
[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || fail "the job hung (timeout)"
[ "$rc" -ne 0 ] || fail "the job succeeded under the wrong library"
grep -q "built for $built but the program runs under $running" "$out" \
  || fail "no message naming both flavours"
grep -q "build/$TC_FLAVOUR/lib/libmpicast.so" "$out" || fail "the message does not name the right library"
echo "wrong_flavour: ok (exit $rc)"
