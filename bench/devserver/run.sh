#!/usr/bin/env bash
# Measures how long the embedded Temporal server takes from Start to
# "frontend accepting and worker polling" (requirement: < 5 s), on a new
# database file and on an existing one (a restart), with devserver's
# BenchmarkReady. Usage: bench/devserver/run.sh [ROUNDS]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${1:-5}"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -n) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
go test -vet=off -run '^$' -bench BenchmarkReady -benchtime "${rounds}x" -count 1 ./devserver/ | grep -E '^(Benchmark|goos|cpu)'
