#!/usr/bin/env bash
# aa-alloc.sh checks issue 22's A-vs-A bar for allocations and GC: RUNS
# (default 5) A-vs-A comparisons of the demo target — the same build on both
# sides — must give no alloc_bytes_per_request or gc_per_1k_requests verdict
# other than no_difference or inconclusive.
#
# Each comparison is bench/compare/run.sh's aa-local: `longhaul compare` of
# bench/compare/demo-local.yaml (local provider, SQLite, 8 closed-loop VUs,
# the heap metric probe, which reads the Go runtime's allocation and GC
# counters), PAIRS (3) pairs of ROUND (20 s) rounds in 1 s windows, 2 s
# warm-up, ABBA order. Every round is judged (DISTURBED=off: on a machine
# shared with other sessions nearly every round is "disturbed", and leaving
# them out would make every verdict inconclusive, which passes the bar for
# the wrong reason); DISTURBED=0.25 RERUN=1 leaves out and reruns rounds
# whose foreign load was above a quarter of the host.
#
#   bench/profiles/aa-alloc.sh
#   RUNS=2 ROUND=10s bench/profiles/aa-alloc.sh      # a rehearsal
#
# Writes bench/profiles/RESULTS-aa-alloc.md. Needs: go, python3.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo_root"
RUNS=${RUNS:-5}
ROUND=${ROUND:-20s}
PAIRS=${PAIRS:-3}
DISTURBED=${DISTURBED:-off}
RERUN=${RERUN:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log() { printf '%s aa-alloc: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# shellcheck source=bench/build.sh
source bench/build.sh
sed "s|DEMO_TARGET_BIN|$demo|" bench/compare/demo-local.yaml > "$work/demo-local.yaml"

started=$(date -u '+%Y-%m-%d %H:%M')
load0=$(cat /proc/loadavg)
for i in $(seq 1 "$RUNS"); do
	t=$SECONDS
	code=0
	args=(--pairs "$PAIRS" --round-duration "$ROUND" --window 1s --warmup 2s --disturbed-above "$DISTURBED"
		--format json --ui-addr off --data "$work/data")
	[[ -z "$RERUN" ]] || args+=(--rerun-disturbed)
	"$lh" compare "$work/demo-local.yaml" "${args[@]}" > "$work/out-$i.ndjson" 2> "$work/err-$i.txt" || code=$?
	tail -n 1 "$work/out-$i.ndjson" > "$work/aa-$i.json"
	echo "$code $(cut -d' ' -f1 /proc/loadavg)" > "$work/aa-$i.meta"
	log "A vs A #$i: exit $code in $((SECONDS - t)) s"
	[[ -s "$work/aa-$i.json" ]] || tail -n 5 "$work/err-$i.txt" >&2
done
load1=$(cat /proc/loadavg)

python3 - "$work" "$RUNS" "$PAIRS" "$ROUND" "$started" "$(nproc)" "$load0" "$load1" "$DISTURBED" > bench/profiles/RESULTS-aa-alloc.md <<'PY'
import json, os, sys
work, runs, pairs, rnd, started, cores, load0, load1, disturbed = sys.argv[1:10]
runs = int(runs)
watched = ("alloc_bytes_per_request", "gc_per_1k_requests")
print("# A vs A: allocations and GC per request")
print()
print(f"Measured {started} UTC by `bench/profiles/aa-alloc.sh` on a {cores}-core machine shared")
print(f"with other work (load average {load0.split()[0]} at the start, {load1.split()[0]} at the end).")
print()
print(f"{runs} A-vs-A comparisons of the demo target (the same build on both sides; local provider,")
print(f"SQLite, 8 closed-loop VUs, bench/compare's request mix), {pairs} pairs of {rnd} rounds in 1 s")
print(f"windows, 2 s warm-up, ABBA order, --disturbed-above {disturbed}. The bar: no `alloc_bytes_per_request` or")
print("`gc_per_1k_requests` verdict other than `no_difference` or `inconclusive`.")
print()
print("| # | exit | load | alloc_bytes_per_request | gc_per_1k_requests | any better/worse verdict |")
print("|---|---|---|---|---|---|")
ok = 0
for i in range(1, runs + 1):
    code, load = open(os.path.join(work, f"aa-{i}.meta")).read().split()
    try:
        c = json.loads(open(os.path.join(work, f"aa-{i}.json")).read())
    except (ValueError, OSError):
        print(f"| {i} | {code} | {load} | (no output) | | |")
        continue
    vs = {v["metric"]: v for v in c.get("verdicts") or []}
    cells = []
    good = True
    for m in watched:
        v = vs.get(m)
        if v is None:
            cells.append("(none)")
            good = False
            continue
        ratio = v.get("ratio") or 0
        ci = v.get("ci") or [0, 0]
        cell = f"{v['outcome']} ×{ratio:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"
        if v.get("reason"):
            cell += f" ({v['reason']})"
        cells.append(cell)
        good = good and v["outcome"] in ("no_difference", "inconclusive")
    others = ", ".join(f"{m} {v['outcome']}" for m, v in vs.items() if v["outcome"] in ("better", "worse")) or "none"
    ok += good
    print(f"| {i} | {code} | {load} | {cells[0]} | {cells[1]} | {others} |")
print()
print(f"**{ok}/{runs}** comparisons with no allocation or GC verdict other than no_difference/inconclusive.")
PY
log "wrote bench/profiles/RESULTS-aa-alloc.md"
cat bench/profiles/RESULTS-aa-alloc.md
