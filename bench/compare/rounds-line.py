#!/usr/bin/env python3
"""rounds-line.py ROUNDS.json: the rounds of one comparison in one log line:
side, CPU µs per request, foreign load; and the σ of log(CPU/request) of
the rounds within each side (the round-to-round noise)."""
import json
import math
import statistics
import sys

rs = json.load(open(sys.argv[1]))
parts = [f"{r['side']}{r['pair'] + 1} {r['cpu_us_per_request']}µs f{(r['foreign_cpu'] or 0) * 100:.0f}%" for r in rs]
sig = []
for side in "AB":
    v = [math.log(r["cpu_us_per_request"]) for r in rs if r["side"] == side and r["cpu_us_per_request"] and not r.get("superseded")]
    if len(v) >= 2:
        sig.append(f"σ{side} {statistics.stdev(v) * 100:.1f}%")
print("; ".join(parts) + " | " + " ".join(sig))
