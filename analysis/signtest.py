"""Paired comparison of two arms on one metric: exact sign test and Wilcoxon signed-rank.

Runs are paired by seed (and group, or any `pair_by` columns). The difference is
`d = metric(arm_a) - metric(arm_b)`; `alternative="greater"` tests whether arm a tends to be
larger. For `grok_step` a run that did not grok is right-censored at its budget
(`grokray_analysis.survival.durations`): its grok step is larger than the budget. A pair is then
decided
by order where the budgets allow it: a run that grokked at step s is faster than a censored run
whose budget is at least s. A pair is *undecidable* when both runs are censored, or when one
grokked after the other's budget ran out; undecidable pairs are counted and reported, never
silently dropped, and the sign test uses the decided pairs. The Wilcoxon test needs the size of
each difference, so it uses only the pairs where both runs grokked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from grokray_analysis.errors import AnalysisError
from grokray_analysis.load import require_arms, require_columns
from grokray_analysis.survival import durations, km_median

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
    """Pairs with a value (or, for grok_step, a time) in both arms."""
    n_pos: int
    """Pairs decided a > b."""
    n_neg: int
    """Pairs decided a < b."""
    n_ties: int
    """Pairs with a == b, both observed (left out of the sign test, as the exact test requires)."""
    n_censored: int
    """Pairs in which at least one grok step is censored."""
    n_missing: int
    """Runs of either arm without a partner or with a missing value (not tested)."""
    median_a: float
    """Median of arm a over the pairs (grok_step: Kaplan-Meier; inf when censored)."""
    median_b: float
    """Median of arm b over the pairs."""
    p_sign: float
    """Exact binomial p-value of n_pos of n_pos + n_neg decided pairs (1.0 when none)."""
    n_wilcoxon: int
    """Pairs with both values observed, used by the Wilcoxon test."""
    w_stat: float
    """Wilcoxon statistic (scipy's; NaN when the test cannot run)."""
    p_wilcoxon: float
    """Wilcoxon signed-rank p-value (NaN when no nonzero observed difference)."""
    values_a: tuple[float, ...] = ()
    """Paired values of arm a in pair order (grok_step: the step, or the budget if censored)."""
    values_b: tuple[float, ...] = ()
    """The paired values of arm b."""
    n_undecided: int = 0
    """Pairs whose order the budgets leave open (both censored, or a grok after the other's
    budget): counted, not in the sign test."""
    observed_a: tuple[bool, ...] = ()
    """Per pair: arm a's value observed (False: censored at `values_a`)."""
    observed_b: tuple[bool, ...] = ()
    """Per pair: arm b's value observed."""
    max_a: float = float("nan")
    """Largest follow-up of arm a over the pairs (the bound when median_a is censored)."""
    max_b: float = float("nan")
    """Largest follow-up of arm b."""


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
    if metric == "grok_step":
        d = durations(df)  # failed runs drop out: no partner, counted as missing
        out = d[list(pair_by)].copy()
        out["v"], out["o"] = d["time"].astype(float), d["event"].astype(bool)
        return out
    out = df[list(pair_by)].copy()
    out["v"] = pd.to_numeric(df[metric], errors="coerce").astype(float)
    out["o"] = True
    return out


def decide(a: np.ndarray, oa: np.ndarray, b: np.ndarray, ob: np.ndarray) -> np.ndarray:
    """Per pair: +1 (a > b), -1 (a < b), 0 (tie, both observed), NaN (undecidable).

    `oa`/`ob`: the value is observed; otherwise it is a censoring time (the true value is
    larger). A censored value exceeds an observed one that is <= its censoring time.
    """
    out = np.full(len(a), np.nan)
    both = oa & ob
    out[both] = np.sign(a[both] - b[both])
    a_cens = ~oa & ob & (b <= a)  # b grokked by a's budget: a is slower
    b_cens = oa & ~ob & (a <= b)
    out[a_cens], out[b_cens] = 1.0, -1.0
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
    oa, ob = both["o_a"].to_numpy(bool), both["o_b"].to_numpy(bool)
    if len(a) == 0:
        raise AnalysisError(f"no paired runs of {arm_a!r} and {arm_b!r} on {metric!r}")
    sign = decide(a, oa, b, ob)
    n_pos, n_neg = int((sign > 0).sum()), int((sign < 0).sum())
    n_ties = int((sign == 0).sum())
    p_sign = (
        float(stats.binomtest(n_pos, n_pos + n_neg, 0.5, alternative=alternative).pvalue)
        if n_pos + n_neg > 0 else 1.0
    )
    obs = oa & ob
    d = a[obs] - b[obs]
    w_stat, p_w = float("nan"), float("nan")
    if np.any(d != 0):
        w = stats.wilcoxon(d, alternative=alternative)
        w_stat, p_w = float(w.statistic), float(w.pvalue)
    if metric == "grok_step":
        med_a, med_b = km_median(a, oa).median, km_median(b, ob).median
    else:
        med_a, med_b = float(np.median(a)), float(np.median(b))
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
        n_censored=int((~oa | ~ob).sum()),
        n_missing=n_missing,
        median_a=float(med_a),
        median_b=float(med_b),
        p_sign=p_sign,
        n_wilcoxon=int(obs.sum()),
        w_stat=w_stat,
        p_wilcoxon=p_w,
        values_a=tuple(a),
        values_b=tuple(b),
        n_undecided=int(np.isnan(sign).sum()),
        observed_a=tuple(bool(v) for v in oa),
        observed_b=tuple(bool(v) for v in ob),
        max_a=float(a.max()),
        max_b=float(b.max()),
    )
