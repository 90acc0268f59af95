#!/usr/bin/env bash
# cost.sh measures what probes.profile costs the target: soaks of the demo
# target (local provider, SQLite, bench/compare's request mix, 8 VUs) with
# profiles off and on, interleaved in ABBA order (off on, on off, off on …)
# so that machine drift hits both, and compares the target's CPU per
# request (its process's CPU time over its requests, warm-up excluded, as
# `longhaul run` reports it).
#
# The profiles are the defaults of probes.profile (a 5 s CPU profile every
# 5 windows, a heap profile with a forced GC every 10), at WINDOW (default
# 5s): a CPU profile samples 5 s of every 25 s, twice the share of the
# default 10 s windows, so the cost measured is an upper bound of the
# default's.
#
#   bench/profiles/cost.sh                  # 3 pairs of 60 s soaks
#   PAIRS=5 DURATION=120s bench/profiles/cost.sh
#
# Writes bench/profiles/RESULTS.md. Needs: go.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo_root"
PAIRS=${PAIRS:-3}
DURATION=${DURATION:-60s}
WINDOW=${WINDOW:-5s}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log() { printf '%s profiles-cost: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# shellcheck source=bench/build.sh
source bench/build.sh

# off.yaml is bench/compare/demo-local.yaml; on.yaml adds probes.profile.
sed -e "s|DEMO_TARGET_BIN|$demo|" -e "s|duration: 10s.*|duration: $DURATION|" -e "s|window: 1s|window: $WINDOW|" \
	-e "s|warmup: 2s.*|warmup: 10s|" bench/compare/demo-local.yaml > "$work/off.yaml"
{ cat "$work/off.yaml"; printf '  profile: {pprof: /debug/pprof}\n'; } > "$work/on.yaml"

# soak MODE: one soak; prints its CPU µs per request (warm-up excluded) and
# how many CPU and heap profiles it stored.
soak() {
	local mode=$1 out="$work/$1.json"
	"$lh" run "$work/$mode.yaml" --format json --ui-addr off --data "$work/data" > "$out" 2> "$work/err.txt" || {
		log "soak $mode failed: $(tail -n 3 "$work/err.txt")"
		return 1
	}
	local id
	id=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["run_id"])' "$out")
	"$lh" export "$id" --format json --data "$work/data" > "$work/$mode-windows.json" 2>/dev/null || true
	python3 - "$work/$mode-windows.json" "$out" <<'PY'
import json, sys
# The run's windows after the warm-up (10 s): CPU seconds over requests.
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ws = [l for l in lines if isinstance(l, dict) and l.get("index") is not None]
if not ws:
    # no export: the report's summary (warm-up included)
    rep = json.loads(open(sys.argv[2]).read().splitlines()[-1])
    print("%.2f" % rep["summary"]["cpu_us_per_request"])
    sys.exit()
t0 = min(w["start"] for w in ws)
import datetime
def ts(s): return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
cpu = req = 0.0
for w in ws:
    if (ts(w["start"]) - ts(t0)).total_seconds() < 10 or w.get("gap"):
        continue
    p = w.get("probes") or {}
    if p.get("cpu_seconds") is None:
        continue
    cpu += p["cpu_seconds"]; req += w["requests"]
print("%.2f" % (cpu * 1e6 / req))
PY
}

declare -a offs ons
for ((i = 0; i < PAIRS; i++)); do
	if ((i % 2 == 0)); then order="off on"; else order="on off"; fi
	for mode in $order; do
		log "pair $((i + 1)): $mode"
		v=$(soak "$mode")
		log "pair $((i + 1)): $mode: $v µs/request"
		if [[ $mode == off ]]; then offs+=("$v"); else ons+=("$v"); fi
	done
done

python3 - "$PAIRS" "$DURATION" "$WINDOW" "$(nproc)" "$(cat /proc/loadavg)" "${offs[*]}" "${ons[*]}" > bench/profiles/RESULTS.md <<'PY'
import math, sys, datetime
pairs, duration, window, cores, load = sys.argv[1:6]
offs = [float(x) for x in sys.argv[6].split()]
ons = [float(x) for x in sys.argv[7].split()]
ratios = [b / a for a, b in zip(offs, ons)]
gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
print("# probes.profile: its cost on the target's CPU per request")
print()
print(f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC by `bench/profiles/cost.sh` on a {cores}-core machine")
print(f"shared with other work (load average at the end: {load.split()[0]}).")
print()
print(f"The demo target (local provider, SQLite, 8 closed-loop VUs) in {pairs} pairs of {duration}")
print(f"soaks in {window} windows, profiles off and on (the defaults: a 5 s CPU profile every 5")
print("windows, a heap profile after a forced GC every 10), interleaved off/on, on/off, …;")
print("CPU per request is the target process's CPU time over its requests after a 10 s warm-up.")
print()
print("| pair | off µs/request | on µs/request | on/off |")
print("|---|---|---|---|")
for i, (a, b) in enumerate(zip(offs, ons)):
    print(f"| {i+1} | {a:.1f} | {b:.1f} | {b/a:.3f} |")
print()
print(f"Geometric mean of on/off: **{gm:.3f}** ({(gm-1)*100:+.1f} %); pairs from {min(ratios):.3f} to {max(ratios):.3f}.")
print()
print("A CPU profile runs 5 s of every 5 × window: at 5 s windows that is 20 % of the time, twice")
print("the share of the default 10 s windows. The pairs' spread is the machine's noise: a cost")
print("smaller than it cannot be told from zero with this many pairs (PAIRS=10 narrows it).")
PY
log "wrote bench/profiles/RESULTS.md"
cat bench/profiles/RESULTS.md
