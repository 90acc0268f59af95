#!/usr/bin/env bash
# run.sh is the docker-route bench of issue 9 §4: the demo soak (demo target
# + PostgreSQL) through `longhaul run` on the local provider, on docker
# through the target container's network namespace (the default route), and
# on docker through the published port and docker-proxy (the old route), in
# interleaved rounds. It prints a table and writes bench/docker/RESULTS.md.
#
# It takes /tmp/longhaul-measure.lock for the whole run, so no other
# engineer's measurement overlaps it (builds and tests still may: the table
# says how busy the rest of the machine was). Arguments go to the runner:
#
#   bench/docker/run.sh                          # 3 rounds × 3 variants × 80 s, ~25 min
#   bench/docker/run.sh -rounds 1 -duration 40s  # a quick look
#
# Needs: go, docker with the offline images (scripts/offline-images.sh),
# PostgreSQL 15 server binaries for the local provider.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo_root"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

log() { printf '%s docker bench: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

log "building longhaul and the runner"
go build -o "$work/longhaul" ./cmd/longhaul
go build -o "$work/runner" ./bench/docker/runner
scripts/offline-images.sh demo-target postgres

log "waiting for the measurement lock"
flock /tmp/longhaul-measure.lock "$work/runner" -longhaul "$work/longhaul" "$@"
