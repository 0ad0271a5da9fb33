"""The ledger's measurements: a sweep's trials -> one number, its 95% interval and its runs.

Each measure takes the trials its claim selected (claims.yaml: `where`) and the claim's
`params` as keywords, and returns a `Measured`; it raises AnalysisError when the rows cannot say.
Estimators, all shared with `grokray analyze`: Kaplan-Meier medians and speedups of censored grok
steps (grokray_analysis.survival, grokray_analysis.speedup), the censored AFT power law
(grokray_analysis.powerlaw), the
sign test (grokray_analysis.signtest), the phase threshold (grokray_analysis.phase), and for rates
and values
that are not durations the Clopper-Pearson interval and the median bootstrap
(grokray_analysis.intervals). Where a claim pools several groups the group is the unit of its
interval (the power law's, a pooled grok rate's over groups), or the bootstrap resamples runs
within each group (a median over two or three groups: conditional on those groups).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from grokray_analysis.errors import AnalysisError
from grokray_analysis.intervals import (
    NAN2,
    clopper_pearson,
    group_rate_ci,
    median_ci,
    median_ratio_ci,
)
from grokray_analysis.ledger.verdicts import (
    INCONCLUSIVE,
    OPPOSITE,
    REPRODUCED,
    SAME_DIRECTION,
    regions_met,
    verdict_of,
)
from grokray_analysis.load import require_columns


@dataclass(frozen=True)
class Measured:
    """What one claim's sweep gave."""

    value: float
    """The measured number (NaN when it cannot be computed from the rows)."""
    ci: tuple[float, float] = NAN2
    """95% interval of `value`."""
    grokked: int = 0
    """Runs that grokked among those the number is computed from."""
    censored: int = 0
    """Runs that did not grok within their budget (censored), same runs."""
    detail: str = ""
    """How the number was computed (arms, counts, test)."""
    verdict: str | None = None
    """Set by a claim whose verdict is not the generic one (qualitative claims)."""


def _counts(df: pd.DataFrame) -> tuple[int, int]:
    """(grokked, censored) runs, failed runs left out."""
    ok = df[df["status"] != "failed"]
    g = int((ok["status"] == "grokked").sum())
    return g, len(ok) - g


def _arm(df: pd.DataFrame, arm: str) -> pd.DataFrame:
    sub = df[df["arm"].astype(str) == arm]
    if sub.empty:
        raise AnalysisError(f"no runs of arm {arm!r}")
    return sub


def _groups(df: pd.DataFrame) -> np.ndarray | None:
    """Each run's group, the strata of a within-group bootstrap (None without a group column)."""
    return df["group"].astype(str).to_numpy() if "group" in df else None


def _km(df: pd.DataFrame):  # noqa: ANN202 - KMMedian
    """Kaplan-Meier median grok step of these runs (censored at their budget)."""
    from grokray_analysis.survival import durations, km_median

    dur = durations(df)
    return km_median(dur["time"], dur["event"])


def _rate(sub: pd.DataFrame, label: str) -> Measured:
    """The grok rate of these runs with its Clopper-Pearson interval, counts per group."""
    g, c = _counts(sub)
    n = g + c
    per = ", ".join(f"{k} {int((s['status'] == 'grokked').sum())}/{len(s)}"
                    for k, s in sub.groupby(sub["group"].astype(str), sort=False))
    return Measured(g / n if n else math.nan, clopper_pearson(g, n), g, c, f"{label}: {per}")


def _metric(T: pd.DataFrame, name: str) -> pd.Series:
    """A per-seed metric: the column `metric_<name>` as the store writes it (or the bare name,
    as in a hand-made frame)."""
    for col in (f"metric_{name}", name):
        if col in T:
            return T[col]
    raise AnalysisError(f"no metric_{name} column (the sweep did not record it)")


# ---------------------------------------------------------------------------- durations


def speedup(T: pd.DataFrame, *, arm: str, base: str) -> Measured:
    """KM median grok step of `base` / that of `arm` (grokray_analysis.speedup), with
    `bound_ci`."""
    from grokray_analysis.speedup import speedup_table

    for a in (arm, base):
        _arm(T, a)
    res = speedup_table(T, base, arms=[arm], by="group" if "group" in T else "arm")
    row = next(r for r in res.rows if r.arm == arm)
    brow = next(r for r in res.rows if r.arm == base)
    g1, c1 = _counts(_arm(T, arm))
    g0, c0 = _counts(_arm(T, base))
    bound = {"lower": "; baseline median censored: a lower bound",
             "upper": f"; {arm} median censored: an upper bound"}.get(row.kind, "")
    detail = (f"KM median grok step {arm} {row.median:g} ({g1}/{g1 + c1}), {base} "
              f"{brow.median:g} ({g0}/{g0 + c0}){bound}")
    return Measured(row.speedup, bound_ci(row, brow), g1 + g0, c1 + c0, detail)


def bound_ci(row, brow) -> tuple[float, float]:  # noqa: ANN001 - SpeedupRow
    """The 95% interval of a speedup, one-sided when a median is censored: the speedup is then
    only known to exceed (baseline censored: > budget / the arm's upper median limit) or to stay
    below (arm censored: < the baseline's upper median limit / budget) a bound, so the interval
    is [bound, inf) or [0, bound], never the uninformative [0, inf) that would count any paper
    value as 'reproduced'."""
    if row.kind == "lower":
        return float(brow.max_time / row.median_ci[1]), math.inf
    if row.kind == "upper":
        return 0.0, float(brow.median_ci[1] / row.max_time)
    return row.speedup_ci


def median_grok_step(T: pd.DataFrame) -> Measured:
    """KM median grok step (RFM: iteration) of the runs, censored at the budget."""
    g, c = _counts(T)
    km = _km(T)
    return Measured(km.median, (km.lo, km.hi), g, c,
                    f"KM median grok step, {g}/{g + c} grokked")


def scaling_alpha(T: pd.DataFrame, *, arm: str) -> Measured:
    """`arm`'s exponent alpha of grok_step = c |G|^alpha: grokray_analysis.powerlaw's default fit
    (the censored log-normal AFT over every timed run: a censored run counts as 'longer than its
    budget') with its default interval, the group as the unit of replication (the per-run one is
    in the detail)."""
    from grokray_analysis.powerlaw import fit_power_law

    f = fit_power_law(T, arm, n_boot=0)
    if not f.fitted:
        raise AnalysisError(f"no power law: {f.reason}")
    if f.note:
        raise AnalysisError(f"no interval: {f.note}")
    detail = (f"{f.method}: c {f.c:.4g}; 95% interval with the group as the unit ({f.n_groups} "
              f"groups; runs as independent: [{f.alpha_run_ci[0]:.3g}, {f.alpha_run_ci[1]:.3g}]);"
              f" {f.n_runs} runs"
              + (f"; groups with no grokked run: {', '.join(f.censored_groups)}"
                 if f.censored_groups else ""))
    return Measured(f.alpha, f.alpha_ci, f.n_grokked, f.n_censored, detail)


def no_delay(T: pd.DataFrame, *, max_delay_evals: float) -> Measured:
    """grok step - memorization step (the grokking delay; inf for a run that never grokked),
    median over runs; reproduced when every run groks with a median delay of at most
    `max_delay_evals` evaluations."""
    require_columns(T, ["eval_every"])
    g, c = _counts(T)
    delay = (T["grok_step"].astype(float) - T["memorize_step"].astype(float)).to_numpy()
    delay = np.where(T["status"].to_numpy() == "grokked", delay, np.inf)
    med, ci = median_ci(delay)
    ev = float(T["eval_every"].max())
    verdict = (REPRODUCED if c == 0 and med <= max_delay_evals * ev
               else SAME_DIRECTION if math.isfinite(med) else OPPOSITE)
    return Measured(med, ci, g, c, f"delay in steps (eval every {ev:g}); {g}/{g + c} grokked",
                    verdict)


# ---------------------------------------------------------------------------- rates


def mlp_fails(T: pd.DataFrame, *, arm: str, base: str, max_median: float) -> Measured:
    """`base`'s grok rate (the matched MLP); reproduced when it is 0 while every run of `arm`
    groks with a KM median grok step of at most `max_median`."""
    mlp = _rate(_arm(T, base), base)
    G = int(_arm(T, base)["group"].nunique()) if "group" in T else 1
    mlp = Measured(mlp.value, group_rate_ci(mlp.grokked, mlp.grokked + mlp.censored, G),
                   mlp.grokked, mlp.censored, mlp.detail)
    forge = _arm(T, arm)
    fg, fc = _counts(forge)
    med = _km(forge).median
    detail = (f"{base.upper()} grokked {mlp.grokked}/{mlp.grokked + mlp.censored} "
              f"(interval over {G} groups); "
              f"{arm.upper()} grokked {fg}/{fg + fc}, median grok step {med:g}")
    if mlp.grokked == 0 and fc == 0 and fg and med <= max_median:
        verdict = REPRODUCED
    elif mlp.value < (fg / max(fg + fc, 1)):
        verdict = SAME_DIRECTION
    else:
        verdict = OPPOSITE
    return Measured(mlp.value, mlp.ci, mlp.grokked + fg, mlp.censored + fc, detail, verdict)


def all_grok(T: pd.DataFrame, *, arm: str, max_fail: float) -> Measured:
    """Fraction of `arm`'s runs that grokked over every group of the sweep (its interval over
    the groups); the detail names the groups where more than `max_fail` of the runs did not.
    A claim about the tested groups, decided on them: reproduced when no group fails more than
    `max_fail` of its runs, opposite when no run groks, same direction otherwise."""
    runs = _arm(T, arm)
    r = _rate(runs, arm)
    G = int(runs["group"].nunique())
    fails = [str(g) for g, s in runs.groupby("group") if (s["status"] != "grokked").mean()
             > max_fail]
    detail = r.detail + f"; interval over {G} groups" + (
        f"; groups below {1 - max_fail:.0%}: " + ", ".join(fails) if fails else "")
    verdict = REPRODUCED if not fails else OPPOSITE if r.grokked == 0 else SAME_DIRECTION
    return Measured(r.value, group_rate_ci(r.grokked, r.grokked + r.censored, G), r.grokked,
                    r.censored, detail, verdict)


def never_groks(T: pd.DataFrame) -> Measured:
    """Grok rate of the runs where the paper's do not generalize: reproduced when none groks,
    same direction when some do, opposite when all do."""
    g, c = _counts(T)
    n = g + c
    return Measured(g / n if n else math.nan, clopper_pearson(g, n), g, c,
                    f"{g}/{n} runs grokked",
                    REPRODUCED if g == 0 else SAME_DIRECTION if g < n else OPPOSITE)


def capacity(T: pd.DataFrame) -> Measured:
    """Capacity R*d where P(grok) crosses 0.5 (logistic fit or separation bracket)."""
    from grokray_analysis.phase import phase_diagram

    ph = phase_diagram(T)
    g, c = _counts(T)
    return Measured(ph.threshold, ph.threshold_ci, g, c,
                    f"{ph.method}; {len(ph.cells)} (R, d) cells, {ph.n_runs} runs")


# ---------------------------------------------------------------------------- other values


def eff_modes(T: pd.DataFrame, *, metric: str, arm: str, base: str) -> Measured:
    """`metric` of `arm` - that of `base`: median paired difference; sign test one-sided."""
    from grokray_analysis.signtest import sign_test

    s = sign_test(T, _metric(T, metric).name, arm, base, alternative="greater")
    d = np.asarray(s.values_a, float) - np.asarray(s.values_b, float)
    med, ci = median_ci(d[np.isfinite(d)])
    g, c = _counts(T)
    a, b = arm.upper(), base.upper()
    detail = (f"{a} median {s.median_a:.3g}, {b} {s.median_b:.3g} over {s.n_pairs} pairs; "
              f"{s.n_pos} {a} > {b}, {s.n_neg} <; sign test one-sided p = {s.p_sign:.3g}")
    return Measured(med, ci, g, c, detail)


def wedderburn(T: pd.DataFrame, *, metric: str, arm: str) -> Measured:
    """Fraction of class-multiplication coefficients recovered exactly (`metric`, at the end of
    training), median over `arm`'s runs."""
    col = _metric(T, metric).name
    sub = _arm(T, arm)
    g, c = _counts(sub)
    keep = sub[col].astype(float).notna()
    x = sub.loc[keep, col].astype(float).to_numpy()
    med, ci = median_ci(x, strata=_groups(sub[keep]))
    per = ", ".join(f"{k} {v:.4f}" for k, v in
                    sub.groupby(sub["group"].astype(str))[col].median().items())
    return Measured(med, ci, g, c, f"median over {len(x)} runs at the end of training: {per}")


def axiom_lead(T: pd.DataFrame, *, metric: str, arm: str) -> Measured:
    """Steps by which an axiom (`metric`: its lead, grokray.metrics.axioms) precedes grokking,
    median over `arm`'s runs."""
    col = _metric(T, metric).name
    sub = _arm(T, arm)
    g, c = _counts(sub)
    keep = sub[col].astype(float).notna()
    x = sub.loc[keep, col].astype(float).to_numpy()
    med, ci = median_ci(x, strata=_groups(sub[keep]))
    return Measured(med, ci, g, c, f"median lead over {len(x)} grokked runs with an emergence "
                    f"step; mean {np.mean(x) if len(x) else math.nan:.4g}")


def drift_ratio(T: pd.DataFrame, *, system: str, invariant: str, arm: str, base: str,
                paper_range: tuple[float, float], max_drift: float) -> Measured:
    """Median drift of `base` / that of `arm` on one Hamiltonian system, bootstrap interval
    (runs resampled within each arm). The generic verdict with `paper_range` as the band
    (grokray_analysis.ledger.verdicts): reproduced when the interval lies inside the range, same
    direction when above 1 and outside it, opposite when below 1, inconclusive when it meets
    more than one of these; a reproduced ratio whose arm still drifts by `max_drift` or more
    compares two failures: same direction, not reproduced."""
    col = f"metric_drift_{invariant}"
    if "hamiltonian_system" not in T or col not in T:
        raise AnalysisError(f"no {col} on {system}")
    sub = T[(T["hamiltonian_system"].astype(str) == system) & (T["status"] != "failed")]
    xa = _arm(sub, arm)[col].dropna().to_numpy(float)
    xb = _arm(sub, base)[col].dropna().to_numpy(float)
    if not len(xa) or not len(xb):
        raise AnalysisError(f"no {col} runs on {system}")
    r, ci = median_ratio_ci(xb, xa)
    low, high = paper_range
    detail = (f"{system} {invariant}: median drift {base} {np.median(xb):.3g} / {arm} "
              f"{np.median(xa):.3g} ({len(xb)} and {len(xa)} seeds)")
    met = set(regions_met(ci[0], ci[1], low, (low, high), null=1.0) if not np.any(np.isnan(ci))
              else (verdict_of(low, r, NAN2, null=1.0, log=True, tol=0.0, band=(low, high)),))
    if np.median(xa) >= max_drift:
        detail += f"; both arms drift by over {max_drift:.0%}: neither conserves the invariant"
        met = {SAME_DIRECTION if v == REPRODUCED else v for v in met}
    verdict = met.pop() if len(met) == 1 else INCONCLUSIVE
    if verdict == INCONCLUSIVE:
        detail += "; the interval meets: " + ", ".join(
            v for v in (REPRODUCED, SAME_DIRECTION, OPPOSITE) if v in met)
    return Measured(r, ci, 0, 0, detail, verdict)


MEASURES: dict[str, Callable[..., Measured]] = {f.__name__: f for f in (
    speedup, median_grok_step, scaling_alpha, no_delay, mlp_fails, all_grok, never_groks,
    capacity, eff_modes, wedderburn, axiom_lead, drift_ratio)}
"""measure name (claims.yaml: `measure`) -> function(trials, **params)"""
