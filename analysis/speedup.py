"""Speedup tables: per group, each arm's Kaplan-Meier median grok step with its interval, its
grok rate k/n, and the speedup `median(baseline) / median(arm)`.

Grok steps are right-censored at the budget (`grokray_analysis.survival`). A median is *censored*
when
half or more of the runs never grokked: it is only known to exceed the largest follow-up time T.
Then the speedup is a bound, never a number:
- baseline censored, arm not: `> T_base / median(arm)` (a lower bound, `kind="lower"`);
- arm censored, baseline not: `< median(base) / T_arm` (an upper bound, `kind="upper"`);
- both censored: undefined (`kind="none"`).
Interval of the ratio: each median gets a Brookmeyer-Crowley interval at level sqrt(0.95)
(97.47%); the ratio interval is [base_lo / arm_hi, base_hi / arm_lo]. The two medians come from
independent runs, so both intervals cover with probability >= 0.95 and then so does the ratio's
(a conservative interval; an unbounded median end gives an unbounded ratio end). `failed` runs
are left out and counted; `diverged` runs are censored at the budget (they never grokked).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from grokray_analysis.errors import AnalysisError
from grokray_analysis.load import require_arms, require_columns
from grokray_analysis.survival import KMMedian, durations, km_median

ABLATION_ARMS = ("mlp", "mlp+grokfast", "forge", "forge+grokfast")
"""The papers' 4-way matched-budget ablation, in its column order."""

RATIO_LEVEL = math.sqrt(0.95)
"""Level of each median's interval in the ratio interval (joint coverage >= 0.95)."""


@dataclass(frozen=True)
class SpeedupRow:
    """One (group, arm) cell of a speedup table."""

    group: str
    """Value of the `by` column (a group name by default)."""
    arm: str
    """The arm."""
    n: int
    """Runs counted (grokked, not_grokked, diverged)."""
    k: int
    """Runs that grokked."""
    n_failed: int
    """Runs that failed (left out)."""
    median: float
    """Kaplan-Meier median grok step; inf when censored (larger than `max_time`)."""
    median_ci: tuple[float, float]
    """95% Brookmeyer-Crowley interval of the median (hi inf when unbounded)."""
    max_time: float
    """Largest follow-up time of the cell's runs: a censored median is larger than this."""
    speedup: float
    """median(baseline) / median(arm), or the bound (see `kind`); NaN when undefined."""
    speedup_ci: tuple[float, float]
    """>= 95% interval of the speedup (product of two sqrt(0.95) median intervals)."""
    kind: str
    """"estimate", "lower" (speedup > value: baseline censored), "upper" (speedup < value:
    arm censored), "none" (both censored, or no runs), "baseline" (the baseline's own row)."""

    @property
    def lower_bound(self) -> bool:
        """True when `speedup` is a lower bound (the baseline's median is censored)."""
        return self.kind == "lower"


@dataclass(frozen=True)
class SpeedupTable:
    """Speedup of every arm against a baseline, per group."""

    baseline: str
    """The baseline arm."""
    by: str
    """The column rows are grouped by."""
    arms: tuple[str, ...]
    """Arms in display order (the 4-way ablation order first)."""
    rows: tuple[SpeedupRow, ...]
    """One row per (group, arm) present."""


def ablation_order(arms: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The 4-way ablation arms first in their paper order, then the rest sorted."""
    known = [a for a in ABLATION_ARMS if a in arms]
    return tuple(known + sorted(a for a in arms if a not in ABLATION_ARMS))


def speedup_ratio(base: KMMedian, arm: KMMedian, base_r: KMMedian, arm_r: KMMedian):
    """(speedup, (lo, hi), kind) from the two medians (95%) and the same at RATIO_LEVEL."""
    nan = float("nan")
    if base.n == 0 or arm.n == 0:
        return nan, (nan, nan), "none"
    lo = _div(base_r.lo, arm_r.hi)
    hi = _div(base_r.hi, arm_r.lo)
    if base.censored and arm.censored:
        return nan, (lo, hi), "none"
    if base.censored:
        return base.max_time / arm.median, (lo, hi), "lower"
    if arm.censored:
        return base.median / arm.max_time, (lo, hi), "upper"
    return base.median / arm.median, (lo, hi), "estimate"


def _div(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return float("nan")
    if math.isinf(b):
        return 0.0 if math.isfinite(a) else float("nan")
    return a / b if b > 0 else math.inf


def speedup_table(
    trials: pd.DataFrame,
    baseline: str,
    *,
    arms: list[str] | None = None,
    by: str = "group",
) -> SpeedupTable:
    """Per `by` value and arm: k/n, KM median grok step, and speedup vs `baseline`."""
    require_columns(trials, ["arm", by])
    all_arms = sorted(trials["arm"].unique())
    arms = list(arms) if arms else all_arms
    require_arms(trials, [baseline, *arms])
    order = ablation_order(sorted(set(arms) | {baseline}))
    rows = []
    for g, sub in trials.groupby(by, sort=True):
        dur = durations(sub)
        meds = {}
        for a in order:
            d = dur[dur["arm"] == a]
            meds[a] = (km_median(d["time"], d["event"]),
                       km_median(d["time"], d["event"], level=RATIO_LEVEL))
        for a in order:
            cell = sub[sub["arm"] == a]
            if cell.empty:
                continue
            m, m_r = meds[a]
            if a == baseline:
                ratio, ci, kind = 1.0, (float("nan"), float("nan")), "baseline"
            else:
                ratio, ci, kind = speedup_ratio(meds[baseline][0], m, meds[baseline][1], m_r)
            rows.append(
                SpeedupRow(
                    group=str(g), arm=a, n=m.n, k=m.k, n_failed=len(cell) - m.n,
                    median=m.median, median_ci=(m.lo, m.hi), max_time=m.max_time,
                    speedup=float(ratio), speedup_ci=ci, kind=kind,
                )
            )
    if not rows:
        raise AnalysisError("no rows to build a speedup table from")
    return SpeedupTable(baseline=baseline, by=by, arms=order, rows=tuple(rows))
