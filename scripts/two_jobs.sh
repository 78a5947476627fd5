#!/usr/bin/env bash
# Two jobs at once on the same multicast group and port, each broadcasting
# for a few seconds so that they overlap: each must complete with correct data
# (the programs check every byte), whatever the other one sends. The library may reject the foreign datagrams (reported) or move to
# another group; either way both jobs must pass.
source "$(dirname "$0")/test-lib.sh"

NP=4
SECS=${TC_SECONDS:-3}
export MPICAST_GROUP=239.255.77.7/32 MPICAST_PORT=23777 MPICAST_STATS=1
unset TC_EXPECT
launch "$NP" preload
pids=()
for job in a b; do
  seed=$([ "$job" = a ] && echo 11 || echo 22)
  timeout -k 10 150 "${LAUNCH[@]}" "$TC_BINDIR/int_stress" \
    --count 100000000 --seconds "$SECS" --seed "$seed" --max-size 262144 --barrier-every 25 \
    >"$TC_WORK/$job.out" 2>&1 &
  pids+=($!)
done
rc=0
for i in 0 1; do
  job=$([ "$i" = 0 ] && echo a || echo b)
  if wait "${pids[$i]}"; then
    note "job $job: ok"
  else
    rc=1
    note "job $job: FAILED (exit $?)"
  fi
done
for job in a b; do
  echo "---- job $job"
  cat "$TC_WORK/$job.out"
done
[ "$rc" = 0 ] || fail "a job sharing the group and port failed"
for job in a b; do
  line=$(stats_line "$TC_WORK/$job.out")
  [ -n "$line" ] || fail "job $job printed no stats line"
  note "job $job: rejected=$(stat_field "$line" rejected) bcast_mcast=$(stat_field "$line" bcast_mcast) fallbacks=$(stat_field "$line" fallbacks)"
done
echo "two_jobs: ok"
