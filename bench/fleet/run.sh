#!/usr/bin/env bash
# run.sh measures how far one `longhaul server` (PostgreSQL persistence) with
# two workers goes (issue 15, "How far"): 50 short soaks submitted at once
# with --detach (workers fleet-a and fleet-b, --slots 1, then --slots 4),
# checked from the store (all completed, every window slot stored once, no
# host driving more soaks than its slots, no slot left held), with the CPU
# of the server and of PostgreSQL per committed window and per soak; then
# the time from submit to first window of single soaks on the idle stack.
#
#   bench/fleet/run.sh                 # all three parts
#   bench/fleet/run.sh batch1|batch4|idle [ARGS…]   # one part; ARGS go to the helper (go run ./bench/fleet -h)
#
# Binaries are built first, outside the lock; then the parts run under
# /tmp/longhaul-measure.lock (all three in one hold of ~10 min, or one part). Work files
# (logs of PostgreSQL, the server and the workers) stay in /tmp/longhaul-fleet.
set -euo pipefail
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo_root"
bin=/tmp/longhaul-fleet-bin
if [ -z "${LONGHAUL_FLEET_LOCKED:-}" ]; then
	mkdir -p "$bin"
	go build -o "$bin/longhaul" ./cmd/longhaul
	go build -o "$bin/soaktarget" ./cmd/longhaul/testdata/soaktarget
	go build -o "$bin/fleet" ./bench/fleet
fi

part() {
	local name=$1
	shift
	echo "## $name"
	"$bin/fleet" -longhaul "$bin/longhaul" -target "$bin/soaktarget" -work "/tmp/longhaul-fleet/$name" "$@"
}

what=${1:-all}
[ $# -gt 0 ] && shift
if [ -z "${LONGHAUL_FLEET_LOCKED:-}" ]; then
	LONGHAUL_FLEET_LOCKED=1 exec flock /tmp/longhaul-measure.lock "$0" "$what" "$@"
fi
case $what in
batch1) part batch-slots1 -mode batch -soaks 50 -slots 1 "$@" ;;
batch4) part batch-slots4 -mode batch -soaks 50 -slots 4 "$@" ;;
idle) part idle -mode idle -idle 12 -slots 1 "$@" ;;
all)
	rc=0
	part batch-slots1 -mode batch -soaks 50 -slots 1 || rc=1
	part batch-slots4 -mode batch -soaks 50 -slots 4 || rc=1
	part idle -mode idle -idle 12 -slots 1 || rc=1
	exit $rc
	;;
*) echo "usage: $0 [all|batch1|batch4|idle] [ARGS…]" >&2; exit 2 ;;
esac
