#!/usr/bin/env bash
# A job with MPICAST_STATS=1: rank 0's stats line at MPI_Finalize must be
# well formed and show the broadcasts on the multicast path (the program
# itself checks the summed MPICAST_Get_stats with TC_EXPECT=mcast), and the kernel's
# Udp InDatagrams must grow by at least the datagrams the library says it
# received, and by at least what the payload needs (so the counters are real
# UDP traffic, not bookkeeping).
source "$(dirname "$0")/test-lib.sh"

NP=4
SIZE=1048576
ITERS=2
BCASTS=$((NP * ITERS))              # int_bcast covers every root each round
MAXDGRAM=65507                      # the largest UDP payload over IPv4
MIN_DGRAMS=$((BCASTS * (NP - 1) * ((SIZE + MAXDGRAM - 1) / MAXDGRAM)))

launch "$NP" preload
out=$TC_WORK/job.out
before=$(udp_in_datagrams)
MPICAST_STATS=1 TC_EXPECT=mcast timeout -k 10 120 \
  "${LAUNCH[@]}" "$TC_BINDIR/int_bcast" --sizes "$SIZE" --iters "$ITERS" --barrier \
  >"$out" 2>&1 || { cat "$out"; fail "the job failed"; }
after=$(udp_in_datagrams)
cat "$out"

line=$(stats_line "$out")
[ -n "$line" ] || fail "no 'mpicast: stats:' line in the output"
# Rank 0 prints its own counters (summing over ranks at finalize could hang when
# a rank never used mpicast). Rank 0 is in every broadcast, roots its own share,
# and receives the others'.
grep -Eq "$STATS_RE" <<<"$line" || fail "malformed stats line: $line"
scope="rank 0"
want_bcast=$BCASTS
want_bytes=$((ITERS * SIZE))
want_recv=$((ITERS * (NP - 1) * ((SIZE + MAXDGRAM - 1) / MAXDGRAM)))
bcast=$(stat_field "$line" bcast_mcast)
barrier=$(stat_field "$line" barrier_mcast)
bytes=$(stat_field "$line" bytes_mcast)
recv=$(stat_field "$line" dgrams_recv)
sent=$(stat_field "$line" dgrams_sent)
delta=$((after - before))
note "stats ($scope): bcast_mcast=$bcast barrier_mcast=$barrier bytes_mcast=$bytes dgrams_sent=$sent dgrams_recv=$recv"
note "Udp InDatagrams grew by $delta; the payload needs at least $MIN_DGRAMS over all ranks"

[ "$bcast" -ge "$want_bcast" ] || fail "bcast_mcast=$bcast, want at least $want_bcast (every broadcast multicast)"
[ "$barrier" -ge 1 ] || fail "barrier_mcast=$barrier, want at least 1"
[ "$bytes" -ge "$want_bytes" ] || fail "bytes_mcast=$bytes, want at least $want_bytes"
[ "$sent" -ge 1 ] || fail "dgrams_sent=$sent"
[ "$recv" -ge "$want_recv" ] || fail "dgrams_recv=$recv, below the $want_recv the payload needs"
[ "$delta" -ge "$recv" ] || fail "Udp InDatagrams grew by $delta, less than dgrams_recv=$recv"
[ "$delta" -ge "$MIN_DGRAMS" ] || fail "Udp InDatagrams grew by $delta, less than the $MIN_DGRAMS the payload needs"
echo "stats_snmp: ok"
