#!/usr/bin/env python3
"""rejudge.py re-analyses the soaks of an accuracy run (bench/accuracy/run.sh
-traces DIR) with another longhaul binary (`longhaul analyze RUN --format
json`, the same analysis a soak runs at its end) and judges each against its
variant's bar again, printing a markdown table. It is how a change to the
analysis is checked on real runs without driving them again:

    bench/accuracy/rejudge.py LONGHAUL DATA_DIR TRACES_DIR
"""
import json, subprocess, sys, glob, os, re

longhaul, data, traces = sys.argv[1:4]

def verdicts(fs):
    return [f for f in fs if f["severity"] in ("warning", "critical")]

def want(variant, fs):
    v = verdicts(fs)
    if variant in ("leak", "node-leak"):
        return any(f["kind"] == "leak" for f in v)
    if variant == "node-offheap":
        return any(f["kind"] == "leak" and f["evidence"].get("notes", {}).get("off_heap") == 1 for f in v)
    if variant == "noindex":
        return any(f["kind"] == "collapse" and f["evidence"].get("table") == "items" for f in v)
    if variant == "sqlite-noindex":
        return any(f["kind"] == "collapse" and f["evidence"].get("table") == "items" and f["evidence"].get("op") == "list" for f in v)
    return not v  # the clean twins

rows, tally = [], {}
for path in sorted(glob.glob(os.path.join(traces, "*.ndjson"))):
    m = re.match(r"(\w+)-(.+)-(\d+)\.ndjson$", os.path.basename(path))
    if not m:
        continue
    provider, variant, rnd = m.groups()
    run_id = None
    for line in open(path):
        if '"type":"report"' in line:
            run_id = json.loads(line)["run_id"]
    if not run_id:
        continue
    out = subprocess.run([longhaul, "analyze", run_id, "--data", data, "--format", "json"], capture_output=True, text=True).stdout
    fs = []
    for line in out.splitlines():
        d = json.loads(line)
        if d.get("type") == "analysis":
            fs = d.get("findings", [])
    ok = want(variant, fs)
    key = (variant, provider)
    p, n = tally.get(key, (0, 0))
    tally[key] = (p + ok, n + 1)
    desc = ", ".join(f"{f['severity']} {f['kind']}" + (f" ({f['evidence']['table']}, op {f['evidence'].get('op', '-')})" if f["evidence"].get("table") else "") for f in fs) or "none"
    rows.append(f"| {rnd} | {provider} | {variant} | {desc} | {'pass' if ok else 'FAIL'} |")

print("| variant | provider | bar met |\n|---|---|---|")
for (variant, provider), (p, n) in sorted(tally.items()):
    print(f"| {variant} | {provider} | {p}/{n} |")
print("\n| round | provider | variant | findings (re-analysed) | verdict |\n|---|---|---|---|---|")
print("\n".join(rows))
