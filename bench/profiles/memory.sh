#!/usr/bin/env bash
# memory.sh checks that longhaul's memory stays flat over a 30-minute soak
# with profiles on (issue 22's bar: the flat-memory figure — RSS growth after
# the first minute, goal < 5 MB — still holds with profiles on). It runs two
# `longhaul run` soaks of the demo target at the same time, profiles off and
# on (probes.profile's defaults: a 5 s CPU profile every 5 windows, a heap
# profile after a forced GC every 10), and samples each `longhaul run`
# process's RSS (VmRSS: driver, embedded Temporal server and worker, store,
# profiler) every 10 s.
#
# The soaks are bench/compare's demo-local scenario (local provider, SQLite,
# the parse-mix requests) at a fixed arrival rate (RATE, default 200 req/s,
# open model) rather than at full speed: memory, not speed, is measured, and
# the machine is shared.
#
#   bench/profiles/memory.sh                     # 30 min
#   DURATION=5m bench/profiles/memory.sh         # a rehearsal
#
# Writes bench/profiles/RESULTS-memory.md. Needs: go, python3.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo_root"
DURATION=${DURATION:-30m}
WINDOW=${WINDOW:-10s}
RATE=${RATE:-200}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log() { printf '%s profiles-memory: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# shellcheck source=bench/build.sh
source bench/build.sh

# off.yaml is bench/compare/demo-local.yaml at RATE req/s; on.yaml adds
# probes.profile.
sed -e "s|DEMO_TARGET_BIN|$demo|" -e "s|^  vus: 8$|  rate: $RATE\n  max_vus: 32|" -e "s|duration: 10s.*|duration: $DURATION|" \
	-e "s|window: 1s|window: $WINDOW|" -e "s|warmup: 2s.*|warmup: 20s|" bench/compare/demo-local.yaml > "$work/off.yaml"
{ cat "$work/off.yaml"; printf '  profile: {pprof: /debug/pprof}\n'; } > "$work/on.yaml"
grep -q "rate: $RATE" "$work/off.yaml" || { log "the scenario has no 'vus: 8' line to replace"; exit 1; }

load0=$(cat /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M')
declare -A pids
for mode in off on; do
	"$lh" run "$work/$mode.yaml" --format json --ui-addr off --data "$work/data-$mode" > "$work/$mode.ndjson" 2> "$work/$mode.err" &
	pids[$mode]=$!
	log "$mode: longhaul run pid ${pids[$mode]}"
done

# Sample VmRSS of both every 10 s while they run.
t0=$(date +%s)
while kill -0 "${pids[off]}" 2>/dev/null || kill -0 "${pids[on]}" 2>/dev/null; do
	now=$(($(date +%s) - t0))
	for mode in off on; do
		if rss=$(awk '/^VmRSS:/ {print $2}' "/proc/${pids[$mode]}/status" 2>/dev/null) && [[ -n $rss ]]; then
			echo "$now $rss" >> "$work/$mode.rss"
		fi
	done
	sleep 10
done
for mode in off on; do
	code=0
	wait "${pids[$mode]}" || code=$?
	log "$mode: exit $code"
	[[ $code == 0 ]] || tail -n 5 "$work/$mode.err" >&2
done
load1=$(cat /proc/loadavg)

# The profiles the on run stored, and the runs' windows.
for mode in off on; do
	id=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["run_id"])' "$work/$mode.ndjson")
	echo "$id" > "$work/$mode.id"
	"$lh" report "$id" --format json --data "$work/data-$mode" > "$work/$mode.report" 2>/dev/null || true
done
id_on=$(cat "$work/on.id")
"$lh" profile "$id_on" --kind cpu -o "$work/cpu.pb.gz" --data "$work/data-on" > "$work/profile.txt" 2>&1 || true

python3 - "$work" "$DURATION" "$WINDOW" "$RATE" "$started" "$(nproc)" "$load0" "$load1" > bench/profiles/RESULTS-memory.md <<'PY'
import json, os, sys
work, duration, window, rate, started, cores, load0, load1 = sys.argv[1:9]

def samples(mode):
    out = []
    for line in open(os.path.join(work, mode + ".rss")):
        t, kb = line.split()
        out.append((int(t), int(kb) * 1024))
    return out

def report(mode):
    windows = requests = 0
    for line in open(os.path.join(work, mode + ".report")):
        o = json.loads(line)
        if "type" not in o and "start" in o and not o.get("gap"):
            windows += 1
            requests += o.get("requests", 0)
    return windows, requests

mb = lambda b: b / 1e6
rows = []
for mode in ("off", "on"):
    ss = samples(mode)
    after1 = [s for s in ss if s[0] >= 60]
    base = after1[0]
    end = ss[-1]
    peak = max(s[1] for s in after1)
    w, r = report(mode)
    rows.append((mode, base, end, peak, w, r))

print("# probes.profile: longhaul's memory over a soak with profiles on")
print()
print(f"Measured {started} UTC by `bench/profiles/memory.sh` on a {cores}-core machine shared with")
print(f"other work (load average {load0.split()[0]} at the start, {load1.split()[0]} at the end).")
print()
print(f"Two `longhaul run` soaks of the demo target at the same time (local provider, SQLite,")
print(f"bench/compare's request mix at {rate} req/s, open model), {duration} in {window} windows:")
print("profiles off, and on with probes.profile's defaults (a 5 s CPU profile every 5 windows,")
print("a heap profile after a forced GC every 10). RSS is the `longhaul run` process's VmRSS")
print("(driver, embedded Temporal server and worker, store, profiler), sampled every 10 s.")
print()
print("| profiles | windows | requests | RSS at 1 min | at the end | growth after minute 1 | peak after minute 1 |")
print("|---|---|---|---|---|---|---|")
for mode, base, end, peak, w, r in rows:
    print(f"| {mode} | {w} | {r:,} | {mb(base[1]):.1f} MB | {mb(end[1]):.1f} MB ({end[0] // 60} min) | "
          f"**{mb(end[1] - base[1]):+.1f} MB** | {mb(peak):.1f} MB ({mb(peak - base[1]):+.1f}) |")
print()
print("RSS by minute (MB):")
print()
print("| minute | off | on |")
print("|---|---|---|")
s_off, s_on = samples("off"), samples("on")
def at(ss, t):
    best = min(ss, key=lambda s: abs(s[0] - t))
    return mb(best[1]) if abs(best[0] - t) <= 10 else float("nan")
last = max(s_off[-1][0], s_on[-1][0]) // 60
for m in [1, 2, 5, 10, 15, 20, 25, 30, 35, 40, 50, 60]:
    if m > last:
        break
    print(f"| {m} | {at(s_off, m * 60):.1f} | {at(s_on, m * 60):.1f} |")
prof = open(os.path.join(work, "profile.txt")).read().strip()
print()
print(f"`longhaul profile` of the on run: {prof.splitlines()[-1] if prof else '(no output)'}")
PY
log "wrote bench/profiles/RESULTS-memory.md"
cat bench/profiles/RESULTS-memory.md
