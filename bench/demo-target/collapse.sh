#!/usr/bin/env bash
# collapse.sh shows what the demo target's switches do over a 90-second soak,
# measured with wrk (an independent driver) in 10-second windows:
#
#   clean                    throughput flat, post-GC heap flat
#   DEMO_INDEX_BUCKET=false  throughput collapses as creates grow items (Seq Scan per list)
#   DEMO_LEAK_BYTES=2048     post-GC heap grows by ~2 KiB per request
#
# Each variant gets a fresh database in a private PostgreSQL cluster (initdb +
# pg_ctl on a free loopback port, removed at exit) and a fresh target process.
# Load: wrk, 2 threads, 16 connections, the parse mix of mix.lua.
#
# Usage: bench/demo-target/collapse.sh [SECONDS_PER_WINDOW [WINDOWS]]   (default 10 9)
set -euo pipefail

window_s=${1:-10}
windows=${2:-9}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
for tool in wrk curl "$pgbin/initdb"; do
	command -v "$tool" >/dev/null || { echo "collapse.sh: $tool is not installed" >&2; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/demo-collapse.XXXXXX")
chmod 755 "$work"
target_pid=
cleanup() {
	[[ -n $target_pid ]] && kill "$target_pid" 2>/dev/null && wait "$target_pid" 2>/dev/null || true
	as_pg "$pgbin/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

# PostgreSQL refuses to run as root.
as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

echo "building the demo target" >&2
(cd "$repo" && go build -o "$work/demo-target" ./examples/demo-target)

pgport=$(free_port)
mkdir "$work/pg"
if [[ $(id -u) == 0 ]]; then chown postgres "$work/pg"; fi
as_pg "$pgbin/initdb" -D "$work/pg" -U postgres --auth=trust -E UTF8 >/dev/null
as_pg "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg/server.log" -w \
	-o "-p $pgport -k $work/pg -c listen_addresses=127.0.0.1" start >/dev/null
psql() { command psql -h 127.0.0.1 -p "$pgport" -U postgres -Atq "$@"; }

post_gc_heap() { curl -sf -XPOST "$1/debug/gc" | sed 's/.*"heap_bytes":\([0-9]*\).*/\1/'; }

run_variant() {
	local name=$1 db=$2
	shift 2
	psql -c "CREATE DATABASE $db"
	local port
	port=$(free_port)
	env PORT="$port" DATABASE_URL="postgres://postgres@127.0.0.1:$pgport/$db?sslmode=disable" "$@" \
		"$work/demo-target" 2>"$work/$db.log" &
	target_pid=$!
	local base=http://127.0.0.1:$port
	for _ in $(seq 1 100); do curl -sf "$base/health" >/dev/null && break; sleep 0.1; done
	curl -sf -XPOST "$base/users" -d '{"username":"bench","password":"pw"}' >/dev/null
	local token
	token=$(curl -sf -XPOST "$base/login" -d '{"username":"bench","password":"pw"}' | sed 's/.*"token":"\([^"]*\)".*/\1/')
	echo
	echo "== $name ($*)"
	printf '%6s %10s %10s %10s %10s %12s %14s\n' window req/s p50_ms p99_ms non2xx items_rows postgc_heap_MB
	local t0_rps= i out rps p50 p99 errs rows heap
	for i in $(seq 1 "$windows"); do
		out=$(DEMO_TOKEN=$token DEMO_USER=bench DEMO_PASS=pw DEMO_MAX_ID=$(psql -d "$db" -c 'SELECT coalesce(max(id),1) FROM items') \
			wrk -t2 -c16 -d"${window_s}s" --latency -s "$here/mix.lua" "$base")
		rps=$(awk '/^Requests\/sec/ {printf "%.0f", $2}' <<<"$out")
		p50=$(awk '$1=="50%" {print $2}' <<<"$out")
		p99=$(awk '$1=="99%" {print $2}' <<<"$out")
		errs=$(awk '/Non-2xx/ {print $5}' <<<"$out")
		# (this count is the only Seq Scan on items a clean run shows: one per window)
		rows=$(psql -d "$db" -c 'SELECT count(*) FROM items')
		heap=$(post_gc_heap "$base")
		printf '%6d %10s %10s %10s %10s %12s %14.1f\n' "$i" "$rps" "$(to_ms "$p50")" "$(to_ms "$p99")" "${errs:-0}" "$rows" "$(awk -v h="$heap" 'BEGIN{print h/1e6}')"
		[[ -n $t0_rps ]] || t0_rps=$rps
	done
	echo "last/first window throughput: $(awk -v a="$rps" -v b="$t0_rps" 'BEGIN{printf "%.2f", a/b}')"
	echo "pg_stat_user_tables (the evidence the collapse finding reads):"
	psql -d "$db" -F $'\t' -P footer=off -c 'SELECT relname, n_live_tup, seq_scan, seq_tup_read, idx_scan FROM pg_stat_user_tables ORDER BY relname' |
		awk -F'\t' 'BEGIN {printf "  %-10s %10s %10s %14s %10s\n", "table", "live_rows", "seq_scan", "seq_tup_read", "idx_scan"}
			{printf "  %-10s %10s %10s %14s %10s\n", $1, $2, $3, $4, $5}'
	kill "$target_pid"
	wait "$target_pid" 2>/dev/null || true
	target_pid=
}

# to_ms converts wrk's latency (e.g. 812.00us, 3.21ms, 1.02s) to milliseconds.
to_ms() {
	awk -v v="$1" 'BEGIN{
		if (v ~ /us$/) {sub(/us$/, "", v); printf "%.2f", v/1000}
		else if (v ~ /ms$/) {sub(/ms$/, "", v); printf "%.2f", v}
		else if (v ~ /s$/) {sub(/s$/, "", v); printf "%.2f", v*1000}
		else print v}'
}

echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
run_variant clean demo_clean
run_variant "no list index" demo_noindex DEMO_INDEX_BUCKET=false
run_variant leak demo_leak DEMO_LEAK_BYTES=2048
