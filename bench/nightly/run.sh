#!/usr/bin/env bash
# run.sh is the real half of issue 13's accuracy bar, through the CLI: a
# schedule firing every EVERY (default 30 s; a soak still running makes the
# next firing skip) soaks the demo target (local provider, SQLite, the
# comparison bench's scenario) for DURATION (default 20 s, 1 s windows); after
# BEFORE runs (default 5) `schedule update` adds --target-env
# DEMO_CPU_BURN_US=B, B = 30 % of the mean CPU µs per request of those runs;
# after AFTER more runs (default 5) the schedule is deleted and
# `longhaul history --format json` must report one change point on
# cpu_us_per_request, at run BEFORE+1, and none before it.
#
#   flock /tmp/longhaul-measure.lock bench/nightly/run.sh
#
# Writes bench/nightly/RESULTS.md and bench/nightly/history.json.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo_root"
EVERY=${EVERY:-30s}
DURATION=${DURATION:-20s}
BEFORE=${BEFORE:-5}
AFTER=${AFTER:-5}
PORT=${PORT:-17633}
out=bench/nightly
work=$(mktemp -d /tmp/longhaul-nightly-bench.XXXXXX)
log() { echo "$(date -u +%H:%M:%S) $*" >&2; }

go build -o "$work/longhaul" ./cmd/longhaul
(cd examples/demo-target && CGO_ENABLED=0 go build -trimpath -o "$work/demo-target" .)
sed "s|DEMO_TARGET_BIN|$work/demo-target|" bench/compare/demo-local.yaml > "$work/demo-local.yaml"
lh="$work/longhaul"
T=(--temporal "127.0.0.1:$PORT")

"$lh" dev --data "$work/data" --port "$PORT" --ui-addr off > "$work/dev.log" 2>&1 &
dev=$!
trap 'kill $dev 2>/dev/null; wait $dev 2>/dev/null || true' EXIT
for _ in $(seq 1 60); do grep -q "temporal dev server at" "$work/dev.log" && break; sleep 1; done
log "dev server up ($(head -1 "$work/dev.log"))"

# completed: how many runs of the schedule have completed.
completed() {
	"$lh" runs --schedule nightly-bench --status completed --format json --data "$work/data" | grep -c '"id"' || true
}
wait_runs() {
	local n=$1
	while (($(completed) < n)); do sleep 2; done
	log "$n runs completed"
}

start=$SECONDS
"$lh" schedule create nightly-bench --cron "@every $EVERY" "$work/demo-local.yaml" \
	--duration "$DURATION" --window 1s "${T[@]}" > "$work/create.txt"
wait_runs "$BEFORE"
base=$("$lh" history nightly-bench --format json --data "$work/data" | python3 -c '
import json, sys
h = json.load(sys.stdin)
v = [r["cpu_us_per_request"] for r in h["runs"] if not r["excluded"] and r["cpu_us_per_request"]]
print(f"{sum(v) / len(v):.1f}")')
burn=$(python3 -c "print(round(0.30 * $base))")
log "CPU per request over the first $BEFORE runs: $base µs; adding DEMO_CPU_BURN_US=$burn (+30 %)"
# A run that started before the update still runs without the burn: count
# the runs from the update on.
at_update=$("$lh" runs --schedule nightly-bench --format json --data "$work/data" | grep -c '"id"' || true)
"$lh" schedule update nightly-bench --target-env "DEMO_CPU_BURN_US=$burn" "${T[@]}" > "$work/update.txt"
wait_runs "$((at_update + AFTER))"
"$lh" schedule describe nightly-bench "${T[@]}" --format json > "$work/describe.json"
"$lh" schedule delete nightly-bench "${T[@]}" > /dev/null
sleep 1
"$lh" history nightly-bench --data "$work/data" > "$work/history.txt"
"$lh" history nightly-bench --format json --data "$work/data" > "$out/history.json"
elapsed=$((SECONDS - start))

python3 - "$out/history.json" "$work/describe.json" "$work/history.txt" "$base" "$burn" "$at_update" "$elapsed" "$EVERY" "$DURATION" > "$out/RESULTS.md" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
d = json.load(open(sys.argv[2]))
text = open(sys.argv[3]).read()
base, burn, at_update, elapsed, every, duration = sys.argv[4:10]
at_update = int(at_update)
cps = h["change_points"]
cpu = [c for c in cps if c["metric"] == "cpu_us_per_request"]
early = [c for c in cps if c["index"] < at_update]
ok = len(cpu) == 1 and cpu[0]["index"] == at_update and not early
print("# Nightly change points on real short soaks\n")
print(f"`bench/nightly/run.sh`: a schedule firing `@every {every}` (overlap skip) soaks the demo target")
print(f"(local provider, bench/compare/demo-local.yaml, 8 VUs) for {duration} in 1 s windows, 2 s warm-up;")
print(f"after the first runs, `schedule update --target-env DEMO_CPU_BURN_US={burn}` (30 % of their mean")
print(f"CPU per request, {base} µs); the update came after run {at_update}, so run {at_update + 1} is the first with the burn.")
print(f"Firings: {d['actions']} started, {d['skipped_overlap']} skipped because a soak was still going; {elapsed} s in all.\n")
print("```")
print(text.rstrip())
print("```\n")
print(f"Bar (issue 13): one change point on cpu_us_per_request at run {at_update + 1}, none on the clean part: **{'met' if ok else 'not met'}**.")
if len(cps) > len(cpu):
    print(f"Other metrics' points: " + ", ".join(f"{c['metric']} {100*c['change']:+.1f} % at run {c['index']+1}" for c in cps if c["metric"] != "cpu_us_per_request") +
          " (the burn costs latency and throughput too on a busy 2-core host).")
PY
log "wrote $out/RESULTS.md"
cat "$out/RESULTS.md"
