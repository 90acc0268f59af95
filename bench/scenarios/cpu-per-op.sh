#!/usr/bin/env bash
# cpu-per-op.sh: CPU time per call of the scenarios hot paths (Render, Check).
#
# On a shared, loaded machine the ns/op of `go test -bench` is wall-clock time
# and includes waiting for a CPU; the process's user+sys time divided by the
# iteration count is the cost itself. Each benchmark runs a fixed number of
# iterations (-benchtime Nx) in its own process, timed by /usr/bin/time.
#
#   bench/scenarios/cpu-per-op.sh            # from the repository root
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/scenarios.test" ./scenarios
cd scenarios
printf '%-24s %12s %12s %10s %s\n' benchmark iterations cpu_ns/op wall_ns/op allocs/op
for spec in BenchmarkRender:1000000 BenchmarkRenderStatic:20000000 BenchmarkCheckCapture:5000000 BenchmarkCheckNoCapture:50000000; do
	name=${spec%:*} n=${spec#*:}
	out=$(/usr/bin/time -f 'CPU %U %S' "$tmp/scenarios.test" -test.run '^$' -test.bench "^$name\$" -test.benchtime "${n}x" -test.count 1 2>&1)
	read -r user sys < <(awk '/^CPU/ {print $2, $3}' <<<"$out")
	wall=$(awk -v b="$name" '$1 ~ "^"b"(-[0-9]+)?$" {print $3}' <<<"$out")
	allocs=$(awk -v b="$name" '$1 ~ "^"b"(-[0-9]+)?$" {for (i = 1; i < NF; i++) if ($(i+1) == "allocs/op") print $i}' <<<"$out")
	cpu=$(awk -v u="$user" -v s="$sys" -v n="$n" 'BEGIN {printf "%.0f", (u + s) * 1e9 / n}')
	printf '%-24s %12s %12s %10s %s\n' "$name" "$n" "$cpu" "$wall" "$allocs"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
