#!/usr/bin/env bash
# node-image.sh builds longhaul/node-target:latest, the Node.js target of
# examples/node-target as a container image, without pulling anything: FROM
# scratch with this machine's node binary, the shared libraries it links
# (found with ldd) and server.js. The accuracy bench runs it with the docker
# provider (bench/accuracy/node-docker.yaml).
#
# Usage: bench/accuracy/node-image.sh [--force]
#
# It is idempotent: the image is rebuilt only when node or server.js changed
# (a label records their hash) or with --force.
set -euo pipefail

readonly IMAGE=longhaul/node-target:latest
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
server=$repo_root/examples/node-target/server.js
force=0
case "${1:-}" in
--force) force=1 ;;
"") ;;
*) echo "usage: $0 [--force]" >&2; exit 2 ;;
esac

docker info >/dev/null 2>&1 || { echo "node-image: no Docker engine answers (docker info failed)" >&2; exit 1; }
node=$(command -v node) || { echo "node-image: node is not on PATH" >&2; exit 1; }
node=$(readlink -f "$node")

hash=$(cat "$node" "$server" "$0" | sha256sum | cut -c1-16)
if [[ $force == 0 ]] && [[ $(docker image inspect -f '{{index .Config.Labels "dev.longhaul.source"}}' "$IMAGE" 2>/dev/null) == "$hash" ]]; then
	echo "node-image: $IMAGE is up to date"
	exit 0
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/root/usr/bin" "$ctx/root/app" "$ctx/root/tmp"
cp "$node" "$ctx/root/usr/bin/node"
cp "$server" "$ctx/root/app/server.js"
# The dynamic loader and every library node links, at the paths ldd names.
ldd "$node" | grep -o '/[^ ]*' | sort -u | while read -r lib; do
	mkdir -p "$ctx/root$(dirname "$lib")"
	cp -L "$lib" "$ctx/root$lib"
done
chmod 1777 "$ctx/root/tmp"
tar -C "$ctx/root" --numeric-owner --owner=0 --group=0 -cf "$ctx/rootfs.tar" .
cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM scratch
ADD rootfs.tar /
ENV PORT=8080 HOST=0.0.0.0 TMPDIR=/tmp
WORKDIR /app
EXPOSE 8080 9229
USER 65534:65534
LABEL dev.longhaul.source=$hash
# The inspector listens on every interface of the container: the docker
# provider publishes it on 127.0.0.1 of the host only (see probes.heap.inspector).
ENTRYPOINT ["/usr/bin/node", "--inspect=0.0.0.0:9229", "server.js"]
DOCKERFILE
old=$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)
docker build -q -t "$IMAGE" "$ctx" >/dev/null 2>&1 || docker build -t "$IMAGE" "$ctx"
new=$(docker image inspect -f '{{.Id}}' "$IMAGE")
if [[ -n $old && $old != "$new" ]]; then
	docker image rm "$old" >/dev/null 2>&1 || true
fi
echo "node-image: built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
