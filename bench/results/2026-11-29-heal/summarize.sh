#!/usr/bin/env bash
# summarize.sh WORKDIR...: one line per case of scripts/heal.sh's outputs in each WORKDIR
# (NAME.out with wall-clock stamps, NAME.on, NAME.off): time to heal (rule on -> rank 0's
# message that the communicator moved), operations per second of int_heal before the rule
# and after the message (whole seconds of the program), the slowest operation, and for
# restore the time from the rule going to the return.
set -euo pipefail
printf '%-8s %-8s %10s %12s %12s %10s %10s\n' mpi case heal_ms ops/s_before ops/s_after slowest_ms back_ms
for dir in "$@"; do
  mpi=$(basename "$dir")
  for out in "$dir"/*.out; do
    name=$(basename "$out" .out)
    on=$(cat "$dir/$name.on")
    msg=$(grep -m1 -E 'stopped reaching' "$out" | cut -d' ' -f1 || true)
    heal=-
    [ -z "$msg" ] || heal=$(awk -v a="$msg" -v b="$on" 'BEGIN { printf "%d", (a - b) * 1000 }')
    after=${msg:-$on}
    read -r before aft < <(awk -v on="$on" -v after="$after" '
      $2 == "second" { n = $4; t = $1
        if (t < on) { b += n; nb++ } else if (t > after + 1) { a += n; na++ } }
      END { printf "%d %d\n", nb ? b / nb : 0, na ? a / na : 0 }' "$out")
    slow=$(grep -m1 ' done: ' "$out" | sed -n 's/.*slowest \([0-9.]*\) ms.*/\1/p')
    back=-
    if [ -f "$dir/$name.off" ]; then
      off=$(cut -d' ' -f1 "$dir/$name.off")
      ret=$(grep -m1 'reaches every rank again' "$out" | cut -d' ' -f1 || true)
      [ -z "$ret" ] || back=$(awk -v a="$ret" -v b="$off" 'BEGIN { printf "%d", (a - b) * 1000 }')
    fi
    printf '%-8s %-8s %10s %12s %12s %10s %10s\n' "$mpi" "$name" "$heal" "$before" "$aft" "$slow" "$back"
  done
done
