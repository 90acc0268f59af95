#!/usr/bin/env bash
# Makes docs/images/run-page.png, the front page's screenshot, from a real run:
# the demo target started by hand with a planted leak (DEMO_LEAK_BYTES), a
# short soak of it through `longhaul run` (embedded Temporal, a throwaway data
# directory), `longhaul ui` over that run's store, and headless Chromium's
# screenshot of the run page with its finding. Run it again whenever the run
# page changes:
#
#   scripts/screenshot-run-page.sh                 # writes docs/images/run-page.png
#   OUT=/tmp/x.png DURATION=90s scripts/screenshot-run-page.sh
#
# Needs Go and chromium (.ci/run installs it). Everything runs on 127.0.0.1;
# nothing is left behind but the PNG.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-docs/images/run-page.png}
DURATION=${DURATION:-60s}
WINDOW=${WINDOW:-2s}
LEAK_BYTES=${LEAK_BYTES:-4096}
SIZE=${SIZE:-1200,1760}   # the browser window: the findings and the charts down to the memory chart

chromium=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chromium" ] || { echo "screenshot-run-page: no chromium on PATH (apt-get install chromium)" >&2; exit 2; }

tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# first_match FILE SED_EXPR prints the first line the sed expression prints
# from FILE, waiting up to 10 s for a process to write it; fails after that.
first_match() {
	local got
	for _ in $(seq 100); do
		got=$(sed -n "$2" "$1" | head -1)
		[ -n "$got" ] && { echo "$got"; return 0; }
		sleep 0.1
	done
	return 1
}

echo "== build"
go build -o "$tmp/longhaul" ./cmd/longhaul
go build -o "$tmp/demo-target" ./examples/demo-target

echo "== the demo target, leaking $LEAK_BYTES bytes per request"
PORT=0 DEMO_SQLITE="$tmp/demo.db" DEMO_LEAK_BYTES="$LEAK_BYTES" "$tmp/demo-target" 2>"$tmp/target.log" &
pids+=($!)
port=$(first_match "$tmp/target.log" 's/.*"msg":"listening","addr":"[^"]*:\([0-9][0-9]*\)".*/\1/p') ||
	{ cat "$tmp/target.log" >&2; echo "screenshot-run-page: the demo target did not start" >&2; exit 1; }

# The quick start's scenario (README.md), with the demo's sign-up and login so
# that writes are authorised, and its heap probe: the target's own
# go_gc_heap_live_bytes every window and a forced GC every 5.
cat >"$tmp/api.yaml" <<EOF
name: my-api
load: {vus: 8, duration: $DURATION, window: $WINDOW, warmup: 4s}
environment:
  target: {url: "http://127.0.0.1:$port", health: /health}
setup:
  - {name: signup, request: {method: POST, path: /users, json: {username: "u{{ vu }}-{{ uuid }}", password: pw-longhaul}}, capture: [{json: username, var: user}]}
  - {name: login, request: {method: POST, path: /login, json: {username: "{{ .user }}", password: pw-longhaul}}, capture: [{json: token, var: token}]}
ops:
  - {name: list, weight: 6, request: {path: /items, query: {bucket: "{{ randInt 0 9 }}"}, headers: {Authorization: "Bearer {{ .token }}"}}}
  - {name: create, weight: 3, request: {method: POST, path: /items, headers: {Authorization: "Bearer {{ .token }}"}, json: {bucket: "{{ randInt 0 9 }}", title: "{{ randString 8 24 }}"}}, capture: [{json: id, pool: items}]}
  - {name: get, weight: 1, request: {path: "/items/{{ pick \"items\" }}", headers: {Authorization: "Bearer {{ .token }}"}}, expect: {status: [200, 404]}}
probes:
  heap: {metric: {}, gc_hook: {every: 5}}
EOF

echo "== longhaul run ($DURATION in $WINDOW windows)"
"$tmp/longhaul" run "$tmp/api.yaml" --data "$tmp/data" --ui-addr off --format json >"$tmp/run.ndjson" || true
# The data directory is new: its one run is the one just made.
run_id=$("$tmp/longhaul" runs --data "$tmp/data" --format json | sed -n '1s/^{"id":"\([^"]*\)".*/\1/p')
[ -n "$run_id" ] || { tail -5 "$tmp/run.ndjson" >&2; echo "screenshot-run-page: no run in the store" >&2; exit 1; }
"$tmp/longhaul" report "$run_id" --data "$tmp/data" | sed -n '/^findings/,$p' | head -8

echo "== longhaul ui"
"$tmp/longhaul" ui --data "$tmp/data" --addr 127.0.0.1:0 >"$tmp/ui.log" 2>&1 &
pids+=($!)
url=$(first_match "$tmp/ui.log" 's/^longhaul UI at \(http[^ ]*\) .*/\1/p') ||
	{ cat "$tmp/ui.log" >&2; echo "screenshot-run-page: longhaul ui did not start" >&2; exit 1; }
url=${url%/}/runs/$run_id

echo "== screenshot of $url"
mkdir -p "$(dirname "$OUT")"
"$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/chromium" \
	--window-size="$SIZE" --screenshot="$tmp/shot.png" "$url" >/dev/null 2>&1
cp "$tmp/shot.png" "$OUT"
echo "wrote $OUT ($(wc -c <"$OUT") bytes)"
