"""Paired comparison of two arms on one metric: exact sign test and Wilcoxon signed-rank.

Runs are paired by seed (and group, or any `pair_by` columns). The difference is
`d = metric(arm_a) - metric(arm_b)`; `alternative="greater"` tests whether arm a tends to be
larger. For `grok_step`, a censored run (not_grokked) counts as +inf: it took longer than any
run that grokked, which the sign test can use; two censored runs are a tie. The Wilcoxon test
needs finite differences, so it uses only the pairs where both values are finite.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from analysis.errors import AnalysisError
from analysis.load import require_arms, require_columns

ALTERNATIVES = ("two-sided", "greater", "less")


@dataclass(frozen=True)
class SignTestResult:
    """Sign test and Wilcoxon signed-rank test of `metric(a) - metric(b)` over paired runs."""

    metric: str
    """The compared column."""
    arm_a: str
    """First arm (the difference is a - b)."""
    arm_b: str
    """Second arm."""
    alternative: str
    """two-sided, greater (a > b) or less (a < b)."""
    pair_by: tuple[str, ...]
    """Columns that identify a pair."""
    n_pairs: int
    """Pairs with a value in both arms (censored grok steps included as +inf)."""
    n_pos: int
    """Pairs with a > b."""
    n_neg: int
    """Pairs with a < b."""
    n_ties: int
    """Pairs with a == b (left out of the sign test, as the exact test requires)."""
    n_censored: int
    """Pairs in which at least one grok step is censored (+inf)."""
    n_missing: int
    """Runs of either arm without a partner or with a missing value (not tested)."""
    median_a: float
    """Median of the metric over the pairs, arm a (inf when censored)."""
    median_b: float
    """Median of the metric over the pairs, arm b."""
    p_sign: float
    """Exact binomial p-value of n_pos out of n_pos + n_neg at p = 0.5 (scipy.stats.binomtest)."""
    n_wilcoxon: int
    """Finite pairs used by the Wilcoxon test."""
    w_stat: float
    """Wilcoxon statistic (scipy's; NaN when the test cannot run)."""
    p_wilcoxon: float
    """Wilcoxon signed-rank p-value (NaN when fewer than one nonzero finite difference)."""
    values_a: tuple[float, ...] = ()
    """The paired values of arm a (inf: censored), in pair order."""
    values_b: tuple[float, ...] = ()
    """The paired values of arm b."""


def _values(df: pd.DataFrame, metric: str) -> pd.Series:
    if metric == "grok_step":
        return pd.Series(
            np.where(df["status"] == "not_grokked", np.inf, df["grok_step"]), index=df.index
        )
    return pd.to_numeric(df[metric], errors="coerce").astype(float)


def _arm_frame(
    trials: pd.DataFrame, arm: str, metric: str, pair_by: tuple[str, ...]
) -> pd.DataFrame:
    df = trials[trials["arm"] == arm]
    dup = df.duplicated(list(pair_by), keep=False)
    if dup.any():
        raise AnalysisError(
            f"arm {arm!r} has several runs per ({', '.join(pair_by)}); pair on more columns "
            f"(--pair-by) or filter (--where), e.g. --where group=S4"
        )
    out = df[list(pair_by)].copy()
    out["v"] = _values(df, metric)
    return out


def sign_test(
    trials: pd.DataFrame,
    metric: str,
    arm_a: str,
    arm_b: str,
    *,
    alternative: str = "two-sided",
    pair_by: tuple[str, ...] | None = None,
) -> SignTestResult:
    """Pair runs of arms a and b and test the sign of their differences on `metric`."""
    if alternative not in ALTERNATIVES:
        raise AnalysisError(f"alternative {alternative!r}: valid are {', '.join(ALTERNATIVES)}")
    if pair_by is None:
        pair_by = ("group", "seed") if "group" in trials.columns else ("seed",)
    require_columns(trials, [metric, "arm", *pair_by])
    require_arms(trials, [arm_a, arm_b])
    A = _arm_frame(trials, arm_a, metric, pair_by)
    B = _arm_frame(trials, arm_b, metric, pair_by)
    m = A.merge(B, on=list(pair_by), suffixes=("_a", "_b"), how="outer", indicator=True)
    both = m[(m["_merge"] == "both") & m["v_a"].notna() & m["v_b"].notna()]
    n_missing = int((m["_merge"] != "both").sum() + len(m[m["_merge"] == "both"]) - len(both))
    a, b = both["v_a"].to_numpy(float), both["v_b"].to_numpy(float)
    if len(a) == 0:
        raise AnalysisError(f"no paired runs of {arm_a!r} and {arm_b!r} on {metric!r}")
    gt, lt = a > b, a < b  # inf == inf is a tie, inf > finite is a win
    n_pos, n_neg = int(gt.sum()), int(lt.sum())
    n_ties = len(a) - n_pos - n_neg
    p_sign = (
        float(stats.binomtest(n_pos, n_pos + n_neg, 0.5, alternative=alternative).pvalue)
        if n_pos + n_neg > 0 else 1.0
    )
    finite = np.isfinite(a) & np.isfinite(b)
    d = a[finite] - b[finite]
    w_stat, p_w = float("nan"), float("nan")
    if np.any(d != 0):
        w = stats.wilcoxon(d, alternative=alternative)
        w_stat, p_w = float(w.statistic), float(w.pvalue)
    return SignTestResult(
        metric=metric,
        arm_a=arm_a,
        arm_b=arm_b,
        alternative=alternative,
        pair_by=tuple(pair_by),
        n_pairs=len(a),
        n_pos=n_pos,
        n_neg=n_neg,
        n_ties=n_ties,
        n_censored=int((~np.isfinite(a) | ~np.isfinite(b)).sum()),
        n_missing=n_missing,
        median_a=float(np.median(a)),
        median_b=float(np.median(b)),
        p_sign=p_sign,
        n_wilcoxon=int(finite.sum()),
        w_stat=w_stat,
        p_wilcoxon=p_w,
        values_a=tuple(a),
        values_b=tuple(b),
    )
