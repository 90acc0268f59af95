#!/usr/bin/env python3
"""Reference values for analysis/stats_test.go, computed independently of the Go code.

Standard library only (no SciPy on the build machines). The Mann-Kendall exact
p-values come from enumerating every permutation (n <= 9), not from the
recurrence the Go code uses; the normal approximations follow Gilbert (1987)
section 16.4 literally. Run: python3 analysis/testdata/stats_reference.py
"""
import itertools
import math


def mk_s(y):
    n = len(y)
    return sum((y[j] > y[i]) - (y[j] < y[i]) for i in range(n) for j in range(i + 1, n))


def mk_exact(y):
    """One-sided exact p-values by enumerating all permutations of ranks (no ties)."""
    n = len(y)
    s = mk_s(y)
    up = down = 0
    total = 0
    for perm in itertools.permutations(range(n)):
        sp = mk_s(perm)
        total += 1
        up += sp >= s
        down += sp <= s
    return s, up / total, down / total


def mk_normal(y):
    n = len(y)
    s = mk_s(y)
    var = n * (n - 1) * (2 * n + 5)
    for v in set(y):
        t = y.count(v)
        if t > 1:
            var -= t * (t - 1) * (2 * t + 5)
    var /= 18.0
    sd = math.sqrt(var)
    p_up = 0.5 * math.erfc(((s - 1) / sd) / math.sqrt(2))
    p_down = 0.5 * math.erfc(-((s + 1) / sd) / math.sqrt(2))
    z = 0.0 if s == 0 else (s - (1 if s > 0 else -1)) / sd
    return s, var, z, p_up, p_down


def hamed_rao(y):
    """Hamed & Rao (1998): variance of S inflated by the significant lag
    autocorrelations of the ranks of the Sen-detrended series (never below 1)."""
    from statistics import NormalDist
    n = len(y)
    s, var, _, _, _ = mk_normal(y)
    idx = list(range(1, n + 1))
    b, _ = theil_sen(idx, y)
    r = ranks([yi - b * i for yi, i in zip(y, idx)])
    m = sum(r) / n
    d = [v - m for v in r]
    den = sum(v * v for v in d)
    bound = NormalDist().inv_cdf(0.975) / math.sqrt(n)
    acc = 0.0
    for k in range(1, n):
        rho = sum(d[i] * d[i + k] for i in range(n - k)) / den
        if abs(rho) > bound:
            acc += (n - k) * (n - k - 1) * (n - k - 2) * rho
    f = max(1.0, 1 + 2 / (n * (n - 1) * (n - 2)) * acc)
    var *= f
    sd = math.sqrt(var)
    p_up = 0.5 * math.erfc(((s - 1) / sd) / math.sqrt(2))
    p_down = 0.5 * math.erfc(-((s + 1) / sd) / math.sqrt(2))
    return s, f, var, p_up, p_down


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def theil_sen(x, y):
    slopes = [(y[j] - y[i]) / (x[j] - x[i]) for i in range(len(x)) for j in range(i + 1, len(x)) if x[j] != x[i]]
    b = median(slopes)
    a = median([yi - b * xi for xi, yi in zip(x, y)])
    return b, a


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(x, y):
    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy)


def quantile7(v, q):
    v = sorted(v)
    h = q * (len(v) - 1)
    lo = math.floor(h)
    if lo >= len(v) - 1:
        return v[-1]
    return v[lo] + (h - lo) * (v[lo + 1] - v[lo])


if __name__ == "__main__":
    for y in ([1, 2, 3, 4], [1, 2, 3, 4, 5], [3, 1, 4, 5, 9, 2, 6], [10, 12, 11, 14, 13, 15, 17, 16]):
        s, up, down = mk_exact(y)
        print("mk exact", y, "S=%d PUp=%.12g PDown=%.12g" % (s, up, down))
    for y in (
        [5, 5, 6, 6, 6, 7, 8, 8, 9, 9, 10, 10],
        [0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 2, 5, 8, 7, 9, 12],
        [float(i % 7) + i * 0.1 for i in range(50)],
        [math.sin(i) for i in range(60)],
    ):
        s, var, z, up, down = mk_normal(y)
        print("mk normal", y if len(y) < 20 else "len=%d" % len(y), "S=%d Var=%.12g Z=%.12g PUp=%.12g PDown=%.12g" % (s, var, z, up, down))
    for name, y in (
        ("trend+wave", [0.05 * i + math.sin(i / 3) for i in range(40)]),
        ("zigzag", [i + (3 if i % 2 else 0) for i in range(30)]),
    ):
        s, f, var, up, down = hamed_rao(y)
        print("hamed-rao", name, "S=%d factor=%.12g Var=%.12g PUp=%.12g PDown=%.12g" % (s, f, var, up, down))
    for x, y in (([1, 2, 3, 4, 5], [1, 2, 3, 4, 100]), ([0, 1, 2, 3, 4, 5, 6], [2, 4.1, 5.9, 8.2, 10, 30, 14])):
        b, a = theil_sen(x, y)
        print("theil-sen", x, y, "slope=%.12g intercept=%.12g" % (b, a))
    for x, y in (([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]), ([1, 2, 2, 3, 4, 5], [2, 1, 4, 4, 6, 5])):
        print("spearman", x, y, "rho=%.12g" % spearman(x, y))
    v = [7, 1, 3, 9, 4, 4, 10, 2]
    for q in (0, 0.25, 0.5, 0.9, 1):
        print("quantile7", v, q, "%.12g" % quantile7(v, q))
