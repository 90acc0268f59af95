#!/usr/bin/env python3
"""judge.py TRACES NPROC SETTINGS: judges the comparison objects run.sh wrote
(TRACES/<experiment>-<i>.json and .exit) against issue 11's accuracy bar and
prints RESULTS.md on stdout."""
import glob
import json
import os
import re
import statistics
import sys

if sys.argv[1] == "--sigmas":
    traces, nproc, settings = sys.argv[2], "", ""
else:
    traces, nproc, settings = sys.argv[1], sys.argv[2], sys.argv[3]

METRICS = ["p50_ms", "p95_ms", "p99_ms", "rps", "cpu_us_per_request", "heap_bytes", "rss_bytes", "rows_read_per_request"]


def load(exp):
    out = []
    paths = [p for p in glob.glob(os.path.join(traces, exp + "-*.json"))
             if re.fullmatch(re.escape(exp) + r"-\d+\.json", os.path.basename(p))]
    for path in sorted(paths, key=lambda p: int(p.rsplit("-", 1)[1][:-5])):
        code = int(open(path[:-5] + ".exit").read().strip() or -1)
        try:
            obj = json.load(open(path))
        except (json.JSONDecodeError, OSError):
            obj = None
        out.append((code, obj))
    return out


def verdict(obj, metric):
    for v in obj.get("verdicts") or []:
        if v["metric"] == metric:
            return v
    return None


# Student's t, 97.5 % quantile, by degrees of freedom.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}

# The round-to-round noise analysis/paired_sim_test.go's profiles assume
# (sigma of log(value)); the measured sigmas below are set beside them.
SIM_SIGMA = {"p50_ms": 0.06, "p95_ms": 0.08, "p99_ms": 0.15, "rps": 0.06, "cpu_us_per_request": 0.025,
             "heap_bytes": 0.03, "rss_bytes": 0.02, "rows_read_per_request": 0.01}


def round_sigma(v):
    """The round-to-round sigma of log(value) behind a verdict's interval:
    the pairs' log-ratios have sd = half-width * sqrt(n) / t, and each is a
    difference of two rounds, so sigma = sd / sqrt(2)."""
    import math
    n = v["pairs"]
    if v.get("sd"):  # recorded since the verdicts pool noise: the pairs' own sd
        return v["sd"] / math.sqrt(2) if n >= 2 else None
    if n < 2 or v["ci"][0] <= 0 or v["ratio"] <= 0:
        return None
    hl = math.log(v["ci"][1]) - math.log(v["ratio"])
    return hl * math.sqrt(n) / T975.get(n - 1, 2.0) / math.sqrt(2)


def pct_(r):
    return f"{(r - 1) * 100:+.1f} %"


def foreign(obj):
    vals = [r["foreign_cpu"] for r in obj.get("rounds") or [] if not r.get("superseded")]
    return statistics.mean(vals) if vals else 0


def reruns(obj):
    """Pairs rerun because a round was disturbed (superseded rounds / 2)."""
    return sum(1 for r in obj.get("rounds") or [] if r.get("superseded")) // 2


def loadavg(exp, i):
    """The 1-minute load average before and after the comparison (run.sh's .load file)."""
    try:
        ls = open(os.path.join(traces, f"{exp}-{i}.load")).read().split("\n")
        return "→".join(l.split()[1] for l in ls if l.strip())
    except (OSError, IndexError):
        return ""


def rounds_sigma(exp):
    """The round-to-round σ of log(CPU µs per request) read from the rounds
    themselves (run.sh's .rounds.json): per comparison and side, the sample
    standard deviation over its current rounds; the median over all of them."""
    import math
    sig = []
    for path in glob.glob(os.path.join(traces, exp + "-*.rounds.json")):
        try:
            rs = json.load(open(path))
        except (OSError, json.JSONDecodeError):
            continue
        for side in "AB":
            v = [math.log(r["cpu_us_per_request"]) for r in rs
                 if r["side"] == side and r.get("cpu_us_per_request") and not r.get("superseded")]
            if len(v) >= 2:
                sig.append(statistics.stdev(v))
    return statistics.median(sig) if sig else None


if sys.argv[1] == "--sigmas":
    # metric=σ for bench/compare/power: the largest of the medians over the
    # A-vs-A experiments, per metric.
    best = {}
    for exp in ("aa-local", "aa-docker"):
        per = {}
        for code, obj in load(exp):
            for v in (obj or {}).get("verdicts") or []:
                sg = round_sigma(v)
                if sg is not None:
                    per.setdefault(v["metric"], []).append(sg)
        for m, vals in per.items():
            best[m] = max(best.get(m, 0), statistics.median(vals))
    print(",".join(f"{m}={v:.4f}" for m, v in sorted(best.items())))
    sys.exit(0)

lines = []
w = lines.append
w("# Comparison accuracy (issue 11)")
w("")
w("`bench/compare/run.sh` (" + settings + "), under `flock /tmp/longhaul-measure.lock`: `longhaul compare")
w("--format json` of the demo target (bench/compare/demo-{local,docker}.yaml: parse-mix requests, 8 VUs,")
kv = dict(x.split("=") for x in settings.split() if "=" in x)
w(f"SQLite per process), {kv.get('PAIRS', '3')} pairs of {kv.get('ROUND', '10s')} rounds in 1 s windows, 2 s warm-up, ABBA order, 200-request")
w("equivalence check, on a " + nproc + "-core machine shared with other jobs.")
if kv.get("DISTURBED", "off") == "off":
    w("`--disturbed-above off`: no round is marked disturbed; the mean foreign load of each comparison's rounds is listed.")
else:
    w(f"`--disturbed-above {kv['DISTURBED']}`" + (" `--rerun-disturbed`" if kv.get("RERUN") else "") +
      ": a round whose foreign load (CPU busy with neither the target nor longhaul) is above that share of the host"
      " is disturbed and its pair rerun (at most --pairs reruns); the foreign load listed is the mean of the"
      " comparison's current rounds, reruns the pairs rerun, load the 1-minute load average before → after.")
w("Each comparison object is in traces/ (NAME-I.json), with its rounds' values and windows (NAME-I.rounds.json).")
w("")

summary = []


def aa(exp, title):
    runs = load(exp)
    if not runs:
        return
    w(f"## {title}")
    w("")
    w("| # | exit | equivalence | foreign CPU | reruns | load | " + " | ".join(METRICS) + " |")
    w("|---|---|---|---|---|---|" + "---|" * len(METRICS))
    ok = 0
    eq_ok = 0
    noise = {m: [] for m in METRICS}
    sigma = {m: [] for m in METRICS}
    for i, (code, obj) in enumerate(runs, 1):
        if obj is None or obj.get("type") != "comparison":
            w(f"| {i} | {code} | (no result) | | | | " + " | ".join("" for _ in METRICS) + " |")
            continue
        cells = []
        false = False
        for m in METRICS:
            v = verdict(obj, m)
            if v is None:
                cells.append("-")
                continue
            if v["outcome"] in ("better", "worse"):
                false = True
            cell = v["outcome"]
            sg = round_sigma(v)
            if sg is not None:
                sigma[m].append(sg)
            if v["ci"][0] > 0:
                half = max(v["ci"][1] - 1, 1 - v["ci"][0])
                noise[m].append(half)
                cell += f" (±{half * 100:.1f} %" + (f", pooled {v['pooled_from']}" if v.get("pooled_from") else "") + ")"
            cells.append(cell)
        eq = obj["equivalence"]["status"]
        if eq == "identical":
            eq_ok += 1
        if not false and code == 0 and obj["status"] == "completed":
            ok += 1
        w(f"| {i} | {code} | {eq} | {foreign(obj) * 100:.0f} % | {reruns(obj)} | {loadavg(exp, i)} | " + " | ".join(cells) + " |")
    w("")
    w(f"**{ok}/{len(runs)}** comparisons completed without a false better/worse; equivalence identical **{eq_ok}/{len(runs)}**.")
    w("")
    w("Noise floor (median half-width of the 95 % interval of B/A over the comparisons, where measured;"
      " the intervals hold jointly over the metrics, and \"pooled N\" marks those that pooled the noise of N earlier"
      " comparisons): " +
      ", ".join(f"{m} ±{statistics.median(v) * 100:.1f} %" for m, v in noise.items() if v) + ".")
    w("")
    w("Round-to-round noise (σ of log(value), median over the comparisons) against what the simulation")
    w("in analysis/paired_sim_test.go assumes: " + ", ".join(
        f"{m} {statistics.median(v) * 100:.1f} % (sim {SIM_SIGMA[m] * 100:.1f} %)" for m, v in sigma.items() if v) + ".")
    rs = rounds_sigma(exp)
    if rs is not None:
        w(f"From the rounds themselves (σ of log CPU µs per request over each side's rounds, median): {rs * 100:.1f} %.")
    w("")
    summary.append((title, f"{ok}/{len(runs)} no false verdict; identical {eq_ok}/{len(runs)}"))


aa("aa-local", "A vs A, local provider")

def burn(exp, pct, bar, provider="local"):
    runs = load(exp)
    if not runs:
        return
    cal = ""
    try:
        name = "calibration.txt" if provider == "local" else f"calibration-{provider}.txt"
        base = float(open(os.path.join(traces, name)).read().split()[0])
        cal = (f"A's CPU per request measured {base:.1f} µs (the first A/A comparison's rounds after warm-up);"
               f" B runs with DEMO_CPU_BURN_US={round(base * pct / 100)} (+{pct} %).")
    except (OSError, ValueError, IndexError):
        pass
    first = next((o for _, o in runs if o), {})
    plan = f"{first.get('pairs', '?')} pairs of {first.get('round_duration_s', 0):g} s rounds"
    w(f"## CPU per request +{pct} %, {provider} provider, {plan}" + ("" if bar else " (beside the bar)"))
    w("")
    w(cal)
    w("")
    w("| # | exit | cpu_us_per_request | B/A | 95 % CI | pairs B better | other metrics | foreign CPU | reruns | load |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    ok = 0
    for i, (code, obj) in enumerate(runs, 1):
        if obj is None or obj.get("type") != "comparison":
            w(f"| {i} | {code} | (no result) | | | | | |")
            continue
        v = verdict(obj, "cpu_us_per_request")
        others = ", ".join(f"{x['metric']} {x['outcome']}" for x in obj["verdicts"]
                           if x["metric"] != "cpu_us_per_request" and x["outcome"] in ("better", "worse")) or "none better/worse"
        if v and v["outcome"] == "worse":
            ok += 1
        ci = f"[{pct_(v['ci'][0])}, {pct_(v['ci'][1])}]" if v["ci"][0] > 0 else "-"
        reason = f" ({v['reason']})" if v.get("reason") else ""
        if v.get("pooled_from"):
            reason += f" [pooled with {v['pooled_from']} earlier, {v['df']} df]"
        w(f"| {i} | {code} | {v['outcome']}{reason} | {pct_(v['ratio'])} | {ci} | {v['pairs_b_better']}/{v['pairs']} | {others} | {foreign(obj) * 100:.0f} % | {reruns(obj)} | {loadavg(exp, i)} |")
    w("")
    w(f"**{ok}/{len(runs)}** say worse on cpu_us_per_request.")
    w("")
    summary.append((f"CPU +{pct} %, {provider}, {plan}" + ("" if bar else " (beside the bar)"), f"{ok}/{len(runs)} worse on cpu_us_per_request"))


burn("burn-local", 15, True)
burn("burn-docker", 15, True, "docker")
burn("burn50-local", 50, False)
for path in sorted(glob.glob(os.path.join(traces, "burn-local-p*-1.json"))):
    burn(os.path.basename(path)[:-len("-1.json")], 15, False)

runs = load("variant-local")
if runs:
    w("## DEMO_RESPONSE_VARIANT=1 on B, local provider")
    w("")
    w("| # | exit | equivalence | first difference |")
    w("|---|---|---|---|")
    ok = 0
    for i, (code, obj) in enumerate(runs, 1):
        if obj is None:
            w(f"| {i} | {code} | (no result) | |")
            continue
        e = obj["equivalence"]
        d = e.get("first_difference") or {}
        good = e["status"] == "different" and d.get("op") == "list" and d.get("json_path") == "$.cursor" and code == 1
        ok += good
        where = f"request {d.get('request')}, op {d.get('op')}, {d.get('method')} {d.get('path')}, {d.get('json_path')}: A {d.get('a')}, B {d.get('b')}"
        where = where.replace("|", "\\|")
        w(f"| {i} | {code} | {e['status']} | {where} |")
    w("")
    w(f"**{ok}/{len(runs)}** say different, naming op list and $.cursor (and fail the comparison: exit 1).")
    w("")
    summary.append(("response variant, local", f"{ok}/{len(runs)} different, op list, $.cursor"))

aa("aa-docker", "A vs A, docker provider")

power = os.path.join(traces, "power.md")
if os.path.exists(power):
    w("## Simulated accuracy at the noise measured here")
    w("")
    w("`go run ./bench/compare/power -sigma …` with each metric's σ the larger of the A-vs-A medians above")
    w("(local, docker): the real verdict rule (all metrics decided together, each comparison pooling the noise")
    w("of 5 earlier ones) on 4,000 simulated comparisons per cell, ±30 % drift between pairs, a 2 % first-round")
    w("penalty under ABBA.")
    w("")
    lines.extend(open(power).read().rstrip("\n").split("\n"))
    w("")

out = ["| experiment | result |", "|---|---|"] + [f"| {t} | {r} |" for t, r in summary] + [""]
idx = next(i for i, l in enumerate(lines) if l.startswith("## "))  # the summary goes before the first section
print("\n".join(lines[:idx] + out + lines[idx:]))
