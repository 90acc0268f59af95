#!/usr/bin/env bash
# Change-point accuracy on simulated nightly series (issue 13's bar): the
# test TestChangePointAccuracy in package analysis with thousands of seeds
# instead of the test's 200. Prints the table it records in RESULTS.md.
#
#   bench/changepoint/run.sh            # 5000 seeds (about a minute)
#   SEEDS=20000 bench/changepoint/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
seeds=${SEEDS:-5000}
exec flock /tmp/longhaul-measure.lock \
	env LONGHAUL_CP_SEEDS="$seeds" go test ./analysis -run '^TestChangePointAccuracy$' -count=1 -v
