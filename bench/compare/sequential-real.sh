#!/usr/bin/env bash
# sequential-real.sh: the real bar of issue 28 — `longhaul compare --pairs
# auto` of the demo target on the local provider, each comparison on a
# fresh data directory (a fresh host: no earlier comparison to pool noise
# with), 1 s windows, 2 s warm-up, ABBA:
#
#   burn60  B with DEMO_CPU_BURN_US=60 (≈ +30 % CPU per request) → worse on cpu_us_per_request
#   burn14  B with DEMO_CPU_BURN_US=14 (+15 % of 3 December's 94 µs; +7 % of the ~200 µs of 5 December)
#   burn30  B with DEMO_CPU_BURN_US=30 (+15 % of the ~200 µs of 5 December) → worse (≥ 4 of 5)
#   aa      A vs A                                               → no metric better or worse
#
#   RUNS=1 EXPERIMENTS="burn60 aa" ROUND=10s bench/compare/sequential-real.sh
#   flock /tmp/longhaul-measure.lock bench/compare/sequential-real.sh     # 5 runs each
#
# Prints one line per comparison (pairs taken, why it stopped, CPU per
# request's verdict, interval and the pair it was decided after, any other
# metric called better or worse); the comparison objects stay in $OUT
# (default a temporary directory, removed unless KEEP=1).
# DISTURBED=off (default here) judges every round even on a host busy with
# other work; DISTURBED=0.25 leaves disturbed pairs out.
set -euo pipefail
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo_root"
RUNS=${RUNS:-5}
EXPERIMENTS=${EXPERIMENTS:-"burn60 burn30 burn14 aa"}
ROUND=${ROUND:-10s}
MAXPAIRS=${MAXPAIRS:-10}
DISTURBED=${DISTURBED:-off}
work=$(mktemp -d)
OUT=${OUT:-$work/out}
mkdir -p "$OUT"
[[ -n "${KEEP:-}" ]] || trap 'rm -rf "$work"' EXIT
log() { printf '%s sequential-real: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# shellcheck source=bench/build.sh
source bench/build.sh
sed "s|DEMO_TARGET_BIN|$demo|" bench/compare/demo-local.yaml > "$work/demo-local.yaml"

echo "# $(date -u +%Y-%m-%dT%H:%MZ) ROUND=$ROUND MAXPAIRS=$MAXPAIRS DISTURBED=$DISTURBED, load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
for exp in $EXPERIMENTS; do
	for i in $(seq 1 "$RUNS"); do
		args=()
		case $exp in
		burn60) args=(--b-env DEMO_CPU_BURN_US=60) ;;
		burn14) args=(--b-env DEMO_CPU_BURN_US=14) ;;
		burn30) args=(--b-env DEMO_CPU_BURN_US=30) ;;
		aa) ;;
		*) log "unknown experiment $exp"; exit 2 ;;
		esac
		start=$SECONDS code=0
		"$lh" compare "$work/demo-local.yaml" "${args[@]}" --pairs auto --max-pairs "$MAXPAIRS" \
			--round-duration "$ROUND" --window 1s --warmup 2s --equivalence 50 --disturbed-above "$DISTURBED" \
			--format json --ui-addr off --data "$work/data-$exp-$i" > "$OUT/$exp-$i.ndjson" 2> "$OUT/$exp-$i.err" || code=$?
		tail -n 1 "$OUT/$exp-$i.ndjson" > "$OUT/$exp-$i.json"
		python3 - "$OUT/$exp-$i.json" "$exp" "$i" "$code" "$((SECONDS - start))" <<'PY'
import json, sys
path, exp, i, code, secs = sys.argv[1:]
try:
    o = json.load(open(path))
except Exception as e:
    print(f"| {exp} | {i} | exit {code} | no comparison object ({e}) |")
    sys.exit(0)
cpu = next((v for v in o.get("verdicts", []) if v["metric"] == "cpu_us_per_request"), {})
ci = cpu.get("ci") or [0, 0]
others = [f'{v["metric"]} {v["outcome"]}' for v in o.get("verdicts", [])
          if v["metric"] != "cpu_us_per_request" and v["outcome"] in ("better", "worse")]
print(f'| {exp} | {i} | {o.get("status")} | {o.get("pairs")} | {o.get("stopped", "")} | '
      f'{cpu.get("outcome")} | {100*(cpu.get("ratio", 1)-1):+.1f} % | '
      f'[{100*(ci[0]-1):+.1f} %, {100*(ci[1]-1):+.1f} %] | {cpu.get("decided_at", "")} | '
      f'{", ".join(others) or "none"} | {secs} s |')
PY
	done
done
