#!/usr/bin/env bash
# run.sh splits the docker route's remaining gap to the local provider
# (issue 9 §4: docker 0.79–0.84 of local's req/s with no proxy in the path)
# into its causes, by taking them away one at a time — for measurement only,
# none of these is something longhaul could do to a user's containers:
#
#   local           the local provider: processes in the host's root CPU cgroup, loopback
#   docker          the docker provider as it ships (route netns)
#   docker-shared   docker, with the target in the database container's
#                   network namespace (shared-netns.patch, built into a
#                   separate binary): target ↔ database over loopback instead
#                   of the run's bridge, as on the local provider
#   docker-rootcpu  docker, with the run's containers' processes moved into the
#                   root of the host's cpu cgroup hierarchy 12 s into the soak
#                   (cgroup v1: cpuacct, memory, pids stay docker's, so the
#                   probes still read them); removes per-container CPU group
#                   scheduling — and with it target.resources.cpus
#   docker-rootcpu-shared
#                   both
#
# Each soak is scenarios/demo.yaml for 60 s in 5 s windows; from 30 s to 50 s
# it counts context switches (/proc/stat), rescheduling IPIs and local timer
# interrupts (/proc/interrupts: RES, LOC) and divides by the requests of the
# windows in that span. Rounds rotate the order. Writes RESULTS.md beside it.
#
#   bench/docker/cgroup-check/run.sh          # 2 rounds × 5 variants, ~13 min
#   ROUNDS=1 bench/docker/cgroup-check/run.sh
#
# Needs root (it writes cgroup files), cgroup v1 with the cpu controller
# mounted on its own (/sys/fs/cgroup/cpu), docker with the offline images,
# PostgreSQL server binaries. Takes /tmp/longhaul-measure.lock.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$here/../../.." && pwd)
cd "$repo_root"
rounds=${ROUNDS:-2}
cpu_root=/sys/fs/cgroup/cpu
[[ -d $cpu_root/docker ]] || { echo "cgroup-check: needs cgroup v1 with docker's groups under $cpu_root/docker" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "cgroup-check: needs root (it moves processes between cgroups)" >&2; exit 2; }

work=$(mktemp -d)
cleanup() {
	git worktree remove --force "$work/shared-src" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
log() { printf '%s cgroup-check: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

log "building longhaul, and a copy with shared-netns.patch"
go build -o "$work/longhaul" ./cmd/longhaul
git worktree add --detach -q "$work/shared-src" HEAD
git -C "$work/shared-src" apply "$here/shared-netns.patch"
(cd "$work/shared-src" && go build -o "$work/longhaul-shared" ./cmd/longhaul)

snap() { # ctxt, RES and LOC, summed over CPUs
	awk '/^ctxt/{print "ctxt", $2}' /proc/stat
	awk '$1=="RES:"||$1=="LOC:"{s=0; for(i=2;i<=NF;i++) if ($i ~ /^[0-9]+$/) s+=$i; print substr($1,1,3), s}' /proc/interrupts
}

# soak VARIANT ROUND: one 60 s soak; appends a line to $work/rows.
soak() {
	local v=$1 r=$2 bin=$work/longhaul provider=docker env=()
	case $v in
	local) provider=local ;;
	*-shared) bin=$work/longhaul-shared; env=(LONGHAUL_EXPERIMENT_SHARED_NETNS=1) ;;
	esac
	local out=$work/$v-$r.json data=$work/data-$v-$r
	env "${env[@]}" LONGHAUL_DOCKER_ROUTE=netns "$bin" run scenarios/demo.yaml --provider "$provider" \
		--duration 60s --window 5s --data "$data" --format json >"$out" 2>"$work/$v-$r.err" &
	local pid=$!
	sleep 12
	if [[ $v == docker-rootcpu* ]]; then
		local id
		for id in $(docker ps -q --no-trunc --filter label=dev.longhaul.run); do
			[[ -f $cpu_root/docker/$id/cgroup.procs ]] || continue
			# cgroup.procs moves whole processes; read it until it is empty
			# (a PostgreSQL backend forked meanwhile is moved on the next pass).
			local n=0 p
			while ((n++ < 500)) && read -r p <"$cpu_root/docker/$id/cgroup.procs"; do
				echo "$p" >"$cpu_root/cgroup.procs" 2>/dev/null || true
			done
		done
	fi
	sleep 18
	snap >"$work/s0"
	sleep 20
	snap >"$work/s1"
	wait "$pid" || { log "$v round $r: longhaul failed: $(tail -3 "$work/$v-$r.err")"; return; }
	python3 - "$v" "$r" "$out" "$work/s0" "$work/s1" >>"$work/rows" <<-'PY'
	import json, sys
	v, r, out, s0, s1 = sys.argv[1:]
	a = dict(l.split() for l in open(s0)); b = dict(l.split() for l in open(s1))
	ws = [json.loads(l) for l in open(out) if l.startswith('{"index"')]
	span = ws[6:10]  # windows 30–50 s, the span the counters cover
	req = sum(w["requests"] for w in span)
	d = {k: int(b[k]) - int(a[k]) for k in a}
	print(json.dumps({"variant": v, "round": int(r), "rps": req / 20,
	                  "ctxt": d["ctxt"] / req, "res": d["RES"] / req, "loc": d["LOC"] / req}))
	PY
	log "$v round $r: $(tail -1 "$work/rows")"
}

variants=(local docker docker-shared docker-rootcpu docker-rootcpu-shared)
started=$(date -u '+%Y-%m-%d %H:%M UTC')
exec 9>/tmp/longhaul-measure.lock
flock 9
for ((r = 1; r <= rounds; r++)); do
	for ((i = 0; i < ${#variants[@]}; i++)); do
		soak "${variants[(i + r - 1) % ${#variants[@]}]}" "$r"
	done
done

python3 - "$work/rows" "$started" "$rounds" >"$here/RESULTS.md" <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1])]
started, rounds = sys.argv[2], sys.argv[3]
print(f"# Where docker's remaining gap goes — {started}, {rounds} rounds\n")
print("    bench/docker/cgroup-check/run.sh\n")
print("Per soak (60 s of scenarios/demo.yaml, counted over 30–50 s); ÷ local is against the same round's local soak.\n")
print("| round | variant | req/s | ÷ local | context switches / req | rescheduling IPIs / req | timer interrupts / req |")
print("|---|---|---|---|---|---|---|")
local = {x["round"]: x["rps"] for x in rows if x["variant"] == "local"}
for x in rows:
    ratio = x["rps"] / local[x["round"]] if x["round"] in local else float("nan")
    print(f"| {x['round']} | {x['variant']} | {x['rps']:.0f} | {ratio:.2f} | {x['ctxt']:.2f} | {x['res']:.2f} | {x['loc']:.2f} |")
print("\n## Medians per variant\n")
print("| variant | req/s ÷ local | context switches / req | rescheduling IPIs / req |")
print("|---|---|---|---|")
for v in ["local", "docker", "docker-shared", "docker-rootcpu", "docker-rootcpu-shared"]:
    xs = [x for x in rows if x["variant"] == v]
    if not xs:
        continue
    ratios = [x["rps"] / local[x["round"]] for x in xs if x["round"] in local]
    print(f"| {v} | {st.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) | {st.median(x['ctxt'] for x in xs):.2f} | {st.median(x['res'] for x in xs):.2f} |")
PY
cat "$here/RESULTS.md"
