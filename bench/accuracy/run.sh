#!/usr/bin/env bash
# run.sh is the accuracy bench of issue 5 §3 through the CLI: for each
# provider (docker and local) it runs 5 × 90 s soaks of each variant with
# `longhaul run --format json` and judges the findings of each run's report:
#
#   leak        demo target + PostgreSQL, --target-env DEMO_LEAK_BYTES=2048  → leak
#   noindex     demo target + PostgreSQL, --target-env DEMO_INDEX_BUCKET=false → collapse naming items
#   clean       demo target + PostgreSQL                                       → no warning-or-worse finding
#   node-leak   examples/node-target, --target-env LEAK_BYTES=2048 (inspector) → leak
#   node-clean  examples/node-target (inspector)                               → no warning-or-worse finding
#   node-offheap  examples/node-target, --target-env LEAK_BUFFER_BYTES=2048  → leak outside the heap
#   sqlite-noindex  demo target on SQLite, --target-env DEMO_INDEX_BUCKET=false → collapse naming items and op list
#   sqlite-clean  demo target on SQLite                                        → no warning-or-worse finding
#   mysql-leak, mysql-noindex, mysql-clean   the demo target over MySQL/MariaDB (mysql-*.yaml),
#                 as leak, noindex and clean (not in the default set: -variants mysql-noindex,…)
#   mongodb-leak, mongodb-noindex, mongodb-clean   the same over MongoDB (mongodb-*.yaml: mongod
#                 or FerretDB locally, mongo:7 on docker; not in the default set either)
#
# It prints a table and writes bench/accuracy/RESULTS.md. 80 soaks take about
# 2.5 hours; run from anywhere. Arguments go to the runner, e.g.
#
#   bench/accuracy/run.sh -runs 1 -providers local -variants leak,clean
#   bench/accuracy/run.sh -traces /tmp/accuracy-traces     # keep each run's NDJSON
#
# Needs: go, docker (images are built locally, nothing is pulled), node,
# PostgreSQL 15 server binaries for the local provider.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo_root"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

log() { printf '%s accuracy: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

log "building longhaul"
go build -o "$work/longhaul" ./cmd/longhaul

if [[ " $* " != *" -providers local "* ]]; then
	log "checking the offline images (docker provider)"
	scripts/offline-images.sh demo-target postgres mariadb
	bench/accuracy/node-image.sh
fi

log "running the soaks"
go run ./bench/accuracy/runner -longhaul "$work/longhaul" \
	-dir bench/accuracy -data "$work/data" -out bench/accuracy/RESULTS.md "$@"
