"""Capacity-lift phase diagram over rank R (`model_rank`) and width d (`model_d`).

Per (R, d) cell: runs, grok fraction, median grok step (never-grokked runs as +inf, so the median
is censored when half or more did not grok). The threshold is the capacity `R*d` where a logistic
regression of P(grok) on log(R*d) (statsmodels Logit) crosses 0.5: `log C* = -b0 / b1`. Its 95%
interval comes from the delta method on log C* (gradient `[-1/b1, b0/b1^2]` against the fit's
covariance), then exponentiated, so it is asymmetric around C*.

A clean phase transition separates the classes perfectly and the logistic MLE does not exist.
Then the threshold is reported by `method="separation"`: the geometric mean of the largest
capacity with no grokked run and the smallest with all runs grokked, the interval being those
two capacities.

Outcome coding: grokked = 1; not_grokked and diverged = 0; failed runs are left out and counted.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import statsmodels.api as sm
from statsmodels.tools.sm_exceptions import PerfectSeparationError

from analysis.errors import AnalysisError
from analysis.load import require_columns


@dataclass(frozen=True)
class PhaseCell:
    """One (R, d) cell of the grid."""

    rank: int
    """R (model_rank)."""
    d: int
    """d (model_d)."""
    n: int
    """Runs counted."""
    k: int
    """Runs that grokked."""
    frac: float
    """k / n."""
    median: float
    """Median grok step, never-grokked runs as +inf."""


@dataclass(frozen=True)
class PhaseDiagram:
    """The grid and the capacity threshold."""

    cells: tuple[PhaseCell, ...]
    """Cells sorted by (R, d)."""
    ranks: tuple[int, ...]
    """Distinct R values, sorted."""
    widths: tuple[int, ...]
    """Distinct d values, sorted."""
    threshold: float
    """Capacity R*d where P(grok) = 0.5 (NaN when all runs agree)."""
    threshold_ci: tuple[float, float]
    """95% interval of the threshold (delta method on log C*, or the separation bracket)."""
    method: str
    """"logit" (delta-method interval), "separation" (bracket), or "none"."""
    b0: float
    """Logit intercept (NaN unless method is logit)."""
    b1: float
    """Logit slope on log(R*d)."""
    n_runs: int
    """Runs in the regression."""
    n_failed: int
    """Failed runs left out."""


def _separation(cap: np.ndarray, y: np.ndarray) -> tuple[float, float, float] | None:
    """(threshold, lo, hi) when capacity separates the outcomes perfectly, else None."""
    no, yes = cap[y == 0], cap[y == 1]
    if len(no) == 0 or len(yes) == 0:
        return None
    if no.max() < yes.min():
        lo, hi = float(no.max()), float(yes.min())
        return float(np.sqrt(lo * hi)), lo, hi
    return None


def phase_diagram(
    trials: pd.DataFrame, *, rank_col: str = "model_rank", d_col: str = "model_d"
) -> PhaseDiagram:
    """Grok fraction and median grok step per (R, d) cell, and the capacity threshold."""
    require_columns(trials, [rank_col, d_col, "status"])
    ok = trials[trials["status"] != "failed"].dropna(subset=[rank_col, d_col])
    if ok.empty:
        raise AnalysisError(f"no runs with {rank_col} and {d_col} set")
    steps = np.where(ok["status"] == "grokked", ok["grok_step"], np.inf).astype(float)
    ok = ok.assign(_y=(ok["status"] == "grokked").astype(int), _s=steps)
    cells = []
    for (R, d), sub in ok.groupby([rank_col, d_col], sort=True):
        cells.append(
            PhaseCell(
                rank=int(R), d=int(d), n=len(sub), k=int(sub["_y"].sum()),
                frac=float(sub["_y"].mean()), median=float(np.median(sub["_s"])),
            )
        )
    cap = ok[rank_col].astype(float).to_numpy() * ok[d_col].astype(float).to_numpy()  # [n]
    x, y = np.log(cap), ok["_y"].to_numpy()
    thr, ci, method, b0, b1 = float("nan"), (float("nan"), float("nan")), "none", np.nan, np.nan
    sep = _separation(cap, y)
    if sep is not None:
        thr, ci, method = sep[0], (sep[1], sep[2]), "separation"
    elif 0 < y.sum() < len(y) and np.unique(x).size >= 2:
        thr, ci, b0, b1 = _logit_threshold(x, y)
        method = "logit"
    return PhaseDiagram(
        cells=tuple(cells),
        ranks=tuple(sorted({c.rank for c in cells})),
        widths=tuple(sorted({c.d for c in cells})),
        threshold=thr,
        threshold_ci=ci,
        method=method,
        b0=float(b0),
        b1=float(b1),
        n_runs=len(ok),
        n_failed=int((trials["status"] == "failed").sum()),
    )


def _logit_threshold(x: np.ndarray, y: np.ndarray):
    X = sm.add_constant(x)  # [n, 2]: 1, log(R*d)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence chatter; the slope is checked below
            res = sm.Logit(y, X).fit(disp=0)
    except (np.linalg.LinAlgError, PerfectSeparationError) as exc:
        raise AnalysisError(f"logistic fit of P(grok) on log(R*d) failed: {exc}") from None
    b0, b1 = float(res.params[0]), float(res.params[1])
    if not np.isfinite(b1) or b1 == 0:
        raise AnalysisError("logistic fit of P(grok) on log(R*d) has no finite slope")
    t = -b0 / b1  # log C*
    g = np.array([-1.0 / b1, b0 / b1**2])  # d t / d (b0, b1)
    se = float(np.sqrt(g @ np.asarray(res.cov_params()) @ g))
    z = 1.959963984540054
    return float(np.exp(t)), (float(np.exp(t - z * se)), float(np.exp(t + z * se))), b0, b1
