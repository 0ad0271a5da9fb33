"""The ledger's measurements: a sweep's trials -> one number, its 95% interval and its runs.

Each measure takes the trials its claim selected (claims.yaml: `where`) and the claim's
`params` as keywords, and returns a `Measured`; it raises AnalysisError when the rows cannot say.
No measure decides a verdict: every one hands its value and interval to the one rule of
grokray_analysis.ledger.verdicts, with what the rule needs to say "too few runs" (the runs the
interval rests on, `n`, and the fewest it would need, `n_needed`; `rate_n` for an exact binomial
interval). The intervals are exact at small n (grokray_analysis.intervals; scripts/
ledger_coverage.py checks their coverage on known truth):
- rates (a grok rate, qualitative claims included): Clopper-Pearson over the runs of the named
  groups, or over the groups where the claim is about groups in general (`all_grok`);
- medians (grok steps, RFM iterations, grokking delays, axiom leads, Wedderburn fractions, paired
  differences): the order-statistic interval, each run known to lie in an interval of its own
  (a grok step between two evals; a run censored at its budget: [budget, inf); an axiom never
  met: before the run's last step) - the censoring-aware interval, exact from 6 runs up;
- ratios of two medians (speedups, drift ratios): the rectangle of the two medians'
  order-statistic intervals at sqrt(0.95) each, from 7 runs per arm up;
- the power-law exponent: the censored log-normal AFT with the group as the unit
  (grokray_analysis.powerlaw); the capacity threshold: the profile likelihood or the separation
  bracket (grokray_analysis.phase).
Point values stay those of `grokray analyze` (Kaplan-Meier medians and speedups).
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
    ORDER_MIN_N,
    RATIO_MIN_N,
    clopper_pearson,
    group_rate_ci,
    order_median_ci,
    order_ratio_ci,
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
    n: int = 0
    """The units the interval rests on (runs, pairs, groups; per arm for a ratio: the fewer)."""
    n_needed: int = 0
    """The fewest units the measure's interval needs (0: no minimum); above `n`: too few runs."""
    rate_n: int = 0
    """For an exact binomial interval: its n (the rule asks whether any count of n decides)."""


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


def _km(df: pd.DataFrame):  # noqa: ANN202 - KMMedian
    """Kaplan-Meier median grok step of these runs (censored at their budget)."""
    from grokray_analysis.survival import durations, km_median

    dur = durations(df)
    return km_median(dur["time"], dur["event"])


def _step_bounds(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each timed run's grok step as an interval [lo, hi]: a grokked run's bracket (the last eval
    below the threshold, the first at or above it), a censored run's [budget, inf)."""
    from grokray_analysis.survival import durations

    dur = durations(df)
    ev = dur["event"].to_numpy(bool)
    lo = np.where(ev, dur["time_lo"].to_numpy(float), dur["time"].to_numpy(float))
    hi = np.where(ev, dur["time"].to_numpy(float), math.inf)
    return lo, hi


def _median_of(lo: np.ndarray, hi: np.ndarray) -> tuple[tuple[float, float], int, int]:
    """(order-statistic interval or NaN2, n, n_needed) of the median of runs in [lo, hi]."""
    ci = order_median_ci(lo, hi)
    return (ci if ci is not None else NAN2), len(lo), ORDER_MIN_N


def _interval_note(n: int, need: int, what: str = "runs") -> str:
    return (f"order-statistic 95% interval over {n} {what}" if n >= need else
            f"no order-statistic 95% interval from {n} {what}")


def _metric(T: pd.DataFrame, name: str) -> pd.Series:
    """A per-seed metric: the column `metric_<name>` as the store writes it (or the bare name,
    as in a hand-made frame)."""
    for col in (f"metric_{name}", name):
        if col in T:
            return T[col]
    raise AnalysisError(f"no metric_{name} column (the sweep did not record it)")


# ---------------------------------------------------------------------------- durations


def speedup(T: pd.DataFrame, *, arm: str, base: str) -> Measured:
    """KM median grok step of `base` / that of `arm` (grokray_analysis.speedup); its interval
    the ratio of the two medians' order-statistic intervals (each run's grok step as its eval
    bracket, a censored run as [budget, inf)): from 7 runs per arm. A censored median makes
    the interval one-sided by itself ([x, inf) or [0, x])."""
    from grokray_analysis.speedup import speedup_table

    for a in (arm, base):
        _arm(T, a)
    res = speedup_table(T, base, arms=[arm], by="group" if "group" in T else "arm")
    row = next(r for r in res.rows if r.arm == arm)
    brow = next(r for r in res.rows if r.arm == base)
    g1, c1 = _counts(_arm(T, arm))
    g0, c0 = _counts(_arm(T, base))
    a_lo, a_hi = _step_bounds(_arm(T, arm))
    b_lo, b_hi = _step_bounds(_arm(T, base))
    ci = order_ratio_ci(b_lo, b_hi, a_lo, a_hi)
    n = min(len(a_lo), len(b_lo))
    bound = {"lower": "; baseline median censored: a lower bound",
             "upper": f"; {arm} median censored: an upper bound"}.get(row.kind, "")
    detail = (f"KM median grok step {arm} {row.median:g} ({g1}/{g1 + c1}), {base} "
              f"{brow.median:g} ({g0}/{g0 + c0}){bound}; "
              + (f"interval: the two medians' order-statistic intervals at 97.5% ({n} runs "
                 "in the smaller arm)" if ci is not None else
                 f"no ratio interval from {n} runs in the smaller arm"))
    return Measured(row.speedup, ci if ci is not None else NAN2, g1 + g0, c1 + c0, detail,
                    n=n, n_needed=RATIO_MIN_N)


def median_grok_step(T: pd.DataFrame) -> Measured:
    """KM median grok step (RFM: iteration) of the runs, censored at the budget; the
    order-statistic interval of the median over the runs' grok brackets."""
    g, c = _counts(T)
    km = _km(T)
    ci, n, need = _median_of(*_step_bounds(T))
    return Measured(km.median, ci, g, c,
                    f"KM median grok step, {g}/{g + c} grokked; {_interval_note(n, need)}",
                    n=n, n_needed=need)


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
    return Measured(f.alpha, f.alpha_ci, f.n_grokked, f.n_censored, detail, n=f.n_groups)


def scaling_c(T: pd.DataFrame, *, arm: str) -> Measured:
    """`arm`'s prefactor c of grok_step = c |G|^alpha, the same fit as `scaling_alpha`, with its
    interval (the group as the unit)."""
    from grokray_analysis.powerlaw import fit_power_law

    f = fit_power_law(T, arm, n_boot=0)
    if not f.fitted:
        raise AnalysisError(f"no power law: {f.reason}")
    return Measured(f.c, f.c_ci, f.n_grokked, f.n_censored,
                    f"{f.method}: alpha {f.alpha:.3g}; {f.n_groups} groups, {f.n_runs} runs",
                    n=f.n_groups)


def alpha_common(T: pd.DataFrame, *, families: list[str]) -> Measured:
    """The common exponent of several families (the `arm` column: one family each): each
    family's alpha with its group-unit interval (`scaling_alpha`), its standard error read off
    that interval (half-width / 1.96), then the inverse-variance mean with its interval and the
    test of one common alpha (Wald heterogeneity, chi-square on families - 1 degrees of
    freedom) in the detail. Families are disjoint sets of groups, so independent."""
    from scipy.stats import chi2

    a, se, parts = [], [], []
    for fam in families:
        m = scaling_alpha(T, arm=fam)
        a.append(m.value)
        se.append((m.ci[1] - m.ci[0]) / (2 * 1.96))
        parts.append(f"{fam} {m.value:.3g} [{m.ci[0]:.3g}, {m.ci[1]:.3g}] ({m.n} groups)")
    a, w = np.asarray(a), 1.0 / np.asarray(se) ** 2
    mean = float((w * a).sum() / w.sum())
    half = 1.96 / math.sqrt(float(w.sum()))
    q = float((w * (a - mean) ** 2).sum())
    p = float(chi2.sf(q, len(a) - 1))
    sub = T[T["arm"].astype(str).isin(families)]
    g, c = _counts(sub)
    detail = ("; ".join(parts) + f"; one common alpha: Wald Q {q:.3g} on {len(a) - 1} df, "
              f"p = {p:.3g} (each family's variance from its group-level interval); "
              + saturation(sub))
    return Measured(mean, (mean - half, mean + half), g, c, detail,
                    n=int(T["group"].nunique()))


def saturation(T: pd.DataFrame) -> str:
    """Power law vs a saturating curve over the groups' median grok steps (groups whose median
    is censored left out): log T = a + b log|G| against log T = a + b log(1 + |G| / k), k on a
    grid over the orders' range (one more parameter), compared by AIC (Gaussian residuals)."""
    med = []
    for _, s in T.groupby("group"):
        steps = np.where(s["status"] == "grokked", s["grok_step"].astype(float), np.inf)
        m = float(np.median(steps))
        if math.isfinite(m):
            med.append((float(s["group_order"].iloc[0]), m))
    if len(med) < 5:
        return f"saturation not compared: {len(med)} groups with a median grok step"
    x, y = np.log([o for o, _ in med]), np.log([m for _, m in med])

    def rss(f: np.ndarray) -> float:
        A = np.column_stack([np.ones_like(f), f])
        r = y - A @ np.linalg.lstsq(A, y, rcond=None)[0]
        return float(r @ r)

    n = len(y)
    aic_pow = n * math.log(rss(x) / n) + 2 * 3
    ks = np.exp(np.linspace(x.min() - 1, x.max() + 1, 60))
    best = min((rss(np.log1p(np.exp(x) / k)), k) for k in ks)
    aic_sat = n * math.log(best[0] / n) + 2 * 4
    return (f"power law vs saturating (k {best[1]:.3g}) over {n} group medians: AIC "
            f"{aic_pow:.1f} vs {aic_sat:.1f} ({'saturating' if aic_sat < aic_pow else 'power law'}"
            " preferred)")


def no_delay(T: pd.DataFrame) -> Measured:
    """The grokking delay, grok step - memorization step, in evaluations: median over runs with
    its order-statistic interval (a grokked run's delay; a run that did not grok: more than its
    budget - its memorization step; one that never memorized: unknown, [0, inf))."""
    require_columns(T, ["eval_every"])
    g, c = _counts(T)
    ok = T[T["status"] != "failed"]
    ev = float(ok["eval_every"].max())
    grok = ok["grok_step"].astype(float).to_numpy()
    mem = ok["memorize_step"].astype(float).to_numpy()
    budget = pd.to_numeric(ok.get("steps_run", ok.get("steps")), errors="coerce").to_numpy(float)
    done = (ok["status"] == "grokked").to_numpy()
    lo = np.where(done, grok - mem, np.where(np.isfinite(mem), budget - mem, 0.0)) / ev
    hi = np.where(done, (grok - mem) / ev, math.inf)
    lo = np.where(np.isfinite(lo), lo, 0.0)
    ci, n, need = _median_of(lo, hi)
    return Measured(float(np.median(hi)), ci, g, c,
                    f"delay in evaluations (eval every {ev:g} steps); {g}/{g + c} grokked; "
                    f"{_interval_note(n, need)}", n=n, n_needed=need)


# ---------------------------------------------------------------------------- rates


def _rate(sub: pd.DataFrame, label: str) -> Measured:
    """The grok rate of these runs with its Clopper-Pearson interval over the runs, counts per
    group."""
    g, c = _counts(sub)
    n = g + c
    per = ", ".join(f"{k} {int((s['status'] == 'grokked').sum())}/{len(s)}"
                    for k, s in sub.groupby(sub["group"].astype(str), sort=False))
    return Measured(g / n if n else math.nan, clopper_pearson(g, n), g, c, f"{label}: {per}",
                    n=n, rate_n=n)


def mlp_fails(T: pd.DataFrame, *, arm: str, base: str) -> Measured:
    """`base`'s grok rate (the matched MLP) on the claim's named groups, Clopper-Pearson over its
    runs (conditional on those groups: a claim about them); `arm`'s runs in the detail (its own
    claim: forge.nonabelian.forge_groks)."""
    mlp = _rate(_arm(T, base), base)
    fg, fc = _counts(_arm(T, arm))
    detail = (f"{base.upper()} grokked {mlp.grokked}/{mlp.grokked + mlp.censored} "
              f"({mlp.detail.partition(': ')[2]}); {arm.upper()} grokked {fg}/{fg + fc}")
    return Measured(mlp.value, mlp.ci, mlp.grokked, mlp.censored, detail, n=mlp.n,
                    rate_n=mlp.rate_n)


def all_grok(T: pd.DataFrame, *, arm: str, max_fail: float) -> Measured:
    """Fraction of `arm`'s runs (every run: arm "", a sweep whose arms are group families) that
    grokked over every group of the sweep, its interval over the groups (`group_rate_ci`: a
    claim about groups, so the group is the unit); the detail names the groups where more than
    `max_fail` of the runs did not."""
    runs = _arm(T, arm) if arm else T
    r = _rate(runs, arm or "every run")
    G = int(runs["group"].nunique())
    fails = [str(g) for g, s in runs.groupby("group") if (s["status"] != "grokked").mean()
             > max_fail]
    detail = r.detail + f"; interval over {G} groups" + (
        f"; groups below {1 - max_fail:.0%}: " + ", ".join(fails) if fails else "")
    return Measured(r.value, group_rate_ci(r.grokked, r.grokked + r.censored, G), r.grokked,
                    r.censored, detail, n=G, rate_n=G)


def never_groks(T: pd.DataFrame) -> Measured:
    """Grok rate of the runs where the paper's do not generalize, Clopper-Pearson over them."""
    g, c = _counts(T)
    n = g + c
    return Measured(g / n if n else math.nan, clopper_pearson(g, n), g, c,
                    f"{g}/{n} runs grokked", n=n, rate_n=n)


def ungrok_rate(T: pd.DataFrame, *, arm: str, base: str) -> Measured:
    """Share of `arm`'s grokked runs that un-grok later (val acc back below the threshold:
    `ungrok_step`), Clopper-Pearson over them; `base`'s share in the detail."""
    require_columns(T, ["ungrok_step"])

    def share(a: str) -> tuple[int, int]:
        done = _arm(T, a)
        done = done[done["status"] == "grokked"]
        return int(done["ungrok_step"].notna().sum()), len(done)

    k, n = share(arm)
    kb, nb = share(base)
    if n == 0:
        raise AnalysisError(f"no grokked {arm} runs: un-grokking needs a grok first")
    g, c = _counts(_arm(T, arm))
    return Measured(k / n, clopper_pearson(k, n), g, c,
                    f"{arm}: {k} of {n} grokked runs un-grokked; {base}: {kb} of {nb}",
                    n=n, rate_n=n)


def capacity(T: pd.DataFrame) -> Measured:
    """Capacity R*d where P(grok) crosses 0.5 (logistic fit or separation bracket)."""
    from grokray_analysis.phase import phase_diagram

    ph = phase_diagram(T)
    g, c = _counts(T)
    return Measured(ph.threshold, ph.threshold_ci, g, c,
                    f"{ph.method}; {len(ph.cells)} (R, d) cells, {ph.n_runs} runs",
                    n=ph.n_runs)


# ---------------------------------------------------------------------------- other values


def eff_modes(T: pd.DataFrame, *, metric: str, arm: str, base: str) -> Measured:
    """`metric` of `arm` - that of `base`: median paired difference with its order-statistic
    interval (the sign test's own interval); sign test one-sided in the detail."""
    from grokray_analysis.signtest import sign_test

    s = sign_test(T, _metric(T, metric).name, arm, base, alternative="greater")
    d = np.asarray(s.values_a, float) - np.asarray(s.values_b, float)
    d = d[np.isfinite(d)]
    if not len(d):
        raise AnalysisError(f"no paired {metric} values")
    ci, n, need = _median_of(d, d)
    g, c = _counts(T)
    a, b = arm.upper(), base.upper()
    detail = (f"{a} median {s.median_a:.3g}, {b} {s.median_b:.3g} over {s.n_pairs} pairs; "
              f"{s.n_pos} {a} > {b}, {s.n_neg} <; sign test one-sided p = {s.p_sign:.3g}; "
              f"{_interval_note(n, need, 'pairs')}")
    return Measured(float(np.median(d)), ci, g, c, detail, n=n, n_needed=need)


def metric_median(T: pd.DataFrame, *, metric: str) -> Measured:
    """Median of a per-seed metric (`metric`: its value at the end of training) over the runs,
    with its order-statistic interval."""
    col = _metric(T, metric).name
    g, c = _counts(T)
    x = T[col].astype(float).dropna().to_numpy()
    if not len(x):
        raise AnalysisError(f"no {col} values")
    ci, n, need = _median_of(x, x)
    return Measured(float(np.median(x)), ci, g, c,
                    f"median {metric} over {n} runs; {_interval_note(n, need)}", n=n,
                    n_needed=need)


def wedderburn(T: pd.DataFrame, *, metric: str, arm: str) -> Measured:
    """Fraction of class-multiplication coefficients recovered exactly (`metric`, at the end of
    training), median over `arm`'s runs with its order-statistic interval (conditional on the
    sweep's groups)."""
    col = _metric(T, metric).name
    sub = _arm(T, arm)
    g, c = _counts(sub)
    x = sub[col].astype(float).dropna().to_numpy()
    if not len(x):
        raise AnalysisError(f"no {col} values")
    ci, n, need = _median_of(x, x)
    per = ", ".join(f"{k} {v:.4f}" for k, v in
                    sub.groupby(sub["group"].astype(str))[col].median().items())
    return Measured(float(np.median(x)), ci, g, c,
                    f"median over {len(x)} runs at the end of training: {per}; "
                    f"{_interval_note(n, need)}", n=n, n_needed=need)


def axiom_lead(T: pd.DataFrame, *, metric: str, arm: str) -> Measured:
    """Steps by which an axiom (`metric`: its lead, grokray.metrics.axioms) precedes grokking,
    median over `arm`'s grokked runs with its order-statistic interval. An axiom never met in a
    run is a result: its lead is below grok step - the run's last step (it was not met by then),
    the interval (-inf, that]; the value is then the median of what each run allows at most."""
    col = _metric(T, metric).name
    sub = _arm(T, arm)
    g, c = _counts(sub)
    done = sub[sub["status"] == "grokked"]
    if done.empty:
        raise AnalysisError(f"no grokked {arm} runs: the lead needs a grok step")
    lead = done[col].astype(float).to_numpy()
    last = pd.to_numeric(done.get("steps_run", done.get("steps")),
                         errors="coerce").to_numpy(float)
    grok = done["grok_step"].astype(float).to_numpy()
    met = np.isfinite(lead)
    hi = np.where(met, lead, grok - last)
    lo = np.where(met, lead, -math.inf)
    ci, n, need = _median_of(lo, hi)
    never = int((~met).sum())
    detail = (f"median lead over {n} grokked runs; "
              + (f"never met in {never} of {n} runs (each: before grok step - last step); "
                 if never else "")
              + _interval_note(n, need))
    return Measured(float(np.median(hi)), ci, g, c, detail, n=n, n_needed=need)


def drift_ratio(T: pd.DataFrame, *, system: str, invariant: str, arm: str, base: str,
                max_drift: float) -> Measured:
    """Median drift of `base` / that of `arm` on one Hamiltonian system; its interval the ratio
    of the two medians' order-statistic intervals (from 7 seeds per arm). The detail says when
    `arm` itself drifts by `max_drift` or more (a ratio of two failures)."""
    col = f"metric_drift_{invariant}"
    if "hamiltonian_system" not in T or col not in T:
        raise AnalysisError(f"no {col} on {system}")
    sub = T[(T["hamiltonian_system"].astype(str) == system) & (T["status"] != "failed")]
    xa = _arm(sub, arm)[col].dropna().to_numpy(float)
    xb = _arm(sub, base)[col].dropna().to_numpy(float)
    if not len(xa) or not len(xb):
        raise AnalysisError(f"no {col} runs on {system}")
    with np.errstate(divide="ignore", invalid="ignore"):
        r = float(np.median(xb) / np.median(xa))
    ci = order_ratio_ci(xb, xb, xa, xa)
    n = min(len(xa), len(xb))
    detail = (f"{system} {invariant}: median drift {base} {np.median(xb):.3g} / {arm} "
              f"{np.median(xa):.3g} ({len(xb)} and {len(xa)} seeds); "
              + ("interval: the two medians' order-statistic intervals at 97.5%"
                 if ci is not None else
                 "no ratio interval from these seeds"))
    if np.median(xa) >= max_drift:
        detail += (f"; both arms drift by over {max_drift:.0%}: neither conserves the invariant "
                   f"(forge.hamiltonian.{system}.conserved)")
    return Measured(r, ci if ci is not None else NAN2, 0, 0, detail, n=n,
                    n_needed=RATIO_MIN_N)


def conserves(T: pd.DataFrame, *, system: str, arm: str, base: str,
              max_drift: float) -> Measured:
    """Share of `arm`'s runs on one Hamiltonian system whose learned dynamics keep every
    recorded invariant (`metric_drift_*`) within a relative drift below `max_drift` over the
    rollout, Clopper-Pearson over the runs; `base`'s share in the detail. A drift ratio between
    two arms that both fail this is a ratio of two failures, not the paper's claim: this is that
    check as a rate the one rule judges. A rollout that went non-finite (drift inf or missing)
    does not keep its invariant."""
    cols = [c for c in T.columns if str(c).startswith("metric_drift_")]
    if "hamiltonian_system" not in T or not cols:
        raise AnalysisError(f"no metric_drift_* columns on {system}")
    sub = T[(T["hamiltonian_system"].astype(str) == system) & (T["status"] != "failed")]

    def kept(a: str) -> tuple[int, int, str]:
        runs = _arm(sub, a)
        # the system's invariants: the drift columns any of its runs recorded
        inv = [c for c in cols if runs[c].notna().any()]
        if not inv:
            raise AnalysisError(f"no drift recorded on {system}")
        x = runs[inv].astype(float).fillna(math.inf).to_numpy()
        ok = (x < max_drift).all(axis=1)
        med = ", ".join(f"{c.removeprefix('metric_drift_').replace('_', ' ')} "
                        f"{np.median(runs[c].astype(float)):.3g}" for c in inv)
        return int(ok.sum()), len(runs), med

    k, n, med = kept(arm)
    kb, nb, medb = kept(base)
    detail = (f"{system}: {k} of {n} {arm} runs keep every invariant's relative drift below "
              f"{max_drift:.0%} (median drift {med}); {base}: {kb} of {nb} ({medb})")
    return Measured(k / n if n else math.nan, clopper_pearson(k, n), 0, 0, detail, n=n,
                    rate_n=n)


MEASURES: dict[str, Callable[..., Measured]] = {f.__name__: f for f in (
    speedup, median_grok_step, scaling_alpha, scaling_c, alpha_common, no_delay, mlp_fails,
    all_grok, never_groks, ungrok_rate, capacity, eff_modes, metric_median, wedderburn,
    axiom_lead, drift_ratio, conserves)}
"""measure name (claims.yaml: `measure`) -> function(trials, **params)"""
