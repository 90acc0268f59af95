#!/usr/bin/env bash
# Measures what the orchestration costs during a soak: the CPU of the
# embedded Temporal server + worker beyond the load driver (requirement:
# < 5 % of one core). The same scenario is driven by
#   A: longhaul drive (the driver alone), and
#   B: longhaul run   (driver + embedded server + worker + store, one process),
# in interleaved rounds (A B, B A, ...) so machine drift hits both. Each
# process's CPU (utime+stime from /proc/PID/stat) is sampled at SKIP seconds
# and SKIP+SPAN seconds into the drive, so start-up and shutdown are excluded.
#
# Usage: bench/overhead/run.sh [ROUNDS] [WINDOW]   (defaults 3, 1s: the most
# windows per second, the worst case for orchestration)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-3}"
win="${2:-1s}"
skip=15 span=40 duration=70s
out="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$out"' EXIT

go build -o "$out/longhaul" ./cmd/longhaul
go build -o "$out/target" ./cmd/longhaul/testdata/soaktarget
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$out/target" -addr "127.0.0.1:$port" &
sleep 0.5
# A fixed arrival rate keeps the driver's own CPU steady, so the difference
# between A and B is the orchestration, not load variance.
cat >"$out/s.yaml" <<YAML
name: overhead
load: {rate: 300, max_vus: 20, duration: $duration, window: $win}
environment:
  target: {url: "http://127.0.0.1:$port"}
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /items}
YAML
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{print ($14+$15)/t}' "/proc/$1/stat"; }

# measure MODE ROUND: prints the process's CPU cores used over the span.
measure() {
  local mode=$1 data="$out/data-$1-$2"
  if [ "$mode" = drive ]; then
    "$out/longhaul" drive --scenario "$out/s.yaml" --data "$data" >/dev/null 2>&1 &
  else
    "$out/longhaul" run "$out/s.yaml" --data "$data" >/dev/null 2>&1 &
  fi
  local pid=$!
  # the run mode needs its server up first: wait for the first window
  for _ in $(seq 1 600); do
    if [ -s "$data/longhaul.db" ] && sqlite3 "$data/longhaul.db" 'select count(*) from windows' 2>/dev/null | grep -qv '^0$'; then break; fi
    sleep 0.1
  done
  sleep "$skip"
  local c0 c1
  c0=$(cpu $pid); sleep "$span"; c1=$(cpu $pid)
  wait $pid || true
  awk -v a="$c0" -v b="$c1" -v s="$span" 'BEGIN{printf "%.4f\n", (b-a)/s}'
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -n) $(nproc) cores; rate 300/s, window $win, span ${span}s after ${skip}s"
printf "%-6s %-6s %s\n" round mode cores
declare -a A B
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then order="drive run"; else order="run drive"; fi
  for m in $order; do
    c=$(measure "$m" "$r")
    printf "%-6s %-6s %s\n" "$r" "$m" "$c"
    if [ "$m" = drive ]; then A+=("$c"); else B+=("$c"); fi
  done
done
python3 - "${A[*]}" "${B[*]}" <<'PY'
import sys, statistics as st
a=[float(x) for x in sys.argv[1].split()]; b=[float(x) for x in sys.argv[2].split()]
d=[y-x for x,y in zip(a,b)]
print(f"drive alone : median {st.median(a)*100:.2f} % of a core")
print(f"run (all-in): median {st.median(b)*100:.2f} % of a core")
print(f"orchestration overhead per round: {', '.join(f'{x*100:+.2f}' for x in d)} % of a core; median {st.median(d)*100:+.2f} %")
PY
