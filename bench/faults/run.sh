#!/usr/bin/env bash
# bench/faults/run.sh — the fault matrix, measured: each row soaks the
# e2e target (cmd/longhaul/testdata/soaktarget) on the local provider with
# 1 s windows, injects one fault, and prints what the user saw.
#
#   bench/faults/run.sh [rows...]     rows: kill9 kill9-restart hang dbrestart oom (default: all)
#
# kill9-restart is kill9 with target.restart {policy: on-failure, max: 3}:
# the target is started again in the same environment and the soak goes on.
#
# dbrestart soaks scenarios/demo.yaml on the docker provider (the demo
# target on PostgreSQL; the images of scripts/offline-images.sh or pulled)
# and restarts its database container (docker restart) mid-soak. oom soaks
# the same with the target limited to 128 MiB and leaking 1 MiB per request
# (DEMO_LEAK_BYTES): the kernel kills it for running out of memory.
#
# Columns: fault, when (s into the run), what the terminal said (the first
# longhaul line about it), windows lost (gap rows), run outcome, findings,
# connect failures per second once the target was gone, time to recover
# (from the end of the fault to the first window with answered requests).
# "windows lost" is the gap rows (slots recorded as lost: a restart's);
# committed lost counts the slots that are neither a window nor a gap.
# Needs: go, jq. Writes only under a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROWS=${*:-"kill9 kill9-restart hang dbrestart oom"}
WORK=$(mktemp -d /tmp/longhaul-faults.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# LONGHAUL_BIN: an already built longhaul (saves a link of the whole
# binary on a busy machine); default: build one.
if [ -n "${LONGHAUL_BIN:-}" ]; then
  ln -s "$LONGHAUL_BIN" "$WORK/longhaul"
else
  go build -o "$WORK/longhaul" ./cmd/longhaul
fi
go build -o "$WORK/soaktarget" ./cmd/longhaul/testdata/soaktarget

DURATION=${DURATION:-24}   # seconds per row
FAULT_AT=${FAULT_AT:-8}    # seconds after the first window
HANG=${HANG:-10}           # seconds the target is stopped (SIGSTOP) in the hang row

# scenario NAME [RESTART]: the soak target's scenario; RESTART, when given,
# is its target.restart.
scenario() {
  local restart=""
  [ -n "${2:-}" ] && restart="    restart: $2"
  cat >"$WORK/$1.yaml" <<YAML
name: faults-$1
load: {vus: 4, duration: ${DURATION}s, window: 1s, timeout: 2s}
environment:
  provider: local
  target:
    command: ["$WORK/soaktarget"]
    health: /health
    health_timeout: 20s
$restart
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /items}
YAML
}

# db_container: the database container of the soak's docker environment,
# once provisioned (the container of a longhaul run that mounts a -pgdata
# volume).
db_container() {
  local id
  for _ in $(seq 1200); do
    for c in $(docker ps -q --filter label=dev.longhaul=1); do
      if docker inspect -f '{{range .Mounts}}{{.Name}} {{end}}' "$c" | grep -q -- '-pgdata'; then echo "$c"; return; fi
    done
    sleep 0.2
  done
  echo "no database container" >&2; exit 1
}

# target_pid DATA: the local environment's target PID, once provisioned.
target_pid() {
  local f
  for _ in $(seq 300); do
    f=$(ls "$1"/provision/*/environment.json 2>/dev/null | head -1 || true)
    if [ -n "$f" ]; then
      pid=$(jq -r '.Target.PID // .target.pid // empty' "$f" 2>/dev/null || true)
      if [ -n "$pid" ] && [ "$pid" != 0 ]; then echo "$pid"; return; fi
    fi
    sleep 0.1
  done
  echo "no target pid" >&2; exit 1
}

row() {
  local name=$1 data="$WORK/data-$1"
  mkdir -p "$data"
  local pid
  if [ "$name" = oom ]; then
    awk '{print} /^  target:$/ && !done {print "    resources: {memory: 128m}"; done=1}' scenarios/demo.yaml >"$WORK/oom.yaml"
    "$WORK/longhaul" run "$WORK/oom.yaml" --provider docker --duration "$((DURATION + 10))s" --window 1s --ui-addr off \
      --target-env DEMO_LEAK_BYTES=1048576 --data "$data" --format json >"$WORK/$name.ndjson" 2>"$WORK/$name.err" &
  elif [ "$name" = dbrestart ]; then
    "$WORK/longhaul" run scenarios/demo.yaml --provider docker --duration "$((DURATION + 10))s" --window 1s --ui-addr off \
      --data "$data" --format json >"$WORK/$name.ndjson" 2>"$WORK/$name.err" &
  else
    restart=""
    [ "$name" = kill9-restart ] && restart="{policy: on-failure, max: 3}"
    scenario "$name" "$restart"
    "$WORK/longhaul" run "$WORK/$name.yaml" --data "$data" --format json >"$WORK/$name.ndjson" 2>"$WORK/$name.err" &
  fi
  local lh=$!
  case $name in
    dbrestart) pid=$(db_container) ;;
    oom) pid= ;;
    *) pid=$(target_pid "$data") ;;
  esac
  # the first window of the run
  for _ in $(seq 600); do grep -q '"index":0' "$WORK/$name.ndjson" 2>/dev/null && break; sleep 0.1; done
  local t0; t0=$(date +%s.%N)
  sleep "$FAULT_AT"
  local at; at=$(date +%s.%N)
  local fault_end
  case $name in
    kill9|kill9-restart) kill -9 "$pid"; fault_end=$at ;;
    hang)  kill -STOP "$pid"; sleep "$HANG"; kill -CONT "$pid"; fault_end=$(date +%s.%N) ;;
    dbrestart) docker restart -t 1 "$pid" >/dev/null; fault_end=$(date +%s.%N) ;;
    oom) fault_end=$at ;; # the target brings it on itself
  esac
  local rc=0; wait "$lh" || rc=$?
  local said; said=$(grep -m1 -E 'window [0-9]+: ' "$WORK/$name.err" || echo "(nothing)")
  if [ "$name" = kill9-restart ]; then
    said="$said / $(grep -m1 -E 'window [0-9]+: the target restarted' "$WORK/$name.err" || echo "(no restart line)")"
  fi
  local rep; rep=$(grep '"type":"report"' "$WORK/$name.ndjson" | tail -1)
  local status gaps findings
  status=$(jq -r '.status' <<<"$rep")
  gaps=$(jq -r '.gaps // 0' <<<"$rep")
  # slots neither committed nor recorded as a gap: measured windows lost
  local lost
  lost=$(jq -s --argjson slots "$DURATION" '[.[] | select(.index != null) | .index] | unique | $slots - length' "$WORK/$name.ndjson")
  [ "$name" = oom ] || [ "$name" = dbrestart ] || [ "$status" != completed ] || gaps="$gaps ($lost committed lost)"
  findings=$(jq -r '[.findings[] | select(.severity != "info") | "\(.severity) \(.kind)"] | join(", ") | if . == "" then "none" else . end' <<<"$rep")
  # a restart's crash finding says what followed: show its summary
  [ "$name" = kill9-restart ] && findings=$(jq -r '[.findings[] | select(.severity != "info") | if .kind == "crash" then "\(.severity) crash: \(.summary)" else "\(.severity) \(.kind)" end] | join(", ")' <<<"$rep")
  # connect failures per second in the windows after the fault; recovery:
  # the first window ending after fault_end with answered requests
  local cfps recover
  cfps=$(jq -s --arg at "$at" '[.[] | select(.index != null and .connect_failures != null) | .connect_failures] | if length == 0 then 0 else (add / length) end' "$WORK/$name.ndjson")
  recover=$(jq -s -r --argjson fe "$fault_end" '[.[] | select(.index != null) | select((.end | sub("\\.[0-9]+Z$"; "Z") | fromdate) > $fe and (.requests - (.connect_failures // 0) - (.errors.timeout // 0)) > 0) | ((.end | sub("\\.[0-9]+Z$"; "Z") | fromdate) - $fe)] | if length == 0 then "never (run ended)" else "≤ \(.[0] | floor + 1) s" end' "$WORK/$name.ndjson")
  case $name in kill9|oom) recover="— (no restart: the run ends)" ;; esac
  if [ "$name" = kill9-restart ]; then
    # recovered: the restarted incarnation's first window starts (its
    # target answered the health check just before)
    recover=$(jq -s -r --argjson at "$at" 'def t: (sub("\\.[0-9]+Z$"; "Z") | fromdate) + ((capture("\\.(?<f>[0-9]+)Z$").f // "0") | "0." + . | tonumber);
      [.[] | select(.index != null and (.incarnation // 1) > 1 and (.gap | not)) | (.start | t) - $at] | if length == 0 then "never (run ended)" else "\(.[0] * 10 | round / 10) s" end' "$WORK/$name.ndjson")
  fi
  if [ "$name" = dbrestart ]; then
    # the target answers during the restart, with errors: recovered is the
    # first window after it with at most 1 % errors
    recover=$(jq -s -r --argjson fe "$fault_end" '[.[] | select(.index != null) | select((.end | sub("\\.[0-9]+Z$"; "Z") | fromdate) > $fe and .requests > 0 and ((.errors // {}) | to_entries | map(.value) | add // 0) <= 0.01 * .requests) | ((.end | sub("\\.[0-9]+Z$"; "Z") | fromdate) - $fe)] | if length == 0 then "never (run ended)" else "≤ \(.[0] | floor + 1) s" end' "$WORK/$name.ndjson")
  fi
  # the errors of the windows that overlap the fault, by class
  local errs
  errs=$(jq -s -r --argjson at "$at" --argjson fe "$fault_end" '[.[] | select(.index != null) | select((.end | sub("\\.[0-9]+Z$"; "Z") | fromdate) >= $at and (.start | sub("\\.[0-9]+Z$"; "Z") | fromdate) <= $fe + 1) | .errors | to_entries[] | select(.value > 0)] | group_by(.key) | map("\(.[0].key):\(map(.value) | add)") | join(" ") | if . == "" then "none" else . end' "$WORK/$name.ndjson")
  printf '| %s | %.0f s | %s | %s | %s | %s (exit %s) | %s | %.1f | %s |\n' \
    "$name" "$(echo "$at - $t0" | bc)" "$said" "$errs" "$gaps" "$status" "$rc" "$findings" "$cfps" "$recover"
}

echo "| fault | when | what the terminal said | errors in the fault's windows | windows lost | outcome | findings (warning+) | connect failures per 1 s window after | time to recover |"
echo "|---|---|---|---|---|---|---|---|---|"
for r in $ROWS; do row "$r"; done
