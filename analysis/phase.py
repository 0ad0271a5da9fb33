"""Capacity-lift phase diagram over rank R (`model_rank`) and width d (`model_d`), one per arm.

Per (R, d) cell: runs n, grokked k, and the Kaplan-Meier median grok step (runs that never grokked
are censored at their budget; the median is censored when half or more never grokked). The
threshold is the capacity `C* = R*d` where P(grok) = 1/2 under the logistic model

    logit P(grok) = b1 * (log(R*d) - log C*),   b1 >= 0.

Its 95% interval is a **profile-likelihood** interval: every log C* whose profile log-likelihood
(maximised over the slope b1 >= 0, statsmodels' Logit likelihood) is within chi2_1(0.95)/2 = 1.92
of the maximum. Unlike the delta method (a quadratic approximation around the MLE, far too
narrow when the classes are nearly separated and b1 is large), the profile stays honest under
separation: when capacity separates the outcomes perfectly the MLE does not exist, the profile is
flat over the whole gap between the largest capacity with no grokked run and the smallest with
every run grokked, and the interval is at least that gap (wider when the cells at its edges hold
few runs). With no real capacity effect the interval is unbounded (lo 0 or hi inf).

Point estimate: the logistic MLE when it exists (`method="profile"`); under separation the
geometric middle of the gap (`method="separation"`). When every run agrees (`method="none"`)
there is no point estimate, only a one-sided bound from the same profile: nothing grokked gives
`C* > lo` (hi inf), everything grokked `C* < hi` (lo 0).
Arms are never pooled unless asked (`pool=True`): each arm's runs get their own diagram.

Outcome coding: grokked = 1; not_grokked and diverged = 0; failed runs are left out and counted.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import optimize, stats

from grokray_analysis.errors import AnalysisError
from grokray_analysis.load import require_columns
from grokray_analysis.survival import durations, km_median

CUT = float(stats.chi2.ppf(0.95, 1)) / 2.0  # 1.92: log-likelihood drop at the 95% edge


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
    """Kaplan-Meier median grok step (inf: censored, larger than `max_time`)."""
    max_time: float = float("nan")
    """Largest follow-up time in the cell (the bound of a censored median)."""


@dataclass(frozen=True)
class PhaseDiagram:
    """The grid and the capacity threshold of one arm (or of pooled arms)."""

    cells: tuple[PhaseCell, ...]
    """Cells sorted by (R, d)."""
    ranks: tuple[int, ...]
    """Distinct R values, sorted."""
    widths: tuple[int, ...]
    """Distinct d values, sorted."""
    threshold: float
    """Capacity R*d where P(grok) = 0.5 (NaN when all runs agree)."""
    threshold_ci: tuple[float, float]
    """95% profile-likelihood interval (lo 0 / hi inf: unbounded on that side; with method none a
    one-sided bound: C* > lo when nothing grokked, C* < hi when everything did)."""
    method: str
    """"profile" (MLE + profile interval), "separation" (no MLE: gap middle + profile
    interval), or "none" (every run agrees)."""
    b0: float
    """Logit intercept on log(R*d) (NaN unless the MLE exists)."""
    b1: float
    """Logit slope on log(R*d) (NaN unless the MLE exists)."""
    n_runs: int
    """Runs in the regression."""
    n_failed: int
    """Failed runs left out."""
    arm: str = "all"
    """The arm ("+"-joined arms when pooled)."""
    gap: tuple[float, float] = (float("nan"), float("nan"))
    """Under separation: (largest capacity with no grokked run, smallest with all grokked)."""
    delta_ci: tuple[float, float] = (float("nan"), float("nan"))
    """The delta-method interval (for comparison only; too narrow near separation)."""


@dataclass(frozen=True)
class PhaseDiagrams:
    """One phase diagram per arm (or one of the pooled arms)."""

    diagrams: tuple[PhaseDiagram, ...]
    """In arm order."""
    pooled: bool
    """True when arms were pooled into one diagram on request."""


def phase_diagrams(
    trials: pd.DataFrame,
    *,
    arms: list[str] | None = None,
    pool: bool = False,
    rank_col: str = "model_rank",
    d_col: str = "model_d",
) -> PhaseDiagrams:
    """A phase diagram per arm that has runs with `rank_col` and `d_col` set (pooled if asked)."""
    require_columns(trials, [rank_col, d_col, "status"])
    has = trials.dropna(subset=[rank_col, d_col])
    if "arm" not in has.columns:
        has = has.assign(arm="all")
    present = sorted(has["arm"].astype(str).unique())
    if arms:
        missing = [a for a in arms if a not in present]
        if missing:
            raise AnalysisError(f"arm {missing[0]!r} has no runs with {rank_col} and {d_col}; "
                                f"arms with them: {', '.join(present) or 'none'}")
        present = list(arms)
    if not present:
        raise AnalysisError(f"no runs with {rank_col} and {d_col} set")
    if pool:
        sub = has[has["arm"].astype(str).isin(present)]
        return PhaseDiagrams((_diagram(sub, "+".join(present), rank_col, d_col),), True)
    return PhaseDiagrams(tuple(
        _diagram(has[has["arm"].astype(str) == a], a, rank_col, d_col) for a in present), False)


def phase_diagram(
    trials: pd.DataFrame,
    *,
    arm: str | None = None,
    pool: bool = False,
    rank_col: str = "model_rank",
    d_col: str = "model_d",
) -> PhaseDiagram:
    """One arm's phase diagram (the only arm with R and d set unless `arm` or `pool`)."""
    res = phase_diagrams(trials, arms=[arm] if arm else None, pool=pool, rank_col=rank_col,
                         d_col=d_col)
    if len(res.diagrams) > 1:
        names = ", ".join(d.arm for d in res.diagrams)
        raise AnalysisError(f"several arms have R and d ({names}): pick one (arm=...) or pool "
                            "them (pool=True)")
    return res.diagrams[0]


def _diagram(df: pd.DataFrame, arm: str, rank_col: str, d_col: str) -> PhaseDiagram:
    ok = df[df["status"] != "failed"]
    n_failed = int((df["status"] == "failed").sum())
    if ok.empty:
        nan = float("nan")
        return PhaseDiagram((), (), (), nan, (nan, nan), "none", nan, nan, 0, n_failed, arm)
    dur = durations(ok)
    cells = []
    for (R, d), sub in dur.groupby([rank_col, d_col], sort=True):
        km = km_median(sub["time"], sub["event"])
        cells.append(PhaseCell(
            rank=int(R), d=int(d), n=len(sub), k=int(sub["event"].sum()),
            frac=float(sub["event"].mean()), median=km.median, max_time=km.max_time,
        ))
    cap = dur[rank_col].astype(float).to_numpy() * dur[d_col].astype(float).to_numpy()  # [n]
    x, y = np.log(cap), dur["event"].to_numpy().astype(float)
    t = threshold(x, y)
    return PhaseDiagram(
        cells=tuple(cells),
        ranks=tuple(sorted({c.rank for c in cells})),
        widths=tuple(sorted({c.d for c in cells})),
        threshold=math.exp(t.log_c) if math.isfinite(t.log_c) else float("nan"),
        threshold_ci=(_exp(t.lo), _exp(t.hi)),
        method=t.method, b0=t.b0, b1=t.b1, n_runs=len(dur), n_failed=n_failed, arm=arm,
        gap=(_exp(t.gap[0]), _exp(t.gap[1])), delta_ci=(_exp(t.delta[0]), _exp(t.delta[1])),
    )


def _exp(v: float) -> float:
    if math.isnan(v):
        return v
    return 0.0 if v == -math.inf else math.inf if v == math.inf else math.exp(v)


@dataclass(frozen=True)
class Threshold:
    """The 50% point of a logistic curve in x, with its profile-likelihood interval."""

    log_c: float
    """x where P = 1/2 (NaN when every outcome agrees)."""
    lo: float
    """Lower end of the 95% profile interval (-inf: unbounded)."""
    hi: float
    """Upper end (inf: unbounded)."""
    method: str
    """"profile", "separation" or "none"."""
    b0: float
    """MLE intercept (NaN when it does not exist)."""
    b1: float
    """MLE slope (NaN when it does not exist)."""
    gap: tuple[float, float]
    """Separation gap in x (NaN when the outcomes are not separated)."""
    delta: tuple[float, float]
    """Delta-method interval in x (NaN without an MLE)."""


def threshold(x: np.ndarray, y: np.ndarray) -> Threshold:
    """Where P(y = 1) = 1/2 under `logit P = b1 (x - t)`, b1 >= 0, and its 95% profile interval.

    The profile log-likelihood of t is max over b1 >= 0 of statsmodels' Logit log-likelihood of
    y on (x - t) without intercept. The interval is where it is within 1.92 of its maximum,
    ends found by root finding between a grid that covers the data range and one range beyond
    on each side; an end still inside at the grid's edge is unbounded (-inf / inf).
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    nan2 = (math.nan, math.nan)
    span = max(float(x.max() - x.min()), 1.0)
    b_max = 2000.0 / span  # steep enough that the sigmoid is a step at the data's scale
    if y.min() == y.max():  # every run agrees: only a one-sided bound on the threshold
        def inside_one(t: float) -> float:
            return _profile(x, y, t, b_max) + CUT  # the supremum is 0 (perfect fit)

        if y.max() == 0:  # nothing grokked: C* lies above the data, by at least this much
            lo = _edge(inside_one, float(x.max()) + 1e-9, float(x.min()) - span, x)
            return Threshold(math.nan, lo, math.inf, "none", math.nan, math.nan, nan2, nan2)
        hi = _edge(inside_one, float(x.min()) - 1e-9, float(x.max()) + span, x)
        return Threshold(math.nan, -math.inf, hi, "none", math.nan, math.nan, nan2, nan2)
    if np.unique(x).size < 2:
        return Threshold(math.nan, -math.inf, math.inf, "none", math.nan, math.nan, nan2, nan2)
    gap = _gap(x, y)
    b0 = b1 = math.nan
    delta = nan2
    if gap is None:
        fit = _logit(x, y)
        if fit is not None:
            b0, b1, delta = fit
    if gap is not None:
        t_hat, method, best = 0.5 * (gap[0] + gap[1]), "separation", 0.0
    elif math.isfinite(b1) and b1 > 0:
        t_hat, method = -b0 / b1, "profile"
        best = _profile(x, y, t_hat, b_max)
    else:  # the MLE slope is <= 0: P(grok) does not rise with capacity; best t from the grid
        grid = np.linspace(x.min(), x.max(), 201)
        prof = np.array([_profile(x, y, t, b_max) for t in grid])
        t_hat, method, best = float(grid[prof.argmax()]), "profile", float(prof.max())

    def inside(t: float) -> float:  # > 0 inside the interval
        return _profile(x, y, t, b_max) - (best - CUT)

    lo = _edge(inside, t_hat, x.min() - span, x)
    hi = _edge(inside, t_hat, x.max() + span, x)
    if gap is not None:  # the profile's sup is its maximum all over the open gap
        lo, hi = min(lo, gap[0]), max(hi, gap[1])
    return Threshold(float(t_hat), lo, hi, method, float(b0), float(b1),
                     gap if gap is not None else nan2, delta)


def _edge(inside, t_hat: float, far: float, x: np.ndarray) -> float:
    """Where `inside` turns negative going from t_hat toward `far` (+-inf if it never does)."""
    pts = np.unique(np.concatenate([x, np.linspace(t_hat, far, 40)]))
    if far > t_hat:
        pts = pts[(pts > t_hat) & (pts <= far)]
    else:
        pts = pts[(pts < t_hat) & (pts >= far)][::-1]
    prev = t_hat
    for p in pts:
        if inside(p) < 0:
            if inside(prev) < 0:  # t_hat itself is outside (flat top not reached): stop here
                return float(prev)
            # the profile can jump at a data point under separation: refine to within 1e-6
            return float(optimize.brentq(lambda t: inside(t), prev, p, xtol=1e-6)
                         if _sign_change(inside, prev, p) else p)
        prev = p
    return -math.inf if far < t_hat else math.inf


def _sign_change(f, a: float, b: float) -> bool:
    return (f(a) > 0) != (f(b) > 0)


def _profile(x: np.ndarray, y: np.ndarray, t: float, b_max: float) -> float:
    """max over 0 <= b1 <= b_max of the Logit log-likelihood of y on b1 * (x - t)."""
    model = sm.Logit(y, (x - t)[:, None])

    def nll(log_b: float) -> float:
        return -float(model.loglike(np.array([math.exp(log_b)])))

    r = optimize.minimize_scalar(nll, bounds=(math.log(1e-4), math.log(b_max)),
                                 method="bounded", options={"xatol": 1e-4})
    return max(-float(r.fun), float(model.loglike(np.array([0.0]))))


def _gap(x: np.ndarray, y: np.ndarray) -> tuple[float, float] | None:
    """(largest x with y = 0, smallest x with y = 1) when x separates the outcomes."""
    no, yes = x[y == 0], x[y == 1]
    if no.max() < yes.min():
        return float(no.max()), float(yes.min())
    return None


def _logit(x: np.ndarray, y: np.ndarray):
    """(b0, b1, delta-method interval of -b0/b1) from statsmodels' Logit, or None."""
    from statsmodels.tools.sm_exceptions import PerfectSeparationError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = sm.Logit(y, sm.add_constant(x)).fit(disp=0)
    except (np.linalg.LinAlgError, PerfectSeparationError):
        return None
    b0, b1 = float(res.params[0]), float(res.params[1])
    if not (math.isfinite(b0) and math.isfinite(b1)) or b1 == 0:
        return None
    t = -b0 / b1
    g = np.array([-1.0 / b1, b0 / b1**2])  # d t / d (b0, b1)
    se = float(np.sqrt(g @ np.asarray(res.cov_params()) @ g))
    z = float(stats.norm.ppf(0.975))
    return b0, b1, (t - z * se, t + z * se)
