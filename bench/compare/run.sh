#!/usr/bin/env bash
# run.sh is the accuracy bench of issue 11 through the CLI: `longhaul
# compare --format json` of the demo target, 3 pairs of 20 s rounds in 1 s
# windows (2 s warm-up), ABBA order, 200-request equivalence check, each
# experiment RUNS times (default 5):
#
#   aa-local     A vs A, local provider      → no better/worse on any metric; equivalence identical
#   aa-docker    A vs A, docker provider     → the same
#   burn-local   B with DEMO_CPU_BURN_US = 15 % of A's measured CPU per request
#                                              → worse on cpu_us_per_request
#   burn-docker  the same on the docker provider (calibrated from aa-docker-1)
#   burn50-local the same at +50 % (beside the bar: an effect above this
#                machine's noise)
#   burn-local-pN  burn-local again, meant to be run with PAIRS=N (more, shorter pairs):
#                KEEP=1 PAIRS=10 ROUND=5s RUNS=2 EXPERIMENTS=burn-local-p10 bench/compare/run.sh
#   variant-local  B with DEMO_RESPONSE_VARIANT=1 → equivalence different, naming op list and $.cursor
#
# The burn is calibrated from the first aa-local comparison's rounds (their
# mean CPU µs per request after warm-up). Rounds whose foreign load (CPU
# busy with neither the target nor longhaul) is above a quarter of the host
# are disturbed and their pair rerun once (DISTURBED=0.25, RERUN=1); on a
# machine shared with heavier jobs, DISTURBED=off judges every round and
# reports each round's foreign load instead.
#
#   flock /tmp/longhaul-measure.lock bench/compare/run.sh            # all, 5 each
#   RUNS=1 EXPERIMENTS="aa-local burn-local" bench/compare/run.sh
#
# Writes bench/compare/RESULTS.md (and traces/, the comparison objects),
# with the simulated accuracy of the verdict rule at the noise the A-vs-A
# comparisons measured (bench/compare/power). KEEP=1 keeps earlier traces
# (to add experiments to a finished run).
# Needs: go, docker with longhaul/demo-target:latest (scripts/offline-images.sh).
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo_root"
RUNS=${RUNS:-5}
FIRST=${FIRST:-1} # the first repetition's number (with KEEP=1, to add repetitions)
EXPERIMENTS=${EXPERIMENTS:-"aa-local burn-local variant-local aa-docker"}
ROUND=${ROUND:-20s}
PAIRS=${PAIRS:-3}
WARMUP=${WARMUP:-2} # seconds
DISTURBED=${DISTURBED:-0.25} # --disturbed-above (off: judge every round)
RERUN=${RERUN-1}             # 1: --rerun-disturbed (RERUN= to turn it off)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
traces=${TRACES:-bench/compare/traces}
[[ -n "${KEEP:-}" ]] || rm -rf "$traces"
mkdir -p "$traces"

log() { printf '%s compare-bench: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# shellcheck source=bench/build.sh
source bench/build.sh
sed "s|DEMO_TARGET_BIN|$demo|" bench/compare/demo-local.yaml > "$work/demo-local.yaml"
sed "s|longhaul/demo-target:latest|${DEMO_IMAGE:-longhaul/demo-target:latest}|" bench/compare/demo-docker.yaml > "$work/demo-docker.yaml"

common=(--pairs "$PAIRS" --round-duration "$ROUND" --window 1s --warmup "${WARMUP}s" --disturbed-above "$DISTURBED"
	--format json --ui-addr off --data "$work/data")
[[ -z "$RERUN" ]] || common+=(--rerun-disturbed)

# compare NAME I ARGS...: one comparison; its last NDJSON line goes to
# traces/NAME-I.json, its exit code to traces/NAME-I.exit.
compare() {
	local name=$1 i=$2
	shift 2
	local start=$SECONDS code=0 load0
	load0=$(cat /proc/loadavg)
	"$lh" compare "$@" "${common[@]}" > "$work/out.ndjson" 2> "$work/err.txt" || code=$?
	tail -n 1 "$work/out.ndjson" > "$traces/$name-$i.json"
	echo "$code" > "$traces/$name-$i.exit"
	echo "before: $load0" > "$traces/$name-$i.load"
	echo "after: $(cat /proc/loadavg)" >> "$traces/$name-$i.load"
	rounds "$traces/$name-$i.json" > "$traces/$name-$i.rounds.json" || true
	log "$name #$i: exit $code in $((SECONDS - start)) s; $(python3 bench/compare/rounds-line.py "$traces/$name-$i.rounds.json" 2>/dev/null)"
	if [[ ! -s "$traces/$name-$i.json" ]]; then
		log "no output; stderr:"
		cat "$work/err.txt" >&2
	fi
}

# rounds COMPARISON.json: the per-round values and windows (rounds.py).
rounds() {
	local runs r
	runs=$(python3 -c 'import json,sys; print(" ".join(r["run_id"] for r in json.load(open(sys.argv[1])).get("rounds") or []))' "$1" 2>/dev/null) || return 0
	mkdir -p "$work/rounds"
	for r in $runs; do "$lh" report "$r" --format json --data "$work/data" > "$work/rounds/$r.ndjson" 2>/dev/null || true; done
	python3 bench/compare/rounds.py "$1" "$WARMUP" "$work/rounds"
}

# calibrate PCT [PROVIDER]: the mean CPU µs per request of the rounds in
# traces/aa-PROVIDER-1.json (default local) after warm-up, and PCT % of it.
calibrate() {
	local runs
	runs=$(python3 -c 'import json,sys; print(" ".join(r["run_id"] for r in json.load(open(sys.argv[1]))["rounds"]))' "$traces/aa-${2:-local}-1.json")
	for r in $runs; do "$lh" report "$r" --format json --data "$work/data"; done |
		python3 -c '
import json, sys
v = []
for line in sys.stdin:
    o = json.loads(line)
    if "type" not in o and "start" in o and o.get("index", 0) >= 2:
        c = (o.get("probes") or {}).get("cpu_us_per_request")
        if c:
            v.append(c)
m = sum(v) / len(v)
print(f"{m:.1f} {round(float(sys.argv[1]) / 100 * m)}")' "$1"
}

# burn PCT [PROVIDER]: DEMO_CPU_BURN_US for +PCT %, calibrated once per
# provider (traces/calibration.txt for local, calibration-docker.txt).
burn() {
	local p=${2:-local} cal=$traces/calibration.txt
	[[ $p == local ]] || cal=$traces/calibration-$p.txt
	if [[ ! -s "$cal" ]]; then
		[[ -s "$traces/aa-$p-1.json" ]] || compare "aa-$p" 1 "$work/demo-$p.yaml"
		calibrate 100 "$p" > "$cal"
		log "A's CPU per request ($p): $(cut -d' ' -f1 "$cal") µs"
	fi
	python3 -c 'import sys; b = float(open(sys.argv[1]).read().split()[0]); print(round(b * float(sys.argv[2]) / 100))' \
		"$cal" "$1"
}

for exp in $EXPERIMENTS; do
	for i in $(seq "$FIRST" "$((FIRST + RUNS - 1))"); do
		case $exp in
		aa-local) compare "$exp" "$i" "$work/demo-local.yaml" ;;
		aa-docker) compare "$exp" "$i" "$work/demo-docker.yaml" ;;
		burn-local) compare "$exp" "$i" "$work/demo-local.yaml" --b-env "DEMO_CPU_BURN_US=$(burn 15)" ;;
		burn-docker) compare "$exp" "$i" "$work/demo-docker.yaml" --b-env "DEMO_CPU_BURN_US=$(burn 15 docker)" ;;
		burn-local-p*) compare "$exp" "$i" "$work/demo-local.yaml" --b-env "DEMO_CPU_BURN_US=$(burn 15)" ;;
		burn50-local) compare "$exp" "$i" "$work/demo-local.yaml" --b-env "DEMO_CPU_BURN_US=$(burn 50)" ;;
		variant-local) compare "$exp" "$i" "$work/demo-local.yaml" --b-env DEMO_RESPONSE_VARIANT=1 ;;
		*) log "unknown experiment $exp"; exit 2 ;;
		esac
	done
done

results=bench/compare/RESULTS.md
[[ -z "${TRACES:-}" ]] || results=$traces/RESULTS.md
if [[ -z "${NO_POWER:-}" ]]; then
	go run ./bench/compare/power -sigma "$(python3 bench/compare/judge.py --sigmas "$traces")" > "$traces/power.md"
fi
python3 bench/compare/judge.py "$traces" "$(nproc)" "ROUND=$ROUND PAIRS=$PAIRS RUNS=$RUNS WARMUP=${WARMUP}s DISTURBED=$DISTURBED${RERUN:+ RERUN=1}" > "$results"
cat "$results"
