"""Power law of grokking time, `grok_step = c * |G|^alpha`, fitted by OLS on log-log.

One fit per arm (or any `by` column). Points are either one per grokked run (per seed) or one per
group (the group's median over its runs). Censoring: a run with status `not_grokked` has no
grok_step. It is never dropped silently nor filled in: per-seed fits leave it out of the
regression and count it; per-group medians treat it as +inf (it is longer than any budgeted
step), so a group whose median is censored (half or more of its runs censored) is left out and
listed. Runs that `diverged` or `failed` carry no timing information: counted as excluded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import statsmodels.api as sm

from analysis.errors import AnalysisError
from analysis.load import require_arms, require_columns


@dataclass(frozen=True)
class PowerLawFit:
    """One fitted power law `grok_step = c * order^alpha` with its counts and intervals."""

    arm: str
    """Value of the `by` column this fit is for (an arm by default)."""
    c: float
    """Prefactor: exp of the OLS intercept on log-log."""
    c_ci: tuple[float, float]
    """95% confidence interval of c (exp of the intercept's t-interval)."""
    alpha: float
    """Exponent: the OLS slope of log(grok_step) on log(order)."""
    alpha_ci: tuple[float, float]
    """95% confidence interval of alpha (t-interval)."""
    r2: float
    """R^2 of the log-log fit."""
    medians: bool
    """True when the points are per-group medians, False when per-seed runs."""
    n_points: int
    """Points in the regression."""
    n_groups: int
    """Distinct groups among the points."""
    n_seeds: int
    """Distinct seed values among the points' runs."""
    n_runs: int
    """Runs of this arm in the input (every status)."""
    n_grokked: int
    """Runs with status grokked."""
    n_censored: int
    """Runs with status not_grokked (censored: never grokked within budget)."""
    n_excluded: int
    """Runs that diverged or failed (no timing information)."""
    censored_groups: tuple[str, ...]
    """Groups with no point because their runs were censored (all runs, or the median)."""
    alpha_boot_ci: tuple[float, float]
    """95% percentile bootstrap interval of alpha, resampling seeds with replacement."""
    c_boot_ci: tuple[float, float]
    """95% percentile bootstrap interval of c, same resamples."""
    n_boot: int
    """Bootstrap resamples that gave a fit (0 when the bootstrap was off)."""
    order: tuple[float, ...]
    """The points' group orders |G| (x)."""
    step: tuple[float, ...]
    """The points' grok steps (y)."""
    point_group: tuple[str, ...]
    """The points' group names."""

    def predict(self, order: np.ndarray) -> np.ndarray:
        """c * order^alpha."""
        return self.c * np.asarray(order, dtype=float) ** self.alpha


@dataclass(frozen=True)
class PowerLawBand:
    """The fitted line and its 95% confidence band on a grid of orders (for plotting)."""

    order: tuple[float, ...]
    """Grid of group orders."""
    fit: tuple[float, ...]
    """c * order^alpha on the grid."""
    lo: tuple[float, ...]
    """Lower edge of the 95% confidence band of the mean."""
    hi: tuple[float, ...]
    """Upper edge."""


@dataclass(frozen=True)
class ScalingResult:
    """Power-law fits of every arm, and the band for each."""

    fits: tuple[PowerLawFit, ...]
    """One fit per arm, in sorted order of the arm name."""
    bands: tuple[PowerLawBand, ...]
    """The band of each fit, same order."""
    by: str
    """The column the fits are split by."""
    skipped: tuple[tuple[str, str], ...] = ()
    """(arm, reason) for arms left out with `skip_unfit` (too few points)."""


@dataclass(frozen=True)
class AlphaComparison:
    """Does alpha differ between two arms? OLS with an interaction term on log-log."""

    arm_a: str
    """First arm (the reference level)."""
    arm_b: str
    """Second arm."""
    alpha_a: float
    """Slope of arm a in the joint model."""
    alpha_b: float
    """Slope of arm b in the joint model."""
    diff: float
    """alpha_b - alpha_a: the interaction coefficient."""
    diff_ci: tuple[float, float]
    """95% confidence interval of the difference."""
    t: float
    """t statistic of the interaction coefficient."""
    p_value: float
    """Two-sided p-value of H0: alpha_a == alpha_b."""
    n_points: int
    """Points in the joint regression."""


def _points(df: pd.DataFrame, medians: bool) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """Regression points (group, order, step, seed-list) and the groups lost to censoring."""
    timed = df[df["status"].isin(["grokked", "not_grokked"])]
    if not medians:
        pts = timed[timed["status"] == "grokked"]
        pts = pts[["group", "group_order", "grok_step", "seed"]].rename(
            columns={"group_order": "order", "grok_step": "step"}
        )
        lost = sorted(set(timed["group"].astype(str)) - set(pts["group"].astype(str)))
        return pts.reset_index(drop=True), tuple(lost)
    rows, lost = [], []
    for g, sub in timed.groupby("group", sort=True):
        steps = np.where(sub["status"] == "grokked", sub["grok_step"], np.inf)
        med = float(np.median(steps))
        if not np.isfinite(med):  # censored median: at least half the runs never grokked
            lost.append(str(g))
            continue
        rows.append(
            {"group": g, "order": float(sub["group_order"].iloc[0]), "step": med,
             "seed": tuple(sub.loc[sub["status"] == "grokked", "seed"])}
        )
    return pd.DataFrame(rows, columns=["group", "order", "step", "seed"]), tuple(lost)


def _ols_loglog(order: np.ndarray, step: np.ndarray):
    X = sm.add_constant(np.log(order))  # [n, 2]: 1, log|G|
    return sm.OLS(np.log(step), X).fit()


def _bootstrap(
    df: pd.DataFrame, medians: bool, n_boot: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Resample seeds with replacement (all runs of a drawn seed come along), refit each time."""
    timed = df[df["status"].isin(["grokked", "not_grokked"])]
    seeds = np.sort(timed["seed"].unique())
    s_idx = np.searchsorted(seeds, timed["seed"].to_numpy())  # [n] seed index of each run
    x = np.log(timed["group_order"].to_numpy(float))  # [n]
    y = np.log(np.where(timed["status"] == "grokked", timed["grok_step"], np.inf))  # [n]
    g_idx = pd.factorize(timed["group"])[0]  # [n]
    alphas, cs = [], []
    for _ in range(n_boot):
        counts = np.bincount(rng.integers(0, len(seeds), len(seeds)), minlength=len(seeds))
        rep = np.repeat(np.arange(len(x)), counts[s_idx])  # rows of the resample
        xr, yr, gr = x[rep], y[rep], g_idx[rep]
        if medians:
            ug = np.unique(gr)
            xr = np.array([xr[gr == g][0] for g in ug])
            yr = np.array([np.median(yr[gr == g]) for g in ug])
        keep = np.isfinite(yr)
        xr, yr = xr[keep], yr[keep]
        if np.unique(xr).size < 2:
            continue
        slope, intercept = np.polyfit(xr, yr, 1)
        alphas.append(slope)
        cs.append(np.exp(intercept))
    return np.asarray(alphas), np.asarray(cs)


def _pct(a: np.ndarray) -> tuple[float, float]:
    if len(a) == 0:
        return (float("nan"), float("nan"))
    lo, hi = np.quantile(a, [0.025, 0.975])
    return (float(lo), float(hi))


def fit_power_law(
    trials: pd.DataFrame,
    arm: str,
    *,
    by: str = "arm",
    medians: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
) -> PowerLawFit:
    """Fit `grok_step = c * |G|^alpha` for the rows with `by == arm`.

    Raises AnalysisError when fewer than 3 points or fewer than 2 distinct orders remain.
    """
    require_columns(trials, ["group", "group_order", by])
    df = trials[trials[by].astype(str) == arm]
    if df.empty:
        raise AnalysisError(f"no rows with {by}={arm!r}")
    pts, lost = _points(df, medians)
    what = "groups with a median grok step" if medians else "grokked runs"
    if len(pts) < 3 or pts["order"].nunique() < 2:
        raise AnalysisError(
            f"{by}={arm}: too few points for a power law ({len(pts)} {what} over "
            f"{pts['order'].nunique()} distinct orders; need >= 3 over >= 2)"
        )
    res = _ols_loglog(pts["order"].to_numpy(float), pts["step"].to_numpy(float))
    ci = np.asarray(res.conf_int(0.05))  # [2, 2]: rows const, slope
    seeds = set()
    for s in pts["seed"]:
        seeds.update(s if isinstance(s, tuple) else (s,))
    a_boot, c_boot = (
        _bootstrap(df, medians, n_boot, np.random.default_rng(seed)) if n_boot > 0
        else (np.array([]), np.array([]))
    )
    return PowerLawFit(
        arm=arm,
        c=float(np.exp(res.params[0])),
        c_ci=(float(np.exp(ci[0, 0])), float(np.exp(ci[0, 1]))),
        alpha=float(res.params[1]),
        alpha_ci=(float(ci[1, 0]), float(ci[1, 1])),
        r2=float(res.rsquared),
        medians=medians,
        n_points=len(pts),
        n_groups=int(pts["group"].nunique()),
        n_seeds=len(seeds),
        n_runs=len(df),
        n_grokked=int((df["status"] == "grokked").sum()),
        n_censored=int((df["status"] == "not_grokked").sum()),
        n_excluded=int(df["status"].isin(["diverged", "failed"]).sum()),
        censored_groups=lost,
        alpha_boot_ci=_pct(a_boot),
        c_boot_ci=_pct(c_boot),
        n_boot=len(a_boot),
        order=tuple(pts["order"].astype(float)),
        step=tuple(pts["step"].astype(float)),
        point_group=tuple(pts["group"].astype(str)),
    )


def power_law_band(fit: PowerLawFit, n: int = 50) -> PowerLawBand:
    """The fitted line with the 95% confidence band of the mean on a log-spaced grid."""
    order = np.asarray(fit.order)
    res = _ols_loglog(order, np.asarray(fit.step))
    grid = np.geomspace(order.min(), order.max(), n)  # [n]
    pred = res.get_prediction(sm.add_constant(np.log(grid), has_constant="add"))
    frame = pred.summary_frame(alpha=0.05)
    return PowerLawBand(
        order=tuple(grid),
        fit=tuple(np.exp(frame["mean"])),
        lo=tuple(np.exp(frame["mean_ci_lower"])),
        hi=tuple(np.exp(frame["mean_ci_upper"])),
    )


def scaling(
    trials: pd.DataFrame,
    *,
    arms: list[str] | None = None,
    by: str = "arm",
    medians: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
    skip_unfit: bool = False,
) -> ScalingResult:
    """Fit a power law per arm (all arms present unless `arms` is given).

    With `skip_unfit`, arms with too few points are listed in `skipped` instead of raising
    (at least one arm must fit).
    """
    require_columns(trials, [by])
    if arms:
        if by == "arm":
            require_arms(trials, arms)
    else:
        arms = sorted(trials[by].astype(str).unique())
    fits, skipped = [], []
    for a in arms:
        try:
            fits.append(fit_power_law(trials, a, by=by, medians=medians, n_boot=n_boot, seed=seed))
        except AnalysisError as exc:
            if not skip_unfit:
                raise
            skipped.append((a, str(exc)))
    if not fits:
        raise AnalysisError("no arm has enough points for a power law: " + "; ".join(
            r for _, r in skipped))
    return ScalingResult(
        fits=tuple(fits), bands=tuple(power_law_band(f) for f in fits), by=by,
        skipped=tuple(skipped),
    )


def compare_alpha(
    trials: pd.DataFrame, arm_a: str, arm_b: str, *, by: str = "arm", medians: bool = False
) -> AlphaComparison:
    """Test H0: alpha_a == alpha_b with `log y ~ log x * [arm == b]` (the interaction term)."""
    xs, ys, zs = [], [], []
    for z, arm in enumerate((arm_a, arm_b)):
        df = trials[trials[by].astype(str) == arm]
        if df.empty:
            raise AnalysisError(f"no rows with {by}={arm!r}")
        pts, _ = _points(df, medians)
        xs.append(np.log(pts["order"].to_numpy(float)))
        ys.append(np.log(pts["step"].to_numpy(float)))
        zs.append(np.full(len(pts), float(z)))
        if len(pts) < 3 or pts["order"].nunique() < 2:
            raise AnalysisError(f"{by}={arm}: too few points to compare exponents")
    x, y, z = np.concatenate(xs), np.concatenate(ys), np.concatenate(zs)
    X = np.column_stack([np.ones_like(x), x, z, x * z])  # [n, 4]: 1, log|G|, b, b*log|G|
    res = sm.OLS(y, X).fit()
    ci = np.asarray(res.conf_int(0.05))
    return AlphaComparison(
        arm_a=arm_a,
        arm_b=arm_b,
        alpha_a=float(res.params[1]),
        alpha_b=float(res.params[1] + res.params[3]),
        diff=float(res.params[3]),
        diff_ci=(float(ci[3, 0]), float(ci[3, 1])),
        t=float(res.tvalues[3]),
        p_value=float(res.pvalues[3]),
        n_points=len(y),
    )
