#!/usr/bin/env bash
# bench/faults/run.sh — the fault matrix, measured: each row soaks the
# e2e target (cmd/longhaul/testdata/soaktarget) on the local provider with
# 1 s windows, injects one fault, and prints what the user saw.
#
#   [PROVIDER=local|docker] bench/faults/run.sh [rows...]
#       rows: kill9 kill9-restart hang dbkill9 dbrestart oom storedown
#             diskfull temporalrestart workersigterm workerkill9 (default: all)
#
# PROVIDER (default local) is the provider of the soaked target: local runs
# the e2e target as a process; docker runs the demo target's image
# (longhaul/demo-target:latest, built by scripts/offline-images.sh) without
# a database, and kill9/hang signal the container's process (docker kill,
# kill -STOP of its pid).
#
# kill9-restart is kill9 with target.restart {policy: on-failure, max: 3}:
# the target is started again in the same environment and the soak goes on.
#
# dbkill9 and dbrestart soak scenarios/demo.yaml (the demo target on
# PostgreSQL) on PROVIDER. dbkill9 kills the database with SIGKILL (local:
# the postmaster; docker: docker kill of its container); dbrestart restarts
# it (local: pg_ctl restart -m fast, as an operator would; docker: docker
# restart). longhaul starts a database it finds stopped again in place.
# workersigterm and workerkill9 run a `longhaul dev` without a worker, one
# `longhaul worker` that takes the soak, a second one started after the
# first window, and send the first SIGTERM (a deploy) or SIGKILL. oom soaks
# the same with the target limited to 128 MiB and leaking 1 MiB per request
# (DEMO_LEAK_BYTES): the kernel kills it for running out of memory.
#
# storedown runs with --store on a private PostgreSQL cluster (Debian's
# postgresql-15 binaries, as the postgres user) and stops that cluster for
# STORE_DOWN seconds mid-soak. diskfull puts the data directory (store and
# embedded Temporal) on a 96 MiB tmpfs and fills it for FULL_FOR seconds,
# then checks the store's integrity. temporalrestart runs `longhaul server`
# on PostgreSQL, a `longhaul worker` and a `longhaul run --temporal` client,
# and stops the server (SIGTERM) for TEMPORAL_DOWN seconds mid-soak. These
# three need root (runuser, mount).
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
ROWS=${*:-"kill9 kill9-restart hang dbkill9 dbrestart oom storedown diskfull temporalrestart workersigterm workerkill9"}
PROVIDER=${PROVIDER:-local}
case $PROVIDER in local|docker) ;; *) echo "PROVIDER is local or docker, not $PROVIDER" >&2; exit 2 ;; esac
WORK=$(mktemp -d /tmp/longhaul-faults.XXXXXX)
chmod 755 "$WORK" # the postgres user reads its cluster's directory under it
cleanup() {
  for d in "$WORK"/pg-*/; do [ -f "$d/postmaster.pid" ] && pg_stop "$d"; done
  mountpoint -q "$WORK/data-diskfull" && umount "$WORK/data-diskfull"
  [ -n "${KEEP:-}" ] && { echo "kept $WORK" >&2; return; }
  rm -rf "$WORK"
}
trap cleanup EXIT
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
STORE_DOWN=${STORE_DOWN:-60}       # seconds the results store is stopped (storedown)
FULL_FOR=${FULL_FOR:-20}           # seconds the data directory's disk stays full (diskfull)
TEMPORAL_DOWN=${TEMPORAL_DOWN:-10} # seconds the Temporal server is down (temporalrestart)
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

# pg_start DIR PORT: a private PostgreSQL cluster on 127.0.0.1:PORT (made
# on first use); pg_stop DIR stops it (fast: what a crash or a restart
# looks like to clients).
pg_start() {
  mkdir -p "$1" && chown postgres "$1" && chmod 700 "$1"
  [ -f "$1/PG_VERSION" ] || runuser -u postgres -- "$PGBIN/initdb" -D "$1" -A trust -U postgres >/dev/null
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$1" -l "$1/server.log" -w \
    -o "-p $2 -k $1 -c listen_addresses=127.0.0.1" start >/dev/null
}
pg_stop() { runuser -u postgres -- "$PGBIN/pg_ctl" -D "$1" -m fast -w stop >/dev/null; }

# scenario NAME [SECONDS] [RESTART]: the soak of the e2e target (local) or
# of the demo target's image (docker); RESTART, when given, is its
# target.restart.
scenario() {
  local restart=""
  [ -n "${3:-}" ] && restart="    restart: $3"
  if [ "$PROVIDER" = docker ]; then
    cat >"$WORK/$1.yaml" <<YAML
name: faults-$1
load: {vus: 4, duration: ${2:-$DURATION}s, window: 1s, timeout: 2s}
environment:
  provider: docker
  target:
    image: longhaul/demo-target:latest
    health: /health
    health_timeout: 60s
$restart
ops:
  - name: health
    weight: 1
    request: {method: GET, path: /health}
YAML
    return
  fi
  cat >"$WORK/$1.yaml" <<YAML
name: faults-$1
load: {vus: 4, duration: ${2:-$DURATION}s, window: 1s, timeout: 2s}
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

# run_container db|target: the database or the target container of the
# soak's docker environment, once provisioned (the longhaul container that
# mounts a -pgdata volume, or the one that does not).
run_container() {
  local mounts
  for _ in $(seq 1200); do
    for c in $(docker ps -q --filter label=dev.longhaul=1); do
      mounts=$(docker inspect -f '{{range .Mounts}}{{.Name}} {{end}}' "$c")
      if [[ $mounts == *-pgdata* ]]; then
        if [ "$1" = db ]; then echo "$c"; return; fi
      elif [ "$1" = target ]; then echo "$c"; return; fi
    done
    sleep 0.2
  done
  echo "no $1 container" >&2; exit 1
}

# env_field DATA JQ: a field of the local environment, once provisioned
# and set (jq path, e.g. .database.process.pid).
env_field() {
  local f v
  for _ in $(seq 3000); do
    f=$(ls "$1"/provision/*/environment.json 2>/dev/null | head -1 || true)
    if [ -n "$f" ]; then
      v=$(jq -r "$2 // empty" "$f" 2>/dev/null || true)
      if [ -n "$v" ] && [ "$v" != 0 ]; then echo "$v"; return; fi
    fi
    sleep 0.1
  done
  echo "no $2 in the environment" >&2; exit 1
}

# target_pid DATA: the local environment's target PID, once provisioned.
target_pid() { env_field "$1" .target.pid; }

row() {
  local name=$1 data="$WORK/data-$1"
  mkdir -p "$data"
  local pid
  if [ "$name" = oom ]; then
    awk '{print} /^  target:$/ && !done {print "    resources: {memory: 128m}"; done=1}' scenarios/demo.yaml >"$WORK/oom.yaml"
    "$WORK/longhaul" run "$WORK/oom.yaml" --provider docker --duration "$((DURATION + 10))s" --window 1s --ui-addr off \
      --target-env DEMO_LEAK_BYTES=1048576 --data "$data" --format json >"$WORK/$name.ndjson" 2>"$WORK/$name.err" &
  elif [ "$name" = dbrestart ] || [ "$name" = dbkill9 ]; then
    "$WORK/longhaul" run scenarios/demo.yaml --provider "$PROVIDER" --duration "$((DURATION + 10))s" --window 1s --ui-addr off \
      --data "$data" --format json >"$WORK/$name.ndjson" 2>"$WORK/$name.err" &
  elif [ "$name" = workersigterm ] || [ "$name" = workerkill9 ]; then
    # a worker killed -9 is noticed when its drive misses its heartbeat
    # timeout (60 s): the row runs long enough for the next one to resume
    local secs=$DURATION
    [ "$name" = workerkill9 ] && secs=$((FAULT_AT + 90))
    dev_port=$((57300 + RANDOM % 500))
    "$WORK/longhaul" dev --data "$data" --port "$dev_port" --worker=false >"$WORK/dev.log" 2>&1 &
    dev=$!
    for _ in $(seq 600); do grep -q 'temporal dev server at' "$WORK/dev.log" && break; sleep 0.2; done
    "$WORK/longhaul" worker --temporal "127.0.0.1:$dev_port" --data "$data" >"$WORK/worker1.log" 2>&1 &
    worker1=$!
    for _ in $(seq 600); do grep -q 'worker on' "$WORK/worker1.log" && break; sleep 0.2; done
    scenario "$name" "$secs"
    "$WORK/longhaul" run "$WORK/$name.yaml" --temporal "127.0.0.1:$dev_port" --data "$data" \
      --format json >"$WORK/$name.ndjson" 2>"$WORK/$name.err" &
  elif [ "$name" = storedown ]; then
    pg_start "$WORK/pg-store" 55432
    scenario "$name" "$((FAULT_AT + STORE_DOWN + 15))"
    "$WORK/longhaul" run "$WORK/$name.yaml" --store "postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable" \
      --data "$data" --format json >"$WORK/$name.ndjson" 2>"$WORK/$name.err" &
  elif [ "$name" = diskfull ]; then
    mount -t tmpfs -o size=96m tmpfs "$data"
    scenario "$name" "$((FAULT_AT + FULL_FOR + 15))"
    "$WORK/longhaul" run "$WORK/$name.yaml" --data "$data" --format json >"$WORK/$name.ndjson" 2>"$WORK/$name.err" &
  elif [ "$name" = temporalrestart ]; then
    pg_start "$WORK/pg-temporal" 55433
    temporal_server "$data"
    "$WORK/longhaul" worker --temporal 127.0.0.1:57233 --store "$data/longhaul.db" --data "$data/worker" >"$WORK/worker.log" 2>&1 &
    worker=$!
    scenario "$name" "$((FAULT_AT + TEMPORAL_DOWN + 20))"
    "$WORK/longhaul" run "$WORK/$name.yaml" --temporal 127.0.0.1:57233 --store "$data/longhaul.db" --data "$data/client" \
      --format json >"$WORK/$name.ndjson" 2>"$WORK/$name.err" &
  else
    restart=""
    [ "$name" = kill9-restart ] && restart="{policy: on-failure, max: 3}"
    scenario "$name" "" "$restart"
    "$WORK/longhaul" run "$WORK/$name.yaml" --data "$data" --format json >"$WORK/$name.ndjson" 2>"$WORK/$name.err" &
  fi
  local lh=$!
  case $name in
    dbrestart|dbkill9)
      if [ "$PROVIDER" = docker ]; then pid=$(run_container db); else pid=$(env_field "$data" .database.process.pid); fi ;;
    oom|storedown|diskfull|workersigterm|workerkill9) pid= ;;
    temporalrestart) pid=; if [ "$PROVIDER" = local ]; then pid=$(target_pid "$data/worker"); fi ;;
    *) if [ "$PROVIDER" = docker ]; then pid=$(run_container target); else pid=$(target_pid "$data"); fi ;;
  esac
  # the first window of the run
  for _ in $(seq 600); do grep -q '"index":0' "$WORK/$name.ndjson" 2>/dev/null && break; sleep 0.1; done
  local t0; t0=$(date +%s.%N)
  sleep "$FAULT_AT"
  local at; at=$(date +%s.%N)
  local fault_end
  # docker: the container's process is what a signal reaches
  local cpid=$pid
  if [ "$PROVIDER" = docker ] && [ -n "$pid" ]; then cpid=$(docker inspect -f '{{.State.Pid}}' "$pid"); fi
  case $name in
    kill9|kill9-restart) kill -9 "$cpid"; fault_end=$at ;;
    hang)  kill -STOP "$cpid"; sleep "$HANG"; kill -CONT "$cpid"; fault_end=$(date +%s.%N) ;;
    dbkill9) kill -9 "$cpid"; fault_end=$at ;;
    dbrestart)
      if [ "$PROVIDER" = docker ]; then docker restart -t 1 "$pid" >/dev/null
      else
        # pg_ctl's own start may lose the data directory's lock to
        # longhaul's restart of its database: then it says it could not
        # start the server, and longhaul's is the one running
        runuser -u postgres -- "$PGBIN/pg_ctl" -D "$(env_field "$data" .database.process.data_dir)/data" -l /dev/null -m fast -w restart >/dev/null 2>&1 ||
          echo "dbrestart: pg_ctl's start lost to longhaul's restart of the database" >&2
      fi
      fault_end=$(date +%s.%N) ;;
    workersigterm|workerkill9)
      "$WORK/longhaul" worker --temporal "127.0.0.1:$dev_port" --data "$data" >"$WORK/worker2.log" 2>&1 &
      worker2=$!
      for _ in $(seq 600); do grep -q 'worker on' "$WORK/worker2.log" && break; sleep 0.2; done
      at=$(date +%s.%N)
      if [ "$name" = workersigterm ]; then kill -TERM "$worker1"; else kill -9 "$worker1"; fi
      wait "$worker1" || true
      fault_end=$(date +%s.%N) ;;
    oom) fault_end=$at ;; # the target brings it on itself
    storedown) pg_stop "$WORK/pg-store"; sleep "$STORE_DOWN"; pg_start "$WORK/pg-store" 55432; fault_end=$(date +%s.%N) ;;
    diskfull)
      dd if=/dev/zero of="$data/filler" bs=1M status=none 2>/dev/null || true
      sleep "$FULL_FOR"; rm -f "$data/filler"; fault_end=$(date +%s.%N) ;;
    temporalrestart)
      kill -TERM "$server"; wait "$server" || true
      sleep "$TEMPORAL_DOWN"; temporal_server "$data"; fault_end=$(date +%s.%N)
      printf 'temporalrestart: the server was out of reach for %.1f s (SIGTERM to answering again)\n' "$(echo "$fault_end - $at" | bc)" >&2 ;;
  esac
  local rc=0; wait "$lh" || rc=$?
  local integrity=""
  case $name in
    diskfull)
      integrity=", store $(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA integrity_check").fetchone()[0])' "$data/longhaul.db")"
      ;;
    temporalrestart) kill -TERM "$worker" "$server"; wait "$worker" "$server" || true ;;
    workersigterm|workerkill9) kill -TERM "$worker2" "$dev"; wait "$worker2" "$dev" || true ;;
  esac
  local said; said=$(grep -m1 -E 'window [0-9]+: ' "$WORK/$name.err" || echo "(nothing)")
  if [ "$name" = kill9-restart ]; then
    said="$said / $(grep -m1 -E 'window [0-9]+: the target restarted' "$WORK/$name.err" || echo "(no restart line)")"
  fi
  local rep; rep=$(grep '"type":"report"' "$WORK/$name.ndjson" | tail -1)
  local status gaps findings
  status=$(jq -r '.status' <<<"$rep")
  # windows lost: gap rows, plus slots before the last window that have no
  # row at all (a window never written)
  gaps=$(jq -s -r --argjson g "$(jq -r '.gaps // 0' <<<"$rep")" '[.[] | select(.index != null) | .index] | if length == 0 then $g else (max + 1 - (unique | length)) + $g end' "$WORK/$name.ndjson")
  if [ "$name" = kill9-restart ]; then
    # a restart records its slot as a gap; committed windows lost are the
    # slots of the run neither committed nor recorded
    local lost
    lost=$(jq -s --argjson slots "$DURATION" '[.[] | select(.index != null) | .index] | unique | $slots - length' "$WORK/$name.ndjson")
    gaps="$gaps ($lost committed lost)"
  fi
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
  if [ "$name" = dbrestart ] || [ "$name" = dbkill9 ]; then
    # the target answers during the restart, with errors: recovered is the
    # first window after it with at most 1 % errors
    recover=$(jq -s -r --argjson fe "$fault_end" '[.[] | select(.index != null) | select((.end | sub("\\.[0-9]+Z$"; "Z") | fromdate) > $fe and .requests > 0 and ((.errors // {}) | to_entries | map(.value) | add // 0) <= 0.01 * .requests) | ((.end | sub("\\.[0-9]+Z$"; "Z") | fromdate) - $fe)] | if length == 0 then "never (run ended)" else "≤ \(.[0] | floor + 1) s" end' "$WORK/$name.ndjson")
  fi
  # the errors of the windows that overlap the fault, by class
  local errs
  errs=$(jq -s -r --argjson at "$at" --argjson fe "$fault_end" '[.[] | select(.index != null) | select((.end | sub("\\.[0-9]+Z$"; "Z") | fromdate) >= $at and (.start | sub("\\.[0-9]+Z$"; "Z") | fromdate) <= $fe + 1) | .errors | to_entries[] | select(.value > 0)] | group_by(.key) | map("\(.[0].key):\(map(.value) | add)") | join(" ") | if . == "" then "none" else . end' "$WORK/$name.ndjson")
  case $name in
    storedown|diskfull|temporalrestart)
      # the target was fine: recovered is when windows reached the store again
      findings=$(jq -r '[.findings[] | "\(.severity) \(.kind)"] | join(", ") | if . == "" then "none" else . end' <<<"$rep")
      recover="—" ;;
  esac
  printf '| %s (%s) | %.0f s | %s | %s | %s | %s (exit %s)%s | %s | %.1f | %s |\n' \
    "$name" "$PROVIDER" "$(echo "$at - $t0" | bc)" "$said" "$errs" "$gaps" "$status" "$rc" "$integrity" "$findings" "$cfps" "$recover"
}

# temporal_server DATA: `longhaul server` on the private PostgreSQL cluster
# of the temporalrestart row, answering on 127.0.0.1:57233 ($server: its pid).
temporal_server() {
  "$WORK/longhaul" server --persistence "postgres://postgres@127.0.0.1:55433/temporal?sslmode=disable" \
    --addr 127.0.0.1:57233 --store "$1/longhaul.db" --data "$1/server" >>"$WORK/server.log" 2>&1 &
  server=$!
  for _ in $(seq 600); do "$WORK/longhaul" healthcheck 127.0.0.1:57233 >/dev/null 2>&1 && return; sleep 0.2; done
  echo "longhaul server did not come up" >&2; tail -20 "$WORK/server.log" >&2; exit 1
}

echo "| fault | when | what the terminal said | errors in the fault's windows | windows lost | outcome | findings (warning+) | connect failures per 1 s window after | time to recover |"
echo "|---|---|---|---|---|---|---|---|---|"
for r in $ROWS; do row "$r"; done
