#!/usr/bin/env bash
# sequential.sh: the simulated accuracy of the sequential comparison rule
# (issue 28; docs/statistics-sequential.md) at the noise measured on this
# machine — 4,000 sequential A-vs-A comparisons per noise level, power on
# +30 % and +15 % CPU per request. The same tests run with -short in CI
# (400 comparisons); this runs the full counts and prints the table lines.
#
#   bench/compare/sequential.sh                          # ≈ 15 s of CPU
#   ANALYSIS_SEED_OFFSET=100000 bench/compare/sequential.sh   # other seeds
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
echo "# $(date -u +%Y-%m-%dT%H:%MZ) go test -count=1 -run TestSequential -v ./analysis/ (ANALYSIS_SEED_OFFSET=${ANALYSIS_SEED_OFFSET:-0})"
go test -count=1 -timeout 30m -run 'TestSequentialFamilyAA|TestSequentialPower' -v ./analysis/ | grep -E 'sequential_sim_test|^(ok|FAIL|---)'
