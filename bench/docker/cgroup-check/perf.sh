#!/usr/bin/env bash
# perf.sh: a system-wide cpu-clock profile (perf record -a -g, 499 Hz) of 20 s
# in the middle of a 60 s demo soak, on the local provider and on docker,
# then the samples per comm and dso and the kernel symbols that grew most per
# request on docker. Needs root and linux-perf. Takes /tmp/longhaul-measure.lock.
#
#   bench/docker/cgroup-check/perf.sh                # ~3 min
#   bench/docker/cgroup-check/perf.sh summarize DIR  # the summary of an earlier DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/../../.."

summarize() { # DIR with {local,docker}.data and {local,docker}.rps
	local d=$1 p
	for p in local docker; do
		echo "== $p: $(cat "$d/$p.rps") req/s, $(perf report -i "$d/$p.data" --stdio 2>/dev/null | sed -n 's/^# Samples: \([^ ]*\) of.*/\1/p' | head -1) samples"
		perf report -i "$d/$p.data" --no-children -g none --sort comm,dso --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' | head -8
		perf report -i "$d/$p.data" --no-children -g none --sort dso,sym --stdio 2>/dev/null | grep -v '^#' | grep -v '^$' >"$d/$p.sym"
	done
	python3 - "$d" <<-'PY'
	import sys
	d = sys.argv[1]
	def load(p):
	    out = {}
	    for l in open(f"{d}/{p}.sym"):
	        f = l.split()
	        if len(f) >= 4 and f[1] == "[kernel.kallsyms]":
	            out[" ".join(f[3:])] = out.get(" ".join(f[3:]), 0) + float(f[0].rstrip("%"))
	    return out
	L, D = load("local"), load("docker")
	scale = float(open(f"{d}/local.rps").read()) / float(open(f"{d}/docker.rps").read())
	rows = sorted(((D.get(s, 0) * scale - L.get(s, 0), s) for s in set(L) | set(D)), reverse=True)
	print("\nkernel symbols, % of local's samples per request: local, docker, docker − local")
	for extra, s in rows[:12]:
	    print(f"  {s[:44]:44s} {L.get(s, 0):6.2f} {D.get(s, 0) * scale:6.2f} {extra:+6.2f}")
	PY
}

if [[ ${1:-} == summarize ]]; then
	summarize "$2"
	exit
fi

work=$(mktemp -d)
go build -o "$work/longhaul" ./cmd/longhaul
exec 9>/tmp/longhaul-measure.lock
flock 9
for p in local docker; do
	LONGHAUL_DOCKER_ROUTE=netns "$work/longhaul" run scenarios/demo.yaml --provider $p --duration 60s \
		--window 5s --data "$work/data-$p" >"$work/$p.txt" 2>&1 &
	pid=$!
	sleep 35
	perf record -a -g -F 499 -o "$work/$p.data" -- sleep 20 >/dev/null 2>&1
	wait "$pid"
	grep '^summary' "$work/$p.txt" | sed -E 's/.* ([0-9.]+) req\/s.*/\1/' >"$work/$p.rps"
done
summarize "$work"
echo "(profiles in $work)"
