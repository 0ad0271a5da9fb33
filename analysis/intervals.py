"""95% intervals for values that are not censored durations: rates and medians.

- `clopper_pearson(k, n)`: the exact binomial interval of a rate k/n; `clopper_pearson_all(n)`
  the same for every k = 0..n at once;
- `group_rate_ci(k, n, groups)`: the interval of a rate pooled over several groups when a
  group's runs may all go one way (Clopper-Pearson with the groups, not the runs, as the count);
- `median_ci(x, strata=...)`: the median and a percentile bootstrap interval (Wedderburn
  fractions, axiom leads, grokking delays, invariant drifts); with `strata` (each value's group)
  the resamples draw within each group, so every resample holds each group's share of runs;
- `median_ratio_ci(num, den)`: median(num) / median(den) of two independent samples and the
  percentile interval of the same ratio over bootstrap resamples of each;
- `order_median_ci(lo, hi)`: the distribution-free interval of a median from order statistics
  (the binomial distribution of the count below the median), exact at every n, with each run
  known only to lie in [lo, hi] (a grok step between two evals, a run censored at its budget:
  [budget, inf)); None below `ORDER_MIN_N` runs, where no such interval reaches 95%;
- `order_ratio_ci(num, den)`: the ratio of two independent medians, from the two medians'
  order-statistic intervals at sqrt(0.95) each (their rectangle covers both with probability
  >= 0.95, so the ratio's interval does too).

The ledger uses the exact ones (Clopper-Pearson and the order-statistic intervals), whose
coverage holds at the 2-6 runs a CPU sweep has (scripts/ledger_coverage.py checks every one on
known truth); the bootstrap ones stay for analyses that have many runs.

Every bootstrap draws `n_boot` resamples (with replacement) from one seeded generator, so the
same data always give the same interval. Censored durations (grok steps) have their own
estimators in grokray_analysis.survival and grokray_analysis.speedup.
"""

from __future__ import annotations

import math

import numpy as np

N_BOOT = 2000
"""bootstrap resamples"""
SEED = 0
"""seed of the bootstrap generator"""
NAN2 = (math.nan, math.nan)
"""the interval of a value that cannot be computed"""


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    """Exact 95% interval of the rate k/n (NaN for n = 0)."""
    from scipy.stats import binomtest

    if n == 0:
        return NAN2
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)


def clopper_pearson_all(n: int) -> list[tuple[float, float]]:
    """`clopper_pearson(k, n)` for every k = 0..n, from the beta quantiles that define it in
    one vectorized call (root-finding each k is slow where thousands are needed: the ledger's
    search for the n a rate claim would need)."""
    from scipy.stats import beta

    k = np.arange(n + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(k == 0, 0.0, beta.ppf(0.025, k, n - k + 1))
        hi = np.where(k == n, 1.0, beta.isf(0.025, k + 1, n - k))
    return list(zip(lo.tolist(), hi.tolist(), strict=True))


def order_rank(n: int, level: float = 0.95) -> int:
    """The largest k with P(Bin(n, 1/2) <= k - 1) <= (1 - level) / 2: [x_(k), x_(n-k+1)] is
    then an interval for the median with coverage 1 - 2 P(Bin(n, 1/2) <= k - 1) >= level; 0 when
    no k >= 1 reaches `level` (n too small)."""
    from scipy.stats import binom

    k = 0
    while k + 1 <= (n + 1) // 2 and 2.0 * binom.cdf(k, n, 0.5) <= 1.0 - level:
        k += 1
    return k


def order_min_n(level: float = 0.95) -> int:
    """The fewest runs whose order statistics give a `level` interval for a median."""
    n = 1
    while order_rank(n, level) == 0:
        n += 1
    return n


ORDER_MIN_N = order_min_n(0.95)
"""6: with 5 runs the widest interval, [min, max], covers the median with probability 15/16"""
RATIO_LEVEL = math.sqrt(0.95)
"""each median's level in a ratio of two independent medians (0.9747: the rectangle >= 0.95)"""
RATIO_MIN_N = order_min_n(RATIO_LEVEL)
"""7: the fewest runs per arm for a ratio of medians at 95%"""


def order_median_ci(lo: np.ndarray, hi: np.ndarray | None = None,
                    level: float = 0.95) -> tuple[float, float] | None:
    """The order-statistic interval [x_(k), x_(n-k+1)] of the median of n runs (`order_rank`),
    each run's value known to lie in [lo_i, hi_i] (hi None: known exactly): the lower end is the
    k-th smallest lo, the upper the k-th largest hi, so the interval holds the one of the true
    values and covers the median with probability >= `level` whatever the distribution (ties,
    discrete grids, censoring: a run censored at budget b has [b, inf)). None when n is too
    small for any such interval (`order_min_n`)."""
    lo = np.sort(np.asarray(lo, dtype=float))
    hi = lo if hi is None else np.sort(np.asarray(hi, dtype=float))
    k = order_rank(len(lo), level)
    if k == 0:
        return None
    return float(lo[k - 1]), float(hi[len(hi) - k])


def order_ratio_ci(num_lo: np.ndarray, num_hi: np.ndarray, den_lo: np.ndarray,
                   den_hi: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    """Interval of median(num) / median(den) for two independent samples of positive values
    (each run in [lo, hi] as in `order_median_ci`): each median's order-statistic interval at
    sqrt(level), then [num_lo / den_hi, num_hi / den_lo]. None when either sample is too small.
    """
    a = order_median_ci(num_lo, num_hi, math.sqrt(level))
    b = order_median_ci(den_lo, den_hi, math.sqrt(level))
    if a is None or b is None:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = a[0] / b[1] if math.isfinite(b[1]) else 0.0
        hi = a[1] / b[0] if b[0] > 0 else math.inf
    return float(lo), float(hi)


def group_rate_ci(k: int, n: int, groups: int) -> tuple[float, float]:
    """95% interval of the pooled rate k/n of runs spread over `groups` groups, with the group as
    the unit: the runs of one group share the group (a group where FORGE groks tends to grok in
    every seed; one where the MLP fails, fails in every seed), so in the worst case a group is
    one observation. Clopper-Pearson at n_eff = groups and k_eff = groups * k / n (the beta
    quantiles take a fractional k): exact when every group's runs agree, conservative otherwise.
    One group: the runs' own interval (its seeds are the replicates)."""
    from scipy.stats import beta

    if n == 0:
        return NAN2
    if groups <= 1:
        return clopper_pearson(k, n)
    ke, ne = groups * k / n, float(groups)
    lo = 0.0 if ke <= 0 else float(beta.ppf(0.025, ke, ne - ke + 1))
    hi = 1.0 if ke >= ne else float(beta.ppf(0.975, ke + 1, ne - ke))
    return lo, hi


def _boot_medians(x: np.ndarray, rng: np.random.Generator, n_boot: int,
                  strata: np.ndarray | None = None) -> np.ndarray:
    """[n_boot] medians of resamples of x (within each stratum when `strata` is given)."""
    if strata is None:
        return np.median(rng.choice(x, size=(n_boot, len(x)), replace=True), axis=1)
    parts = [rng.choice(x[strata == s], size=(n_boot, int((strata == s).sum())), replace=True)
             for s in np.unique(strata)]
    return np.median(np.concatenate(parts, axis=1), axis=1)


def _percentile(boot: np.ndarray) -> tuple[float, float]:
    lo, hi = np.quantile(boot, [0.025, 0.975], method="inverted_cdf")
    return float(lo), float(hi)


def median_ci(x: np.ndarray, n_boot: int = N_BOOT, seed: int = SEED,
              strata: np.ndarray | None = None) -> tuple[float, tuple[float, float]]:
    """Median of x and its 95% percentile bootstrap interval (NaN for no values). `strata`: the
    group of each value; resampled within groups, the interval is conditional on these groups
    (the runs are the replicates; a handful of groups cannot carry a group-unit interval)."""
    if not len(x):
        return math.nan, NAN2
    x = np.asarray(x)
    boot = _boot_medians(x, np.random.default_rng(seed), n_boot,
                         None if strata is None else np.asarray(strata).astype(str))
    return float(np.median(x)), _percentile(boot)


def median_ratio_ci(num: np.ndarray, den: np.ndarray, n_boot: int = N_BOOT,
                    seed: int = SEED) -> tuple[float, tuple[float, float]]:
    """median(num) / median(den) and its 95% percentile bootstrap interval (each sample
    resampled on its own; a zero median gives inf, 0/0 NaN)."""
    if not len(num) or not len(den):
        return math.nan, NAN2
    rng = np.random.default_rng(seed)
    b_den = _boot_medians(den, rng, n_boot)
    b_num = _boot_medians(num, rng, n_boot)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = float(np.median(num) / np.median(den))
        return ratio, _percentile(b_num / b_den)
