"""Grok time as a right-censored measurement, and the Kaplan-Meier median (lifelines).

A run's grok step T is observed when the run grokked (an event at `grok_step`). A run that did
not grok within its budget tells us only that T is larger than the budget: it is right-censored
at its budget. That budget is `steps_run` (the last step trained, where the run stopped without
grokking); a `diverged` run stopped early because its loss blew up and will never grok, so it is
censored at the configured budget `steps` (it did not grok within the budget either; censoring it
at the step it blew up would count it as less informative than it is). `failed` runs (an
exception, no measurement) are left out and counted by the callers.

`durations(trials)` turns the trials table into (time, event) columns; `km_median(time, event)`
is the Kaplan-Meier median with its Brookmeyer-Crowley interval, both from lifelines'
`KaplanMeierFitter` (exponential Greenwood band on S(t), median read off the band). The median is
the smallest t with S(t) <= 0.5; when S stays above 0.5 (half or more of the runs censored before
every grok) the median is *censored*: it is larger than the largest follow-up time, which is
reported as its lower bound.

Resolution. A grok step is read at evals: the run grokked in (grok_step_lo, grok_step], between
the last eval below the threshold and the first at or above it (`grok_step_lo`, trials tables
since it was recorded). The analyses use the upper end, and that suffices: every bracket of a
fixed schedule is one `eval_every` wide, so the upper end over-states every run of a sweep by
less than one interval, alike in every arm (a speedup's ratio of medians and a paired sign test
compare arms on one grid); under `eval_schedule: log` every bracket is the same factor
10^(1/evals_per_decade) wide (1.12 at the default 20), so a median, and a ratio of medians, is
off by less than that factor. `median_bracket` gives the KM medians of the lower and the upper
ends: the median of the true grok times lies between them whenever every censoring time is at
or after every grok (one budget: runs that did not grok are censored at `steps`), because the
Kaplan-Meier curve is then 1 - (events <= t) / n before the budget, monotone in each event time
(T_lo <= T <= T_hi run by run). With censoring times among the grok steps (budgets pooled) this
can fail: moving an event before a censoring time changes the weight redistributed to the right.
A reading that needs more (a Turnbull interval-censored fit: lifelines' `fit_interval_censoring`)
has both ends per run.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from grokray_analysis.errors import AnalysisError

TIMED = ("grokked", "not_grokked", "diverged")
"""Statuses that carry timing information (failed runs do not)."""


def durations(trials: pd.DataFrame) -> pd.DataFrame:
    """The timed runs of `trials` with two more columns: `time` (float) and `event` (bool).

    time = grok_step for grokked runs (event True); for not_grokked runs their budget
    (`steps_run`, else `steps`) and for diverged runs the configured budget (`steps`, else
    `steps_run`), with event False; `time_lo` the lower end of a grokked run's bracket
    (`grok_step_lo`; `time` where unknown or censored). Failed runs are dropped (callers count
    them).
    Raises AnalysisError when a censored run has no budget column to be censored at.
    """
    df = trials[trials["status"].isin(TIMED)].copy()
    event = (df["status"] == "grokked").to_numpy()
    run = _col(df, "steps_run")
    cfg = _col(df, "steps")
    budget = np.where(df["status"] == "diverged", cfg.fillna(run), run.fillna(cfg))  # [n]
    time = np.where(event, pd.to_numeric(df["grok_step"], errors="coerce"), budget)
    missing = ~np.isfinite(time.astype(float))
    if missing.any():
        raise AnalysisError(
            f"{int(missing.sum())} censored run(s) have no budget to be censored at; a trials "
            "table needs `steps_run` or `steps`"
        )
    df["time"] = time.astype(float)
    df["event"] = event
    lo = _col(df, "grok_step_lo").to_numpy()  # [n]; NaN: unknown (older tables) or none
    df["time_lo"] = np.where(event & np.isfinite(lo), lo, df["time"].to_numpy())
    return df


def median_bracket(dur: pd.DataFrame, *, level: float = 0.95) -> tuple[float, float]:
    """The KM medians of the grok brackets' lower ends and of their upper ends (`durations`'
    `time_lo` and `time`): the median grok time lies between them when no run is censored
    before a grok (module doc)."""
    lo = km_median(dur["time_lo"], dur["event"], level=level).median
    return lo, km_median(dur["time"], dur["event"], level=level).median


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    if name not in df.columns:
        return pd.Series(np.nan, index=df.index, dtype=float)
    return pd.to_numeric(df[name], errors="coerce").astype(float)


@dataclass(frozen=True)
class KMMedian:
    """Kaplan-Meier median grok step of a set of runs, with its interval."""

    median: float
    """Smallest t with S(t) <= 0.5; inf when censored (not reached), NaN for no runs."""
    lo: float
    """Lower end of the interval (Brookmeyer-Crowley: where the band's lower edge reaches 0.5)."""
    hi: float
    """Upper end: where the band's upper edge reaches 0.5 (inf when it never does)."""
    level: float
    """Confidence level of [lo, hi], e.g. 0.95."""
    n: int
    """Runs (timed: grokked, not_grokked, diverged)."""
    k: int
    """Runs that grokked (events)."""
    max_time: float
    """Largest follow-up time: when the median is censored, it is larger than this."""

    @property
    def censored(self) -> bool:
        """True when the median is not reached (larger than `max_time`)."""
        return math.isinf(self.median)


def km_median(time, event, *, level: float = 0.95) -> KMMedian:
    """Kaplan-Meier median of right-censored times (lifelines), with its `level` interval."""
    t = np.asarray(time, dtype=float)
    e = np.asarray(event, dtype=bool)
    if len(t) == 0:
        nan = float("nan")
        return KMMedian(nan, nan, nan, level, 0, 0, nan)
    from lifelines import KaplanMeierFitter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas deprecation chatter inside lifelines
        kmf = KaplanMeierFitter(alpha=1.0 - level).fit(t, e)
    steps = kmf.survival_function_.index.to_numpy(float)  # [m] event/censoring times, 0 first
    sf = kmf.survival_function_.to_numpy(float)[:, 0]  # [m]
    band = kmf.confidence_interval_.to_numpy(float)  # [m, 2]: lower, upper edge of S(t)
    med = _crossing(steps, sf)
    lo, hi = _crossing(steps, band[:, 0]), _crossing(steps, band[:, 1])
    if not e.any():
        lo = _no_event_lower(len(t), float(t.min()), level)
    return KMMedian(med, lo, hi, level, len(t), int(e.sum()), float(t.max()))


def _no_event_lower(n: int, t_min: float, level: float) -> float:
    """Lower end of the median's interval when no run grokked (the Greenwood band is degenerate:
    S = 1 with zero variance). If the median were <= t_min, each run would be censored beyond
    t_min with probability <= 1/2, all n with probability <= 2^-n: the median > t_min is shown at
    this level when 2^-n <= (1 - level) / 2 (n >= 6 at 95%), else nothing below is excluded (0).
    """
    return t_min if 0.5**n <= (1.0 - level) / 2 else 0.0


def _crossing(steps: np.ndarray, s: np.ndarray) -> float:
    """Smallest step with s <= 0.5 (inf if none). lifelines multiplies the product-limit
    factors in log space, so 5/6 * 4/5 * 3/4 comes out as 0.5000000000000001: a 1e-9 slack makes
    the median the textbook one (its own `median_survival_time_` would skip to the next event).
    """
    hit = np.flatnonzero(s <= 0.5 + 1e-9)
    return float(steps[hit[0]]) if len(hit) else math.inf
