#!/usr/bin/env bash
# summarize.sh [DIR...]: one line per run directory and case of scripts/heal_imcast.sh's
# stamped outputs (NAME.out, NAME.on, NAME.off): ms from the rule to the first and to the last
# root's message that it moved to point-to-point, ms from the rule to the end of rank 0's
# first slow operation after it (the first one repaired by unicast), ms from the rule's removal
# to the first return to IP multicast (restore), and whether the job said "all correct".
cd "$(dirname "$0")"
ms() { awk -v a="$1" -v o="$2" 'BEGIN { if (a == "") print "-"; else printf "%d", (a - o) * 1000 }'; }
for d in "${@:-openmpi-1 openmpi-2 mpich-1 mpich-2}"; do
  for d1 in $d; do
    for c in big all restore loss30; do
      [ -f "$d1/$c.out" ] || continue
      on=$(cat "$d1/$c.on")
      moved=$(grep "MPICAST_Imcast stopped reaching" "$d1/$c.out" | cut -d' ' -f1 || true)
      first=$(head -n 1 <<<"$moved"); last=$(tail -n 1 <<<"$moved")
      n=$(grep -c "MPICAST_Imcast stopped reaching" "$d1/$c.out" || true)
      slow=$(awk -v on="$on" '/ slow: / { for (i = 1; i <= NF; i++) if ($i ~ /^end=/) { e = substr($i, 5); if (e > on) { printf "%d", (e - on) * 1000; exit } } }' "$d1/$c.out")
      back=-
      if [ -f "$d1/$c.off" ]; then
        b=$(grep -m1 "again: back to IP" "$d1/$c.out" | cut -d' ' -f1 || true)
        back=$(ms "$b" "$(cut -d' ' -f1 "$d1/$c.off")")
      fi
      stats=$(grep -m1 "mpicast: stats:" "$d1/$c.out" | grep -o "repairs=[0-9]* \|unicast=[0-9]*\|heal_host=[0-9]*\|heal_return=[0-9]*" | tr -d ' ' | tr '\n' ' ')
      ok=$(grep -q "all correct" "$d1/$c.out" && echo right || echo WRONG)
      echo "$d1 $c first_root_ms=$(ms "$first" "$on") last_root_ms=$(ms "$last" "$on") roots=$n first_repaired_op_end_ms=${slow:--} back_ms=$back $stats data=$ok"
    done
  done
done
