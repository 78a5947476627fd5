#!/usr/bin/env bash
# Getting started as the docs say, for one flavour:
# 1. the compile lines of the README's "Linking instead" for a build tree (-I, -L and -rpath,
#    and pkg-config with build/<flavour>/lib/pkgconfig), taken from README.md itself, build
#    the example of docs/imcast.md; each binary needs libmpicast before the MPI library, runs
#    without LD_LIBRARY_PATH, and rank 0's stats line counts its MPICAST_Imcast;
# 2. linked the wrong way round (-lmpi -lmpicast, the compiler's default flags): a program
#    that calls an extension loads libmpicast and gets the one warning; one that calls none
#    loses libmpicast to --as-needed (what the README warns of, where the toolchain does it);
# 3. a one-host run with the defaults (MPICAST_TOPO=auto, MPICAST_MIN_BYTES=auto): the stats
#    line ends with why nothing went by multicast, and MPICAST_VERBOSE=1 says it at the start.
source "$(dirname "$0")/test-lib.sh"
: "${MPI_C_COMPILER:?}"

W=$TC_WORK
case "$TC_FLAVOUR" in
  openmpi) mpilib=-lmpi ;;
  mpich) mpilib=-lmpich ;;
esac
# A source tree of our own whose build/<flavour> is the one under test, so that the README's
# relative paths and $PWD mean what they mean at the top of the source tree.
top=$W/top
mkdir -p "$top/build"
ln -s "$TC_BUILD" "$top/build/$TC_FLAVOUR"
[ -e "$TC_BUILD/lib/pkgconfig/mpicast.pc" ] \
  || fail "$TC_BUILD/lib/pkgconfig/mpicast.pc missing: run make lib"

awk '/^## One complete example/ {f = 1} f && /^```c/ {p = 1; next} p && /^```/ {exit} p' \
  "$T_TOP/docs/imcast.md" >"$top/app.c"
grep -q MPICAST_Imcast "$top/app.c" || fail "no example with MPICAST_Imcast in docs/imcast.md"

# The first sh block of "### Linking instead", continuation lines joined, comments dropped,
# run in order in one shell (it exports PKG_CONFIG_PATH); written for Open MPI (the README
# says: MPICH, mpicc.mpich and build/mpich). Each `-o app` becomes app1, app2, ...
script=$(awk '/^### Linking instead/ {f = 1} f && /^```sh/ {p = 1; next}
  p && /^```/ {exit}
  p && !/^#/ { if (sub(/\\$/, "")) { acc = acc $0; next } print acc $0; acc = "" }' \
  "$T_TOP/README.md")
script=${script//openmpi/$TC_FLAVOUR}
script=${script//mpicc.$TC_FLAVOUR/$MPI_C_COMPILER}
n=0
numbered=""
while IFS= read -r line; do
  case "$line" in *"-o app"*) n=$((n + 1)); line=${line/-o app/-o app$n} ;; esac
  numbered+="$line"$'\n'
done <<<"$script"
[ "$n" = 2 ] || fail "expected 2 build-tree compile lines in the README, found $n: $script"
note "the README's build-tree lines, for $TC_FLAVOUR:"
sed 's/^/   | /' <<<"$numbered"
(cd "$top" && unset LD_LIBRARY_PATH PKG_CONFIG_PATH && set -x && eval "$numbered") \
  || fail "the README's build-tree lines do not compile"
for i in 1 2; do
  order=$(readelf -d "$top/app$i" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -E '^lib(mpicast|mpi|mpich)\.' || true)
  note "app$i NEEDED: $(tr '\n' ' ' <<<"$order")"
  [ "$(head -n 1 <<<"$order")" = libmpicast.so.0 ] || fail "app$i: libmpicast.so.0 must come first"
  launch 3 linked
  (unset LD_LIBRARY_PATH; MPICAST_STATS=1 timeout -k 10 60 "${LAUNCH[@]}" "$top/app$i") \
    >"$W/app$i.out" 2>&1 || { cat "$W/app$i.out"; fail "app$i failed"; }
  [ "$(grep -c '^rank [0-2] got ' "$W/app$i.out")" = 3 ] || { cat "$W/app$i.out"; fail "app$i: not every rank received"; }
  line0=$(stats_line "$W/app$i.out")
  [ "$(stat_field "$line0" imcast)" = 1 ] || fail "app$i: rank 0's stats line does not count its MPICAST_Imcast: $line0"
done
note "both build-tree lines of the README work; stats: $line0"

# 2. The wrong order, with this toolchain's default flags.
cat >"$W/plain.c" <<'EOF'
#include <mpi.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int x = 0;
  MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
EOF
lib=$TC_BUILD/lib
"$MPI_C_COMPILER" "$top/app.c" -o "$W/wrong_ext" -I"$TC_BUILD/include" $mpilib -L"$lib" -lmpicast -Wl,-rpath,"$lib"
"$MPI_C_COMPILER" "$W/plain.c" -o "$W/wrong_plain" $mpilib -L"$lib" -lmpicast -Wl,-rpath,"$lib"
launch 3 linked
timeout -k 10 60 "${LAUNCH[@]}" "$W/wrong_ext" >"$W/wrong_ext.out" 2>&1 || { cat "$W/wrong_ext.out"; fail "wrong_ext failed"; }
n=$(grep -c "this program's MPI_Bcast is the MPI library's" "$W/wrong_ext.out" || true)
[ "$n" = 1 ] || { cat "$W/wrong_ext.out"; fail "-lmpi -lmpicast with an extension call: $n link-order warnings, want 1"; }
if readelf -d "$W/wrong_plain" | grep -q 'libmpicast'; then
  note "this toolchain keeps libmpicast linked after the MPI library (no --as-needed)"
else
  note "-lmpi -lmpicast without extension calls: --as-needed dropped libmpicast (as the README says)"
fi

# 3. One host, the defaults: small broadcasts only (no communicator is set up), then with a
# barrier (the setup finds one host).
cat >"$W/small.c" <<'EOF'
#include <mpi.h>
#include <string.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  char buf[100];
  memset(buf, 0, sizeof buf);
  for (int i = 0; i < 3; i++) MPI_Bcast(buf, 100, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (argc > 1) MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
EOF
"$MPI_C_COMPILER" "$W/small.c" -o "$W/small" -I"$TC_BUILD/include" -L"$lib" -lmpicast -Wl,-rpath,"$lib"
launch 4 linked
for arg in "" barrier; do
  out=$W/defaults${arg:+_$arg}.out
  timeout -k 10 60 "${LAUNCH[@]}" env MPICAST_TOPO=auto MPICAST_MIN_BYTES=auto MPICAST_STATS=1 \
    MPICAST_VERBOSE=1 "$W/small" $arg >"$out" 2>&1 || { cat "$out"; fail "the one-host run failed"; }
  sed 's/^/   | /' "$out"
  line0=$(stats_line "$out")
  grep -q '; nothing went by multicast: all ranks run on one host, .*MPICAST_TOPO=flat MPICAST_MIN_BYTES=0' <<<"$line0" \
    || fail "the stats line of a one-host run${arg:+ with a barrier} does not say why nothing went by multicast: $line0"
  n=$(grep -c '^mpicast: all 4 ranks of this job run on one host' "$out" || true)
  [ "$n" = 1 ] || fail "MPICAST_VERBOSE=1 said $n times (want once) that the job runs on one host"
done
echo "getting_started: ok"
