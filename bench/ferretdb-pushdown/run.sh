#!/usr/bin/env bash
# run.sh measures which of the demo target's MongoDB queries FerretDB 1.24
# over PostgreSQL hands to PostgreSQL as a filter, and whether PostgreSQL
# then uses the index FerretDB created for the demo's list index: a private
# PostgreSQL 15 cluster with auto_explain logging every statement's SQL,
# parameters and plan (log_min_duration 0), FerretDB over it, main.go fills
# the demo's items collection (DOCS documents in 100 buckets, its list index
# and a one-field bucket index), ANALYZE, then the demo's queries. It prints
# the indexes FerretDB made, each query's SQL and plan as PostgreSQL logged
# them, and EXPLAIN of the same filter written with = instead of @> (what an
# index on the expression can serve).
#
#   bench/ferretdb-pushdown/run.sh [DOCS]      (as root: PostgreSQL runs as postgres)
#   COMPANION=1 bench/ferretdb-pushdown/run.sh [DOCS]   (prepared as the local provider does)
#
# Needs ferretdb on PATH or in $(go env GOPATH)/bin (scripts/install-ferretdb.sh)
# and PostgreSQL 15's server binaries.
set -euo pipefail

docs=${1:-20000}
pgbin=${PGBIN:-/usr/lib/postgresql/15/bin}
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo_root"
ferretdb=$(command -v ferretdb || echo "$(go env GOPATH)/bin/ferretdb")
[ -x "$ferretdb" ] || { echo "ferretdb-pushdown: no ferretdb (run scripts/install-ferretdb.sh)" >&2; exit 2; }

work=$(mktemp -d)
chmod 755 "$work"
pg=$work/pg
ferret_pid=
cleanup() {
	[ -n "$ferret_pid" ] && kill "$ferret_pid" 2>/dev/null && wait "$ferret_pid" 2>/dev/null
	[ -f "$pg/postmaster.pid" ] && runuser -u postgres -- "$pgbin/pg_ctl" -D "$pg" -m fast -w stop >/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pgport=$(free_port)
mkdir -p "$pg" && chown postgres "$pg" && chmod 700 "$pg"
runuser -u postgres -- "$pgbin/initdb" -D "$pg" -A trust -U postgres >/dev/null
runuser -u postgres -- "$pgbin/pg_ctl" -D "$pg" -l "$pg/server.log" -w -o "-p $pgport -k $pg \
 -c listen_addresses=127.0.0.1 -c shared_preload_libraries=auto_explain -c auto_explain.log_min_duration=0 \
 -c auto_explain.log_analyze=on -c auto_explain.log_buffers=off -c auto_explain.log_timing=off \
 -c log_parameter_max_length=-1 -c log_min_duration_statement=0" start >/dev/null
psql() { runuser -u postgres -- psql -h 127.0.0.1 -p "$pgport" -U postgres "$@"; }
runuser -u postgres -- "$pgbin/postgres" --version
"$ferretdb" --version | sed -n 1p
echo 'CREATE DATABASE ferretdb' | psql -q -d postgres
go build -o "$work/client" ./bench/ferretdb-pushdown
if [ "${COMPANION:-0}" = 1 ]; then
	echo "(COMPANION=1: the database prepared as the local provider does, mongoserver.BackendSetup)"
	"$work/client" -step backend -pg "postgres://postgres@127.0.0.1:$pgport/ferretdb"
fi

mport=$(free_port)
"$ferretdb" --handler=postgresql --postgresql-url="postgres://postgres@127.0.0.1:$pgport/ferretdb" \
	--listen-addr="127.0.0.1:$mport" --state-dir="$work" --debug-addr=- --telemetry=disable --log-level=warn \
	>"$work/ferretdb.log" 2>&1 &
ferret_pid=$!
uri="mongodb://127.0.0.1:$mport/pushdown"
for _ in $(seq 50); do "$work/client" -mongo "$uri" -step fill -docs "$docs" && break; sleep 0.2; done
echo 'ANALYZE' | psql -q -d ferretdb
table=$(echo "SELECT _jsonb->>'table' FROM pushdown._ferretdb_database_metadata WHERE _jsonb->>'_id' = 'items'" | psql -At -d ferretdb)
echo
echo "== the indexes FerretDB created on pushdown.$table"
echo "SELECT indexdef FROM pg_indexes WHERE schemaname = 'pushdown' AND tablename = '$table'" | psql -At -d ferretdb
offset=$(stat -c %s "$pg/server.log")
echo
echo "== the queries (client's view)"
"$work/client" -mongo "$uri" -step query
sleep 1 # the log is written by the backend; let it land
echo
echo "== what PostgreSQL ran for them (auto_explain: SQL, parameters, plan)"
tail -c +"$((offset + 1))" "$pg/server.log" | grep -v 'duration: [0-9.]* ms  statement: \(BEGIN\|COMMIT\)' |
	awk '/LOG:  duration: .* plan:/ {p=1} /LOG:  duration: .*(statement|execute)/ {p=0} /DETAIL:  Parameters/ {print; next} p' |
	grep -v '^\s*$'
echo
echo "== the same bucket filter written with = (what an index on _jsonb->'bucket' serves)"
echo "EXPLAIN SELECT _jsonb FROM pushdown.\"$table\" WHERE _jsonb->'bucket' = '7'" | psql -d ferretdb
echo "== and with FerretDB's @>"
echo "EXPLAIN SELECT _jsonb FROM pushdown.\"$table\" WHERE _jsonb->'bucket' @> '7'" | psql -d ferretdb
