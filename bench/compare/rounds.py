#!/usr/bin/env python3
"""rounds.py COMPARISON.json WARMUP_S DIR: one object per round of a
comparison, from DIR/<run_id>.ndjson (`longhaul report RUN --format json`
of each round, which run.sh writes): side, pair, foreign load, the round's
CPU µs per request and req/s after warm-up as analysis.RoundValuesOf counts
them, and per window the requests, CPU µs per request and foreign load — so
the round-to-round noise is read from the rounds themselves, not inferred
from the verdicts' intervals. Prints one JSON list."""
import datetime
import json
import os
import sys


def ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))


comp = json.load(open(sys.argv[1]))
warmup = float(sys.argv[2])
out = []
for r in comp.get("rounds") or []:
    path = os.path.join(sys.argv[3], r["run_id"] + ".ndjson")
    ws = []
    if os.path.exists(path):
        for line in open(path):
            o = json.loads(line)
            if "type" not in o and "start" in o:
                ws.append(o)
    rows = []
    cpu = reqs = dur = 0.0
    first = ts(ws[0]["start"]) if ws else None
    for k, w in enumerate(ws):
        p = w.get("probes") or {}
        n = w.get("requests", 0)
        d = (ts(w["end"]) - ts(w["start"])).total_seconds()
        c = p.get("cpu_seconds")
        if c is None and p.get("cpu_us_per_request") is not None:
            c = p["cpu_us_per_request"] * n / 1e6
        rows.append({"i": w.get("index"), "req": n, "cpu_us": round(c * 1e6 / n, 1) if c and n else None,
                     "foreign": p.get("host_foreign_cpu")})
        # Warm-up as RoundValuesOf: windows starting within warmup of the
        # first, and at least the first.
        if k == 0 or (ts(w["start"]) - first).total_seconds() < warmup:
            continue
        if c and n:
            cpu += c
            reqs += n
            dur += d
    out.append({"index": r["index"], "pair": r["pair"], "side": r["side"], "foreign_cpu": r.get("foreign_cpu"),
                "disturbed": r.get("disturbed"), "superseded": r.get("superseded", False),
                "cpu_us_per_request": round(cpu * 1e6 / reqs, 2) if reqs else None,
                "rps": round(reqs / dur, 1) if dur else None, "windows": rows})
json.dump(out, sys.stdout)
print()
