#!/usr/bin/env bash
# run.sh measures what the SQLite probe (probes.database.sqlite) costs the
# target it reads: the demo target in its SQLite mode (WAL, indexed), driven
# by bench/accuracy/sqlite-local.yaml (open model, 300 req/s, 90 s in 3 s
# windows), with the probe on and with it off, interleaved (on, off, off, on,
# ...) so the machine's drift hits both alike. Per run it takes the median
# over the windows (warm-up excluded) of the target's CPU µs per request and
# of the p50 and p99 latency, and the probe's last reading of the file and
# WAL sizes; it prints one line per run and the on/off ratios of the medians.
#
#   flock /tmp/longhaul-measure.lock bench/sqlite-probe/run.sh [ROUNDS]
#
# ROUNDS (default 2) pairs of runs. Needs go; the local provider builds the
# demo target.
set -euo pipefail

rounds=${1:-2}
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo_root"
work=$(mktemp -d)
trap 'rm -rf "$work" bench/accuracy/.sqlite-probe-off-*.yaml' EXIT

go build -o "$work/longhaul" ./cmd/longhaul
on=bench/accuracy/sqlite-local.yaml
off=bench/accuracy/.sqlite-probe-off-$$.yaml # beside the original: its paths are relative to it
# The same scenario without the database probe (its two lines).
awk '/^  database:$/ {skip=1; next} skip && /^    sqlite:/ {skip=0; next} {skip=0; print}' "$on" >"$off"
if grep -q 'sqlite:' "$off"; then
	echo "sqlite-probe: could not remove the probe from $on" >&2
	exit 1
fi

one() { # one run: prints "mode cpu_us p50_ms p99_ms file_bytes wal_bytes"
	local mode=$1 scen=$2 out="$work/$1-$RANDOM.ndjson"
	"$work/longhaul" run "$scen" --format json --data "$work/data" >"$out" 2>"$out.err" || true
	jq -s -r --arg mode "$mode" '
		def median: sort | if length == 0 then null else .[(length / 2 | floor)] end;
		[.[] | select(.index != null and .index >= 2)] as $w
		| [$mode,
		   ([$w[] | .probes.cpu_us_per_request // empty] | median),
		   ([$w[] | .latency_ms.p50] | median),
		   ([$w[] | .latency_ms.p99] | median),
		   ([$w[] | .probes.sqlite.file_bytes // empty] | last // "-"),
		   ([$w[] | .probes.sqlite.wal_bytes // empty] | last // "-")] | @tsv' "$out"
}

printf 'mode\tcpu_us/req\tp50_ms\tp99_ms\tfile_bytes\twal_bytes\n'
results=$work/results.tsv
for ((r = 1; r <= rounds; r++)); do
	if ((r % 2)); then order="on off"; else order="off on"; fi
	for m in $order; do
		if [[ $m == on ]]; then one on "$on"; else one off "$off"; fi | tee -a "$results"
	done
done
jq -R -s -r '
	[split("\n")[] | select(length > 0) | split("\t")] as $rows
	| def med(m; i): [$rows[] | select(.[0] == m) | .[i] | tonumber] | sort | .[(length / 2 | floor)];
	  "on/off medians: cpu/req \(med("on";1) / med("off";1) * 1000 | round / 1000), p50 \(med("on";2) / med("off";2) * 1000 | round / 1000), p99 \(med("on";3) / med("off";3) * 1000 | round / 1000)"' "$results"
