#!/usr/bin/env bash
# run.sh is the many-hours bench of issue 10 §4: two 2-hour soaks of the demo
# (scenarios/demo.yaml on the docker provider, 10 s windows, 16 VUs at full
# speed), one clean and one with DEMO_LEAK_BYTES=256, at the same time, then
# the store and analysis measurements; it writes bench/soak/RESULTS.md.
#
#   nohup bench/soak/run.sh > /tmp/longhaul-soak.log 2>&1 &
#   bench/soak/run.sh -duration 5m                # a short rehearsal
#   bench/soak/run.sh -reanalyze                  # redo the store figures of the last soaks
#
# These are not CPU comparisons: they need no quiet machine (no measure lock).
# Arguments go to the Go program (go run ./bench/soak -h). Work files (data
# directories, each run's NDJSON and stderr, RSS samples) stay in
# /tmp/longhaul-soak (-work).
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo_root"
work=/tmp/longhaul-soak
mkdir -p "$work"

log() { printf '%s soak: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

log "building longhaul"
go build -o "$work/longhaul" ./cmd/longhaul
go build -o "$work/soak" ./bench/soak
if [[ " $* " != *" -reanalyze "* ]]; then
	log "checking the offline images"
	scripts/offline-images.sh demo-target postgres
fi
"$work/soak" -longhaul "$work/longhaul" -work "$work" "$@"
