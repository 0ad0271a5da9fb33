"""95% intervals of the power law's (log c, alpha) with the group as the unit of replication.

Seeds of one group share that group's deviation from the line (its structure, its capacity
margin), so the runs are not independent observations of the power law: the groups are. Every
interval here is computed from the censored log-normal fit (`grokray_analysis.tobit`) and keeps
censoring in the likelihood. The candidates (their coverage on known truth with group effects is
measured by `benchmarks/bench_powerlaw_groups.py`; docs/analysis.md has the table):

- `per-run`: the Wald interval of the pooled fit, every run independent (t_{k-2} quantile and
  the small-sample factor sqrt(k / (k - 2)), k grokked runs). Assumes no group effect.
- `cluster`: the same fit's cluster-robust (sandwich, CR1) covariance from per-group score sums,
  t_{G-2} quantile, G groups.
- `jackknife`: the leave-one-group-out jackknife variance (G refits), t_{G-2} quantile.
- `bootstrap`: percentile interval over resamples of whole groups (every run of a drawn group
  comes along), the censored fit refitted per resample (all resamples fitted at once).
- `two-stage`: each group's censored location (censored fit with one intercept per group and a
  common sigma), then the censored fit of those locations on log|G| across groups (a group with
  no grokked run is censored at its largest budget), t_{k-2} with k groups that grokked: the
  group-level regression, its residual holding the group effect.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from grokray_analysis import tobit

CANDIDATES = ("per-run", "cluster", "jackknife", "bootstrap", "two-stage")
N_BOOT = 999
Z95 = 1.959963984540054
NAN2 = (math.nan, math.nan)


@dataclass(frozen=True)
class GroupInterval:
    """The estimate of (log c, alpha), its 95% intervals and the covariance for the band."""

    method: str
    """Which interval (one of CANDIDATES)."""
    coef: np.ndarray
    """(log c, alpha)."""
    lo: np.ndarray
    """Lower ends of the 95% intervals of (log c, alpha)."""
    hi: np.ndarray
    """Upper ends."""
    cov: np.ndarray
    """[2, 2] covariance of (log c, alpha) behind the interval (for bootstrap: of the
    resamples), used for the plotted band together with `q`."""
    q: float
    """Quantile of the band: coef +- q * se."""
    sigma: float
    """Residual scale of the fit the estimate comes from."""
    n_groups: int
    """Groups in the fit."""
    n_boot: int = 0
    """Bootstrap resamples that gave a fit (bootstrap only)."""
    reason: str = ""
    """Why there is no interval ("" when there is one)."""


def _small_sample(k: int, p: int) -> tuple[float, float]:
    """(t_{k-p} quantile, sqrt(k / (k - p))): the per-run Wald interval's small-sample form."""
    if k <= p:
        return math.inf, 1.0
    return float(stats.t.ppf(0.975, k - p)), math.sqrt(k / (k - p))


def _wald(method, coef, V, q, sigma, G, n_boot=0) -> GroupInterval:
    se = np.sqrt(np.diag(V))
    return GroupInterval(method, coef, coef - q * se, coef + q * se, V, q, sigma, G, n_boot)


def _none(method: str, G: int, reason: str) -> GroupInterval:
    nan = np.full(2, math.nan)
    return GroupInterval(method, nan, nan, nan, np.full((2, 2), math.nan), math.nan, math.nan,
                         G, 0, reason)


def group_interval(log_order: np.ndarray, log_time: np.ndarray, event: np.ndarray,
                   group: np.ndarray, method: str = "bootstrap", *, n_boot: int = N_BOOT,
                   seed: int = 0) -> GroupInterval:
    """The estimate and 95% interval of (log c, alpha) by `method` (see the module doc).

    log_time is log(grok step) for grokked runs and log(budget) for censored ones.
    """
    x = np.asarray(log_order, float)
    y = np.asarray(log_time, float)
    ev = np.asarray(event, bool)
    gid, g = np.unique(np.asarray(group).astype(str), return_inverse=True)
    G = len(gid)
    X = np.column_stack([np.ones_like(x), x])
    if method == "two-stage":
        return _two_stage(x, y, ev, g, G)
    full = tobit.fit(X, y, ev)
    if not full.ok:
        return _none(method, G, "the censored fit did not converge")
    coef, sigma = full.beta, float(full.sigma)
    if method == "per-run":
        q, infl = _small_sample(int(ev.sum()), 2)
        V = tobit.covariance(full, X, y, ev)[:2, :2] * infl**2
        return _wald(method, coef, V, q, sigma, G)
    if G < 3:
        return _none(method, G, f"{G} group(s): a group-unit interval needs >= 3")
    q = float(stats.t.ppf(0.975, G - 2))
    if method == "cluster":
        V = tobit.covariance(full, X, y, ev, clusters=g)[:2, :2]
        return _wald(method, coef, V, q, sigma, G)
    if method == "jackknife":
        W = (g[None, :] != np.arange(G)[:, None]).astype(float)  # [G, n]: drop group j
        f = tobit.fit_many(X, y, ev, W, start=full.theta)
        ok = f.ok & _identified(W, x, ev)
        if ok.sum() < G:
            return _none(method, G, f"{G - ok.sum()} leave-one-group-out fit(s) not identified")
        b = f.beta
        V = (G - 1) / G * (b - b.mean(0)).T @ (b - b.mean(0))
        return _wald(method, coef, V, q, sigma, G)
    if method == "bootstrap":
        rng = np.random.default_rng(seed)
        counts = rng.multinomial(G, np.full(G, 1.0 / G), size=n_boot)  # [B, G]
        W = counts[:, g].astype(float)  # [B, n]
        f = tobit.fit_many(X, y, ev, W, start=full.theta)
        ok = f.ok & _identified(W, x, ev)
        b = f.beta[ok]
        if len(b) < 0.9 * n_boot:
            return _none(method, G, f"only {len(b)} of {n_boot} group resamples could be fitted")
        lo, hi = np.quantile(b, [0.025, 0.975], axis=0)
        V = np.cov(b.T)
        return GroupInterval(method, coef, lo, hi, V, Z95, sigma, G, len(b))
    raise ValueError(f"interval {method!r}: valid are {', '.join(CANDIDATES)}")



def _identified(W: np.ndarray, x: np.ndarray, ev: np.ndarray) -> np.ndarray:
    """[B]: the resample has >= 2 grokked runs at >= 2 distinct orders (else the slope is not
    identified and Newton's 'convergence' is meaningless)."""
    on = (W > 0) & ev[None, :]
    spread = np.where(on, x[None, :], -np.inf).max(1) - np.where(on, x[None, :], np.inf).min(1)
    return (on.sum(1) >= 2) & (spread > 0)


def _two_stage(x, y, ev, g, G) -> GroupInterval:
    grokked = np.bincount(g, weights=ev.astype(float), minlength=G) > 0  # [G]
    keep = grokked[g]
    if grokked.sum() < 3:
        return _none("two-stage", G, f"{int(grokked.sum())} group(s) with a grokked run; need 3")
    # stage 1: one intercept per group that grokked, a common sigma
    used = np.flatnonzero(grokked)
    D = (g[keep][:, None] == used[None, :]).astype(float)  # [n_keep, G_used]
    s1 = tobit.fit(D, y[keep], ev[keep])
    if not s1.ok:
        return _none("two-stage", G, "the per-group censored fit did not converge")
    loc = np.full(G, math.nan)
    loc[used] = s1.beta
    # stage 2: locations on log|G|; a group with no grokked run is censored at its largest budget
    gx = np.array([x[g == j][0] for j in range(G)])
    gy = np.where(grokked, loc, [y[g == j].max() for j in range(G)])
    Xg = np.column_stack([np.ones(G), gx])
    s2 = tobit.fit(Xg, gy, grokked)
    if not s2.ok or np.unique(gx[grokked]).size < 2:
        return _none("two-stage", G, "the across-group censored fit did not converge")
    q, infl = _small_sample(int(grokked.sum()), 2)
    V = tobit.covariance(s2, Xg, gy, grokked)[:2, :2] * infl**2
    return _wald("two-stage", s2.beta, V, q, float(s2.sigma), G)
