"""Power law of grokking time, `grok_step = c * |G|^alpha`, fitted with censoring modelled.

Default (`method="aft"`): a log-normal accelerated-failure-time model,

    log T = log c + alpha * log|G| + sigma * eps,    eps ~ N(0, 1),

fitted by maximum likelihood with every run right-censored at its budget when it did not grok
(lifelines' `LogNormalAFTFitter`; `grokray_analysis.survival.durations` says what a run's time
is). A
grokked run contributes its density, a censored one the probability that T exceeds its budget, so
a group where most runs never grokked pulls the line up instead of vanishing from it. c * |G|^alpha
is the *median* grok step at order |G|.

Intervals (`interval`). The seeds of one group share that group's deviation from the line, so the
group, not the run, is the unit of replication. Default `group`: the cluster-robust (sandwich)
covariance of the same fit from per-group score sums (`grokray_analysis.tobit.covariance`; for
ols statsmodels' cluster covariance), t_{G-2} quantile with G groups: chosen by coverage on known
truth with group effects (`benchmarks/bench_powerlaw_groups.py`, docs/analysis.md). `per-run`:
Wald intervals from the observed information, every run independent (lifelines' variance, with
the small-sample factor below); always computed too (`alpha_run_ci`). `group-bootstrap`:
percentile interval over resamples of whole groups, the censored fit refitted per resample.
c's interval is exp of log c's.

Option (`method="ols"`): OLS of log(grok_step) on log|G| over the grokked runs only (or per-group
medians with `medians=True`), with its R^2, as the FORGE paper reports it. Censored runs are left
out of that fit (counted), which biases alpha down when the large groups are censored more often:
this is the fit to quote beside the paper's R^2, not the estimate of alpha.

An arm that cannot be fitted (no grokked run, one distinct order, too few runs) gets a fit with
`fitted=False` and the reason, never an exception: that is a result.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import stats

from grokray_analysis import grouped, tobit
from grokray_analysis.errors import AnalysisError
from grokray_analysis.load import require_arms, require_columns
from grokray_analysis.survival import TIMED, durations, km_median

METHODS = ("aft", "ols")
INTERVALS = ("group", "per-run", "group-bootstrap")
Z95 = 1.959963984540054
NAN = float("nan")


@dataclass(frozen=True)
class GroupCount:
    """One group of one arm: its runs, how many grokked, and its Kaplan-Meier median."""

    group: str
    """Group name."""
    order: float
    """|G|."""
    n: int
    """Timed runs (grokked, not_grokked, diverged)."""
    grokked: int
    """Runs that grokked."""
    censored: int
    """Runs that did not grok within their budget (not_grokked or diverged)."""
    median: float
    """Kaplan-Meier median grok step (inf: censored, larger than `max_time`)."""
    max_time: float
    """Largest follow-up time among the group's runs."""


@dataclass(frozen=True)
class PowerLawFit:
    """One fitted power law `grok_step = c * order^alpha` with its counts and intervals."""

    arm: str
    """Value of the `by` column this fit is for (an arm by default)."""
    method: str
    """"aft" (censored log-normal regression, every timed run) or "ols" (grokked runs only)."""
    fitted: bool
    """False when the fit could not be made; `reason` says why and the numbers are NaN."""
    reason: str
    """Why there is no fit ("" when fitted)."""
    c: float
    """Prefactor: the median grok step at |G| = 1 (exp of the intercept on the log scale)."""
    c_ci: tuple[float, float]
    """95% interval of c (exp of log c's interval, of the kind `interval` names)."""
    alpha: float
    """Exponent: the slope of log(grok_step) on log|G|."""
    alpha_ci: tuple[float, float]
    """95% interval of alpha, of the kind `interval` names (default: groups as the unit)."""
    sigma: float
    """Residual scale on the log scale (the log-normal sigma for aft, OLS residual sd for ols)."""
    r2: float
    """R^2 of the log-log OLS fit (NaN for aft: not defined with censored points)."""
    medians: bool
    """True when the ols points are per-group medians, False when per-seed runs."""
    n_points: int
    """Runs (aft: every timed run) or points (ols) in the fit."""
    n_groups: int
    """Distinct groups among the fitted points."""
    n_seeds: int
    """Distinct seed values among the fitted runs."""
    n_runs: int
    """Runs of this arm in the input (every status)."""
    n_grokked: int
    """Runs with status grokked."""
    n_censored: int
    """Runs that did not grok within budget (not_grokked, diverged): right-censored."""
    n_excluded: int
    """Runs that failed (no timing information)."""
    censored_groups: tuple[str, ...]
    """Groups with no grokked run (aft: in the fit as censored; ols: missing from it)."""
    alpha_boot_ci: tuple[float, float]
    """95% percentile bootstrap interval of alpha over seeds (ols only; NaN otherwise): the runs
    of a drawn seed come along in every group, so it assumes the groups fixed (no group
    effect)."""
    c_boot_ci: tuple[float, float]
    """95% percentile bootstrap interval of c, same resamples."""
    n_boot: int
    """Bootstrap resamples that gave a fit: ols's seed bootstrap, or aft's group bootstrap
    (`interval="group-bootstrap"`); 0 when off."""
    order: tuple[float, ...]
    """The grokked points' group orders |G| (x)."""
    step: tuple[float, ...]
    """The grokked points' grok steps (y)."""
    point_group: tuple[str, ...]
    """The grokked points' group names."""
    cens_order: tuple[float, ...] = ()
    """Censored runs' group orders."""
    cens_step: tuple[float, ...] = ()
    """Censored runs' budgets (their grok step is larger)."""
    groups: tuple[GroupCount, ...] = ()
    """Per group: runs, grokked, censored, KM median."""
    cov: tuple[tuple[float, float], tuple[float, float]] = ((NAN, NAN), (NAN, NAN))
    """Covariance of (log c, alpha) (aft: with the small-sample factor applied), for the band."""
    q: float = Z95
    """Quantile of the band: t_{G-2} for `group` (G groups), t_{k-2} for `per-run` (k grokked
    runs or points), 1.96 for `group-bootstrap` (its band is normal, its interval percentile)."""
    interval: str = "group"
    """Which interval alpha_ci, c_ci and the band are (one of INTERVALS)."""
    alpha_run_ci: tuple[float, float] = (NAN, NAN)
    """The per-run 95% interval of alpha (every run independent), beside the chosen one."""
    c_run_ci: tuple[float, float] = (NAN, NAN)
    """The per-run 95% interval of c."""
    note: str = ""
    """Why the chosen interval is missing although the fit was made ("" otherwise)."""

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
    """Lower edge of the 95% confidence band of the median line (or OLS mean)."""
    hi: tuple[float, ...]
    """Upper edge."""


@dataclass(frozen=True)
class ScalingResult:
    """Power-law fits of every arm (one per method asked), and the band for each."""

    fits: tuple[PowerLawFit, ...]
    """Fits in sorted order of the arm name, the methods of one arm together."""
    bands: tuple[PowerLawBand | None, ...]
    """The band of each fit, same order (None when not fitted)."""
    by: str
    """The column the fits are split by."""
    comparison: AlphaComparison | None = None
    """The exponent comparison, when asked."""


@dataclass(frozen=True)
class AlphaComparison:
    """Does alpha differ between two arms? The model with an interaction term on log|G|."""

    arm_a: str
    """First arm (the reference level)."""
    arm_b: str
    """Second arm."""
    method: str
    """"aft" (censored log-normal, z test) or "ols" (grokked runs, t test)."""
    alpha_a: float
    """Slope of arm a in the joint model."""
    alpha_b: float
    """Slope of arm b in the joint model."""
    diff: float
    """alpha_b - alpha_a: the interaction coefficient."""
    diff_ci: tuple[float, float]
    """95% interval of the difference."""
    t: float
    """t statistic of the interaction coefficient (aft: Wald z with the small-sample factor,
    referred to t with k - 4 degrees of freedom, k grokked runs)."""
    p_value: float
    """Two-sided p-value of H0: alpha_a == alpha_b."""
    n_points: int
    """Runs or points in the joint model."""
    reason: str = ""
    """Why there is no comparison ("" when there is one; the numbers are NaN otherwise)."""
    interval: str = "group"
    """"group" (groups as clusters, t on G - 2) or "per-run" (runs independent)."""


def _points(df: pd.DataFrame, medians: bool) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """Regression points (group, order, step, seed-list) and the groups lost to censoring."""
    timed = df[df["status"].isin(TIMED)]
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
    timed = df[df["status"].isin(TIMED)]
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


def _unfit(base: dict, reason: str) -> PowerLawFit:
    nan2 = (NAN, NAN)
    return PowerLawFit(
        **base, fitted=False, reason=reason, c=NAN, c_ci=nan2, alpha=NAN, alpha_ci=nan2,
        sigma=NAN, r2=NAN, n_points=0, n_groups=0, n_seeds=0, alpha_boot_ci=nan2,
        c_boot_ci=nan2, n_boot=0,
    )


def _group_counts(dur: pd.DataFrame) -> tuple[GroupCount, ...]:
    out = []
    for g, sub in dur.groupby("group", sort=False):
        km = km_median(sub["time"], sub["event"])
        out.append(GroupCount(
            group=str(g), order=float(sub["group_order"].iloc[0]), n=len(sub),
            grokked=int(sub["event"].sum()), censored=int((~sub["event"]).sum()),
            median=km.median, max_time=km.max_time,
        ))
    return tuple(sorted(out, key=lambda c: (c.order, c.group)))


def fit_power_law(
    trials: pd.DataFrame,
    arm: str,
    *,
    by: str = "arm",
    method: str = "aft",
    medians: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
    interval: str = "group",
) -> PowerLawFit:
    """Fit `grok_step = c * |G|^alpha` for the rows with `by == arm`.

    `method="aft"`: censored log-normal regression over every timed run (the estimate of alpha).
    `method="ols"`: OLS on log-log over grokked runs (or per-group medians), with R^2 and a
    bootstrap over seeds. `interval`: which 95% interval alpha_ci and c_ci are (INTERVALS; the
    module doc). A fit that cannot be made is returned with `fitted=False`.
    Raises AnalysisError only for a bad request (unknown method or interval, no rows with
    `by == arm`).
    """
    if method not in METHODS:
        raise AnalysisError(f"method {method!r}: valid are {', '.join(METHODS)}")
    _check_interval(interval, method)
    if medians and method != "ols":
        raise AnalysisError("per-group medians (--medians) apply to the OLS fit (--method ols)")
    require_columns(trials, ["group", "group_order", by])
    df = trials[trials[by].astype(str) == arm]
    if df.empty:
        raise AnalysisError(f"no rows with {by}={arm!r}")
    dur = durations(df)
    grok, cens = dur[dur["event"]], dur[~dur["event"]]
    counts = _group_counts(dur)
    base = dict(
        arm=arm, method=method, medians=medians, n_runs=len(df), n_grokked=len(grok),
        n_censored=len(cens), n_excluded=int((df["status"] == "failed").sum()),
        censored_groups=tuple(c.group for c in counts if c.grokked == 0),
        order=tuple(grok["group_order"].astype(float)), step=tuple(grok["time"]),
        point_group=tuple(grok["group"].astype(str)),
        cens_order=tuple(cens["group_order"].astype(float)), cens_step=tuple(cens["time"]),
        groups=counts, interval=interval,
    )
    if method == "aft":
        return _fit_aft(dur, base, n_boot, seed)
    return _fit_ols(df, base, medians, n_boot, seed)


def _check_interval(interval: str, method: str) -> None:
    if interval not in INTERVALS:
        raise AnalysisError(f"interval {interval!r}: valid are {', '.join(INTERVALS)}")
    if interval == "group-bootstrap" and method != "aft":
        raise AnalysisError("--interval group-bootstrap applies to the censored fit (--method "
                            "aft); ols has group and per-run")


def _chosen(base: dict, coef: np.ndarray, V_run: np.ndarray, q_run: float,
            x: np.ndarray, y: np.ndarray, event: np.ndarray, groups: np.ndarray,
            n_boot: int, seed: int) -> dict:
    """The fields of the interval `base['interval']` names, the per-run one beside it."""
    se = np.sqrt(np.diag(V_run))
    run_lo, run_hi = coef - q_run * se, coef + q_run * se
    out = dict(alpha_run_ci=(float(run_lo[1]), float(run_hi[1])),
               c_run_ci=(float(np.exp(run_lo[0])), float(np.exp(run_hi[0]))))
    if base["interval"] == "per-run":
        return dict(out, lo=run_lo, hi=run_hi, V=V_run, q=q_run, note="", n_boot=0)
    kind = "cluster" if base["interval"] == "group" else "bootstrap"
    gi = grouped.group_interval(x, y, event, groups, kind, n_boot=n_boot, seed=seed)
    if gi.reason:
        nan = np.full(2, NAN)
        return dict(out, lo=nan, hi=nan, V=np.full((2, 2), NAN), q=NAN, n_boot=0,
                    note=f"no {base['interval']} interval: {gi.reason}")
    return dict(out, lo=gi.lo, hi=gi.hi, V=gi.cov, q=gi.q, note="", n_boot=gi.n_boot)


def _fit_aft(dur: pd.DataFrame, base: dict, n_boot: int, seed: int) -> PowerLawFit:
    n_ev = int(dur["event"].sum())
    orders = dur["group_order"].nunique()
    if n_ev < 2 or orders < 2 or len(dur) < 3:
        what = "no run grokked" if n_ev == 0 else f"{n_ev} grokked run(s)"
        return _unfit(base, f"not fitted: {what} among {len(dur)} timed runs over {orders} "
                            "distinct order(s); need >= 2 grokked runs and >= 2 orders")
    try:
        res = _aft(pd.DataFrame({
            "T": dur["time"].to_numpy(float), "E": dur["event"].to_numpy(bool),
            "log_order": np.log(dur["group_order"].to_numpy(float)),
        }))
    except AnalysisError as exc:
        return _unfit(base, str(exc))
    names = [("mu_", "Intercept"), ("mu_", "log_order")]
    coef = res.params_.loc[names].to_numpy(float)  # [2]: log c, alpha
    V = res.variance_matrix_.loc[names, names].to_numpy(float)  # [2, 2]
    q, infl = _small_sample(n_ev, 2)
    ch = _chosen(base, coef, V * infl**2, q, np.log(dur["group_order"].to_numpy(float)),
                 np.log(dur["time"].to_numpy(float)), dur["event"].to_numpy(bool),
                 dur["group"].astype(str).to_numpy(), n_boot, seed)
    lo, hi, V = ch["lo"], ch["hi"], ch["V"]
    return PowerLawFit(
        **base, fitted=True, reason="",
        c=float(np.exp(coef[0])), c_ci=(float(np.exp(lo[0])), float(np.exp(hi[0]))),
        alpha=float(coef[1]), alpha_ci=(float(lo[1]), float(hi[1])),
        sigma=float(np.exp(res.params_.loc[("sigma_", "Intercept")])), r2=NAN,
        n_points=len(dur), n_groups=int(dur["group"].nunique()),
        n_seeds=int(dur["seed"].nunique()), alpha_boot_ci=(NAN, NAN), c_boot_ci=(NAN, NAN),
        n_boot=ch["n_boot"],
        cov=((float(V[0, 0]), float(V[0, 1])), (float(V[1, 0]), float(V[1, 1]))),
        q=ch["q"], alpha_run_ci=ch["alpha_run_ci"], c_run_ci=ch["c_run_ci"], note=ch["note"],
    )


def _small_sample(n_events: int, p: int) -> tuple[float, float]:
    """(quantile, standard-error factor) of the 95% interval of a log-normal AFT coefficient.

    The Wald interval uses the MLE of sigma (RSS / n without censoring), too small with few
    runs. With k grokked runs and p location coefficients, the interval is widened to
    t_{k-p} quantile * sqrt(k / (k - p)) * SE: with no censoring this is exactly the OLS
    t-interval, and with censoring k (not the run count) is the information the scale rests on.
    """
    if n_events <= p:
        return float("inf"), 1.0
    return float(stats.t.ppf(0.975, n_events - p)), math.sqrt(n_events / (n_events - p))


def _aft(frame: pd.DataFrame, formula: str | None = None):
    """lifelines' LogNormalAFTFitter on columns T (time), E (event) and the covariates."""
    from lifelines import LogNormalAFTFitter
    from lifelines.exceptions import ConvergenceError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence/pandas chatter; failures raise below
            return LogNormalAFTFitter().fit(frame, "T", "E", formula=formula)
    except (ConvergenceError, np.linalg.LinAlgError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise AnalysisError(f"not fitted: the censored log-normal fit did not converge "
                            f"({first})") from None


def _fit_ols(df: pd.DataFrame, base: dict, medians: bool, n_boot: int, seed: int):
    pts, lost = _points(df, medians)
    what = "groups with a median grok step" if medians else "grokked runs"
    if len(pts) < 3 or pts["order"].nunique() < 2:
        return _unfit(base, f"not fitted: too few points for a power law ({len(pts)} {what} "
                            f"over {pts['order'].nunique()} distinct orders; need >= 3 over >= 2)")
    res = _ols_loglog(pts["order"].to_numpy(float), pts["step"].to_numpy(float))
    ci = np.asarray(res.conf_int(0.05))  # [2, 2]: rows const, slope; runs independent
    V = np.asarray(res.cov_params())
    q = float(stats.t.ppf(0.975, len(pts) - 2))
    G = int(pts["group"].nunique())
    run_ci, note = ci, ""
    if base["interval"] == "group" and not medians:  # medians: the points are the groups
        if G < 3:
            ci, V, q = np.full((2, 2), NAN), np.full((2, 2), NAN), NAN
            note = f"no group interval: {G} group(s) with a grokked run; need >= 3"
        else:
            V = np.asarray(_ols_loglog(pts["order"].to_numpy(float), pts["step"].to_numpy(float))
                           .get_robustcov_results("cluster", groups=pd.factorize(pts["group"])[0])
                           .cov_params())
            q = float(stats.t.ppf(0.975, G - 2))
            se = np.sqrt(np.diag(V))
            ci = np.column_stack([res.params - q * se, res.params + q * se])
    seeds = set()
    for s in pts["seed"]:
        seeds.update(s if isinstance(s, tuple) else (s,))
    a_boot, c_boot = (
        _bootstrap(df, medians, n_boot, np.random.default_rng(seed)) if n_boot > 0
        else (np.array([]), np.array([]))
    )
    if medians:  # the points are the medians, not the runs; groups lost to a censored median
        base.update(censored_groups=lost, order=tuple(pts["order"].astype(float)),
                    step=tuple(pts["step"].astype(float)),
                    point_group=tuple(pts["group"].astype(str)))
    return PowerLawFit(
        **base, fitted=True, reason="",
        c=float(np.exp(res.params[0])),
        c_ci=(float(np.exp(ci[0, 0])), float(np.exp(ci[0, 1]))),
        alpha=float(res.params[1]),
        alpha_ci=(float(ci[1, 0]), float(ci[1, 1])),
        sigma=float(np.sqrt(res.scale)),
        r2=float(res.rsquared),
        n_points=len(pts),
        n_groups=int(pts["group"].nunique()),
        n_seeds=len(seeds),
        alpha_boot_ci=_pct(a_boot),
        c_boot_ci=_pct(c_boot),
        n_boot=len(a_boot),
        cov=((float(V[0, 0]), float(V[0, 1])), (float(V[1, 0]), float(V[1, 1]))),
        q=q, alpha_run_ci=(float(run_ci[1, 0]), float(run_ci[1, 1])),
        c_run_ci=(float(np.exp(run_ci[0, 0])), float(np.exp(run_ci[0, 1]))), note=note,
    )


def power_law_band(fit: PowerLawFit, n: int = 50) -> PowerLawBand | None:
    """The fitted line with the 95% band of the line (median for aft, mean log for ols) on a
    log-spaced grid over the orders of the arm's runs; None when not fitted."""
    if not fit.fitted or not np.isfinite(np.asarray(fit.cov)).all() or not np.isfinite(fit.q):
        return None
    order = np.asarray(fit.order + fit.cens_order, dtype=float)
    grid = np.geomspace(order.min(), order.max(), n)  # [n]
    X = np.column_stack([np.ones(n), np.log(grid)])  # [n, 2]
    mu = np.log(fit.c) + fit.alpha * np.log(grid)  # [n]
    se = np.sqrt(np.einsum("ni,ij,nj->n", X, np.asarray(fit.cov), X))  # [n]
    q = fit.q
    return PowerLawBand(
        order=tuple(grid), fit=tuple(np.exp(mu)), lo=tuple(np.exp(mu - q * se)),
        hi=tuple(np.exp(mu + q * se)),
    )


def scaling(
    trials: pd.DataFrame,
    *,
    arms: list[str] | None = None,
    by: str = "arm",
    methods: tuple[str, ...] = ("aft",),
    medians: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
    compare: tuple[str, str] | None = None,
    interval: str = "group",
) -> ScalingResult:
    """Fit a power law per arm and method (all arms present unless `arms` is given).

    An arm that cannot be fitted is a fit with `fitted=False` and its reason, never an error.
    `compare=(a, b)` adds the exponent comparison (first method). `interval`: which 95%
    interval (INTERVALS; group-bootstrap for aft, ols then gets the group one).
    """
    require_columns(trials, [by])
    if interval not in INTERVALS:
        raise AnalysisError(f"interval {interval!r}: valid are {', '.join(INTERVALS)}")
    if interval == "group-bootstrap" and "aft" not in methods:
        _check_interval(interval, methods[0])
    if medians and "ols" not in methods:
        raise AnalysisError("per-group medians (--medians) apply to the OLS fit (--method ols)")
    if arms:
        if by == "arm":
            require_arms(trials, arms)
    else:
        arms = sorted(trials[by].astype(str).unique())
    fits = tuple(
        fit_power_law(trials, a, by=by, method=m, medians=medians and m == "ols",
                      n_boot=n_boot, seed=seed,
                      interval="group" if interval == "group-bootstrap" and m == "ols"
                      else interval)
        for a in arms for m in methods
    )
    cmp = None
    if compare:
        cmp = compare_alpha(trials, *compare, by=by, method=methods[0], medians=medians,
                            interval="per-run" if interval == "per-run" else "group")
    return ScalingResult(fits=fits, bands=tuple(power_law_band(f) for f in fits), by=by,
                         comparison=cmp)


def compare_alpha(
    trials: pd.DataFrame,
    arm_a: str,
    arm_b: str,
    *,
    by: str = "arm",
    method: str = "aft",
    medians: bool = False,
    interval: str = "group",
) -> AlphaComparison:
    """Test H0: alpha_a == alpha_b with `log T ~ log|G| * [arm == b]` (the interaction term).

    aft: the censored log-normal model over every timed run of both arms; ols: OLS over grokked
    runs (or per-group medians). `interval="group"` (default): the difference's variance is
    cluster-robust with the group as the cluster (a group's runs in both arms form one cluster:
    a group's deviation may be shared by the arms), t test on G - 2 degrees of freedom (G
    groups); `per-run`: every run independent (aft: Wald with the small-sample factor, t on
    k - 4; ols: the OLS t test). When the model cannot be fitted the comparison carries the
    reason and NaN numbers.
    """
    if method not in METHODS:
        raise AnalysisError(f"method {method!r}: valid are {', '.join(METHODS)}")
    if interval not in ("group", "per-run"):
        raise AnalysisError(f"interval {interval!r} for a comparison: valid are group, per-run")
    return replace(_compare(trials, arm_a, arm_b, by, method, medians, interval),
                   interval=interval)


def _compare(trials, arm_a, arm_b, by, method, medians, interval) -> AlphaComparison:
    require_columns(trials, ["group", "group_order", by])
    frames = []
    for z, arm in enumerate((arm_a, arm_b)):
        df = trials[trials[by].astype(str) == arm]
        if df.empty:
            raise AnalysisError(f"no rows with {by}={arm!r}")
        frames.append((z, df))

    def none(reason: str, n: int = 0) -> AlphaComparison:
        return AlphaComparison(arm_a, arm_b, method, NAN, NAN, NAN, (NAN, NAN), NAN, NAN, n,
                               reason)

    if method == "aft":
        parts = []
        for z, df in frames:
            d = durations(df)
            parts.append(pd.DataFrame({
                "T": d["time"].to_numpy(float), "E": d["event"].to_numpy(bool),
                "x": np.log(d["group_order"].to_numpy(float)), "b": float(z),
                "g": d["group"].astype(str).to_numpy(),
            }))
            if d["event"].sum() < 2 or d["group_order"].nunique() < 2:
                return none(f"not compared: {by}={(arm_a, arm_b)[z]} has "
                            f"{int(d['event'].sum())} grokked run(s) over "
                            f"{d['group_order'].nunique()} order(s)", len(d))
        frame = pd.concat(parts, ignore_index=True)
        try:
            res = _aft(frame[["T", "E", "x", "b"]], formula="x + b + x:b")
        except AnalysisError as exc:
            return none(str(exc).replace("not fitted", "not compared"), len(frame))
        a = float(res.params_.loc[("mu_", "x")])
        d = float(res.params_.loc[("mu_", "x:b")])
        if interval == "per-run":
            se = float(np.sqrt(res.variance_matrix_.loc[("mu_", "x:b"), ("mu_", "x:b")]))
            k = int(frame["E"].sum())
            q, infl = _small_sample(k, 4)
            se, df_t = se * infl, k - 4
        else:
            x, b = frame["x"].to_numpy(), frame["b"].to_numpy()
            X = np.column_stack([np.ones_like(x), x, b, x * b])  # [n, 4]
            y, ev = np.log(frame["T"].to_numpy(float)), frame["E"].to_numpy(bool)
            f = tobit.fit(X, y, ev)
            G = frame["g"].nunique()
            if not f.ok or G < 3:
                return none(f"not compared: {G} group(s) (a group interval needs >= 3)"
                            if f.ok else "not compared: the censored fit did not converge",
                            len(frame))
            se = float(np.sqrt(tobit.covariance(f, X, y, ev, clusters=frame["g"])[3, 3]))
            df_t = G - 2
            q = float(stats.t.ppf(0.975, df_t))
        t = d / se
        return AlphaComparison(
            arm_a=arm_a, arm_b=arm_b, method="aft", alpha_a=a, alpha_b=a + d, diff=d,
            diff_ci=(d - q * se, d + q * se), t=t,
            p_value=float(2 * stats.t.sf(abs(t), df_t)), n_points=len(frame),
        )
    xs, ys, zs, gs = [], [], [], []
    for z, df in frames:
        pts, _ = _points(df, medians)
        if len(pts) < 3 or pts["order"].nunique() < 2:
            return none(f"not compared: {by}={(arm_a, arm_b)[z]} has too few points "
                        f"({len(pts)} over {pts['order'].nunique()} orders)")
        xs.append(np.log(pts["order"].to_numpy(float)))
        ys.append(np.log(pts["step"].to_numpy(float)))
        zs.append(np.full(len(pts), float(z)))
        gs.append(pts["group"].astype(str).to_numpy())
    x, y, z = np.concatenate(xs), np.concatenate(ys), np.concatenate(zs)
    X = np.column_stack([np.ones_like(x), x, z, x * z])  # [n, 4]: 1, log|G|, b, b*log|G|
    res = sm.OLS(y, X).fit()
    g = np.concatenate(gs)
    G = len(set(g))
    if interval == "group" and G >= 3:
        rob = res.get_robustcov_results("cluster", groups=pd.factorize(g)[0])
        se = float(rob.bse[3])
        q = float(stats.t.ppf(0.975, G - 2))
        t = float(res.params[3] / se)
        return AlphaComparison(
            arm_a=arm_a, arm_b=arm_b, method="ols", alpha_a=float(res.params[1]),
            alpha_b=float(res.params[1] + res.params[3]), diff=float(res.params[3]),
            diff_ci=(float(res.params[3] - q * se), float(res.params[3] + q * se)), t=t,
            p_value=float(2 * stats.t.sf(abs(t), G - 2)), n_points=len(y),
        )
    if interval == "group":
        return none(f"not compared: {G} group(s) (a group interval needs >= 3)", len(y))
    ci = np.asarray(res.conf_int(0.05))
    return AlphaComparison(
        arm_a=arm_a,
        arm_b=arm_b,
        method="ols",
        alpha_a=float(res.params[1]),
        alpha_b=float(res.params[1] + res.params[3]),
        diff=float(res.params[3]),
        diff_ci=(float(ci[3, 0]), float(ci[3, 1])),
        t=float(res.tvalues[3]),
        p_value=float(res.pvalues[3]),
        n_points=len(y),
    )
