"""Coverage of every 95% interval the reproduction ledger uses, on known truth.

For each interval kind of analysis/ledger/measures.py, simulate data sets with a known true
value at the sizes the ledger's sweeps have, compute the interval as the ledger does, and count
how often it covers the truth (and how often it exists: below its minimum n an order-statistic
interval does not, and the ledger's verdict is then "too few runs"). The kinds:

- `rate`: Clopper-Pearson over runs (grokray_analysis.intervals.clopper_pearson), true rates
  0, 0.05, 0.3, 0.5 at n = 9, 36;
- `group_rate`: the rate pooled over groups with the group as the unit (`group_rate_ci`); each
  group's rate drawn from Beta(0.3, 0.3) around a mean (groups that mostly all-grok or
  all-fail), 5 seeds per group, 13 and 36 groups; the truth is the mean group rate;
- `median`: the order-statistic interval of a median (`order_median_ci`), log-normal grok steps
  read on a 50-step eval grid (each run as its bracket) and censored at a budget that censors
  about 20% of the runs ([budget, inf)), n = 6, 9, 20; also heavy-tied data (RFM iterations:
  integers);
- `ratio`: the ratio of two medians (`order_ratio_ci`, each at sqrt(0.95)), the same steps,
  true speedup 10, n = 7, 20 per arm;
- `paired`: the median of paired differences (order statistics; eff_modes), normal
  differences, n = 6, 12;
- `alpha`: the censored AFT exponent with the group as the unit: scripts/powerlaw_coverage.py
  (run it: `python scripts/powerlaw_coverage.py --group-sd 0.3 --sigma 0.2 --c 732 --alpha 0.17
  --groups ledger --seeds 5 --censored 0.2 --sims 200`);
- `threshold`: the capacity threshold's profile-likelihood interval (grokray_analysis.phase.
  threshold), P(grok) logistic in log(R*d) with its 50% point at 256 and slope 3, the CPU
  sweep's 20 (R, d) cells x 4 seeds.

    python scripts/ledger_coverage.py --sims 2000          # every kind but alpha
    python scripts/ledger_coverage.py --kinds threshold --sims 300

Prints one line per scenario: kind, scenario, coverage (of the data sets where the interval
exists), how often it exists, median width.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.stats import binom

from grokray_analysis.intervals import (
    clopper_pearson,
    clopper_pearson_all,
    group_rate_ci,
    order_median_ci,
    order_ratio_ci,
)

KINDS = ("rate", "group_rate", "median", "ratio", "paired", "threshold")


def _line(kind: str, scenario: str, hits: list[bool], exists: int, sims: int,
          widths: list[float]) -> str:
    cov = float(np.mean(hits)) if hits else math.nan
    w = float(np.median(widths)) if widths else math.nan
    return (f"{kind:10s} {scenario:44s} coverage {cov:6.3f}  exists {exists / sims:5.2f}  "
            f"median width {w:.4g}")


def rate(rng: np.random.Generator, sims: int) -> list[str]:
    out = []
    for n in (9, 36):
        for p in (0.0, 0.05, 0.3, 0.5):
            # exact: sum over k of P(k) [p in CP(k, n)]
            cov = sum(binom.pmf(k, n, p) for k, (lo, hi) in enumerate(clopper_pearson_all(n))
                      if lo <= p <= hi)
            w = np.median([np.diff(clopper_pearson(int(k), n))[0]
                           for k in rng.binomial(n, p, size=200)])
            out.append(f"{'rate':10s} {f'n {n}, p {p} (exact sum)':44s} coverage {cov:6.3f}  "
                       f"exists  1.00  median width {w:.4g}")
    return out


def group_rate(rng: np.random.Generator, sims: int) -> list[str]:
    out = []
    for G in (13, 36):
        for mean in (0.9, 0.97):
            a = 0.3
            b = a * (1 - mean) / mean
            hits, widths = [], []
            for _ in range(sims):
                p = rng.beta(a, b, size=G)
                k = rng.binomial(5, p)
                lo, hi = group_rate_ci(int(k.sum()), 5 * G, G)
                hits.append(lo <= mean <= hi)
                widths.append(hi - lo)
            out.append(_line("group_rate", f"{G} groups x 5 seeds, mean rate {mean}", hits, sims,
                             sims, widths))
    return out


def _steps(rng: np.random.Generator, n: int, median: float, sigma: float, grid: float,
           budget: float) -> tuple[np.ndarray, np.ndarray]:
    """n runs' grok steps as (lo, hi): log-normal, read on the eval grid (the first eval at or
    after the true step; lo the eval before), censored at `budget` ([budget, inf))."""
    t = median * np.exp(sigma * rng.standard_normal(n))
    hi = np.ceil(t / grid) * grid
    lo = hi - grid
    cens = t > budget
    return np.where(cens, budget, lo), np.where(cens, math.inf, hi)


def median(rng: np.random.Generator, sims: int) -> list[str]:
    out = []
    med, sigma, grid = 1500.0, 0.5, 50.0
    budget = med * math.exp(sigma * 0.8416)  # censors 20%
    for n in (5, 6, 9, 20):
        hits, widths, exists = [], [], 0
        for _ in range(sims):
            ci = order_median_ci(*_steps(rng, n, med, sigma, grid, budget))
            if ci is None:
                continue
            exists += 1
            hits.append(ci[0] <= med <= ci[1])
            widths.append(math.log(ci[1] / ci[0]) if math.isfinite(ci[1]) else math.inf)
        out.append(_line("median", f"grok steps, grid 50, 20% censored, n {n}", hits, exists,
                         sims, widths))
    for n in (6, 9):  # integer iterations, many ties: true median of Poisson(12) + 1 is 13
        hits, exists = [], 0
        for _ in range(sims):
            x = rng.poisson(12, size=n) + 1.0
            ci = order_median_ci(x)
            if ci is None:
                continue
            exists += 1
            hits.append(ci[0] <= 13.0 <= ci[1])
        out.append(_line("median", f"integer iterations (ties), n {n}", hits, exists, sims,
                         []))
    return out


def ratio(rng: np.random.Generator, sims: int) -> list[str]:
    out = []
    for n in (6, 7, 20):
        hits, widths, exists = [], [], 0
        for _ in range(sims):
            base = _steps(rng, n, 1500.0, 0.5, 50.0, 6000.0)
            arm = _steps(rng, n, 150.0, 0.5, 50.0, 6000.0)
            ci = order_ratio_ci(base[0], base[1], arm[0], arm[1])
            if ci is None:
                continue
            exists += 1
            hits.append(ci[0] <= 10.0 <= ci[1])
            widths.append(math.log(ci[1] / ci[0]) if ci[0] > 0 else math.inf)
        out.append(_line("ratio", f"speedup 10, grid 50, n {n} per arm", hits, exists, sims,
                         widths))
    return out


def paired(rng: np.random.Generator, sims: int) -> list[str]:
    out = []
    for n in (6, 12):
        hits, widths, exists = [], [], 0
        for _ in range(sims):
            d = 7.0 + 4.0 * rng.standard_normal(n)
            ci = order_median_ci(d)
            if ci is None:
                continue
            exists += 1
            hits.append(ci[0] <= 7.0 <= ci[1])
            widths.append(ci[1] - ci[0])
        out.append(_line("paired", f"differences N(7, 4^2), n {n} pairs", hits, exists, sims,
                         widths))
    return out


def threshold(rng: np.random.Generator, sims: int) -> list[str]:
    from grokray_analysis.phase import threshold as fit

    R = np.array([8, 16, 24, 32, 64])
    d = np.array([8, 12, 16, 32])
    cap = (R[:, None] * d[None, :]).ravel().repeat(4).astype(float)  # [80]
    x = np.log(cap)
    out = []
    for slope in (3.0, 10.0):
        hits, widths, exists = [], [], 0
        for _ in range(sims):
            p = 1.0 / (1.0 + np.exp(-slope * (x - math.log(256.0))))
            y = (rng.random(len(x)) < p).astype(float)
            t = fit(x, y)
            if math.isnan(t.lo) or math.isnan(t.hi):
                continue
            exists += 1
            hits.append(t.lo <= math.log(256.0) <= t.hi)
            widths.append(t.hi - t.lo)
        out.append(_line("threshold", f"R*d 256, slope {slope:g} in log(R*d), 80 runs", hits,
                         exists, sims, widths))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=2000, help="data sets per scenario")
    ap.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    for k in args.kinds:
        for line in globals()[k](rng, args.sims):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
