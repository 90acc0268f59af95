#!/bin/sh
# Measures how late PostgreSQL's cumulative statistics (pg_stat_user_tables)
# are behind the activity they count, on a private cluster: the basis of
# probes.DefaultDatabaseDelay. Prints one line: mean, p50, p90 and max lag.
# Needs the PostgreSQL server binaries (/usr/lib/postgresql/*/bin). ~20 s.
set -eu
cd "$(dirname "$0")/.."
LONGHAUL_MEASURE=1 go test -run '^TestPGStatFlushLag$' -count=1 -v ./probes/ | grep -E 'lag|ok|FAIL|SKIP'
