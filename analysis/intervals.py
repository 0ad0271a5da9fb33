"""95% intervals for values that are not censored durations: rates and medians.

- `clopper_pearson(k, n)`: the exact binomial interval of a rate k/n;
- `group_rate_ci(k, n, groups)`: the interval of a rate pooled over several groups when a
  group's runs may all go one way (Clopper-Pearson with the groups, not the runs, as the count);
- `median_ci(x, strata=...)`: the median and a percentile bootstrap interval (Wedderburn
  fractions, axiom leads, grokking delays, invariant drifts); with `strata` (each value's group)
  the resamples draw within each group, so every resample holds each group's share of runs;
- `median_ratio_ci(num, den)`: median(num) / median(den) of two independent samples and the
  percentile interval of the same ratio over bootstrap resamples of each.

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
