#!/usr/bin/env bash
# pingpong.sh: CPU per TCP round trip on the host's loopback and on the
# loopback of a container's network namespace (a container on a user-defined
# bridge network, like a longhaul run's), 3 rounds, interleaved. Traffic stays
# on 127.0.0.1 of the namespace it runs in. Needs root (nsenter) and the
# offline images (scripts/offline-images.sh). Takes /tmp/longhaul-measure.lock.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
cleanup() { docker rm -f longhaul-pingpong >/dev/null 2>&1 || true; docker network rm longhaul-pingpong >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here/../../.." && CGO_ENABLED=0 go build -o "$work/pingpong" ./bench/docker/cgroup-check/pingpong)
docker network create longhaul-pingpong >/dev/null
docker run -d --name longhaul-pingpong --network longhaul-pingpong --entrypoint sleep longhaul/postgres:15-offline infinity >/dev/null
pid=$(docker inspect -f '{{.State.Pid}}' longhaul-pingpong)
one() { # LABEL [nsenter ...]
	local label=$1; shift
	"$@" "$work/pingpong" -listen 127.0.0.1:9177 -conns 4 >"$work/srv" &
	local s=$!
	sleep 0.5
	local c; c=$("$@" "$work/pingpong" -connect 127.0.0.1:9177 -conns 4 -n 50000)
	wait "$s"
	echo "$label | $c | $(tail -1 "$work/srv")"
}
exec 9>/tmp/longhaul-measure.lock
flock 9
for r in 1 2 3; do
	one host
	one netns nsenter --net="/proc/$pid/ns/net"
done
