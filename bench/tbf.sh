# The rate limits of the emulated networks (bench/cluster.sh, bench/switched.sh), sourced by
# both: a RATE in tc's syntax, the token bucket, the tbf qdisc. The caller defines die().

# RATE (tc syntax) -> bytes per second.
rate_bytes() {
  local r=${1,,} num unit
  [[ "$r" =~ ^([0-9]+)(bit|kbit|mbit|gbit|bps|kbps|mbps|gbps)$ ]] || die "bad rate '$1' (e.g. 100mbit, 1gbit, 10gbit)"
  num=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]}
  case $unit in
    bit) echo $((num / 8)) ;; kbit) echo $((num * 1000 / 8)) ;;
    mbit) echo $((num * 1000000 / 8)) ;; gbit) echo $((num * 1000000000 / 8)) ;;
    bps) echo "$num" ;; kbps) echo $((num * 1000)) ;;
    mbps) echo $((num * 1000000)) ;; gbps) echo $((num * 1000000000)) ;;
  esac
}

# tbf on DEV (in the current namespace) at RATE with a bucket of BURST bytes; the default bucket
# (default_burst): one full frame (1538 bytes with Ethernet's overhead) plus 40 us of data, but at
# least 0.1 ms of data and at most 65000 bytes; and a queue of 50 ms of data on top of it (at
# least 1000 frames: a NIC's txqueuelen). Why that bucket: what fits in it leaves an idle link
# at memory speed, where a real link passes one frame at a time (a 1500 B frame takes 123 us at
# 100 Mbit/s). tbf cannot hold back the first frame (its bucket must take a whole frame), so
# the nearest it comes to a real link is a bucket of one frame; the 40 us on top are what a
# late timer may cost without costing the link its rate (a bucket of exactly one frame made a
# 1 MiB broadcast 16 % slower here: BENCHMARKS.md, "A link that passes one frame at a time").
# At 100 Mbit/s that is 2038 bytes; at 1 Gbit/s and above the 0.1 ms decide (12500 bytes;
# 10 Gbit/s: the 65000 cap, so that TCP's 64 KiB GSO packets are cut into frames and each is
# charged its Ethernet overhead).
default_burst() { # RATE -> bytes
  local bps burst
  bps=$(rate_bytes "$1")
  burst=$((1538 + bps * 40 / 1000000))
  [ "$burst" -ge $((bps / 10000)) ] || burst=$((bps / 10000))
  [ "$burst" -le 65000 ] || burst=65000
  echo "$burst"
}

# tbf_args RATE BURST: the qdisc `tc qdisc replace dev DEV root` takes: tbf at RATE with a
# bucket of BURST bytes and a queue of 50 ms of data on top (at least 1000 frames), Ethernet's
# 24 bytes of overhead per packet counted.
tbf_args() {
  local rate=$1 burst=$2 bps limit
  bps=$(rate_bytes "$rate")
  limit=$((burst + bps / 20))
  [ "$limit" -ge 1514000 ] || limit=1514000
  echo "tbf rate $rate burst $burst limit $limit overhead 24"
}
