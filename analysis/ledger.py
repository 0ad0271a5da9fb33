"""The reproduction ledger: every headline claim of the three papers beside what grokray measured.

One row per claim: the paper's number, the measured value with its 95% interval, the runs
(grokked / censored), a verdict and the command that produced it. A claim reads the output dir
of its sweep (`OUT/<sweep name>`, the sweep named in its spec file); a claim whose sweep has no
rows (or lacks the arms it compares) is a "not run" row, never an error.

Verdicts (`verdict_of`): with the paper's value p, the measured value m, its interval [lo, hi]
and the claim's null (1 for a ratio, 0 for a difference or a rate):
- reproduced: p lies in [lo, hi], or m is within the claim's tolerance of p (relative, on the
  log scale for ratios), or for a qualitative claim (a rate of 0 or 1) m equals it;
- opposite: m lies on the other side of the null from p;
- same direction, different size: otherwise.
Censored durations go through analysis.survival and analysis.speedup (Kaplan-Meier medians with
Brookmeyer-Crowley intervals, KM speedups), the power law through analysis.powerlaw (censored AFT);
rates get Clopper-Pearson intervals; values that are not durations (Wedderburn fractions, axiom
leads) a percentile bootstrap of the median.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import papers
from analysis.errors import AnalysisError
from analysis.tables import Table

REPRODUCED = "reproduced"
SAME_DIRECTION = "same direction, different size"
OPPOSITE = "opposite"
NOT_RUN = "not run"
VERDICTS = (REPRODUCED, SAME_DIRECTION, OPPOSITE, NOT_RUN)

NAN2 = (math.nan, math.nan)


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


@dataclass(frozen=True)
class Claim:
    """One headline claim of a paper and how to measure it."""

    key: str
    """Stable id, e.g. "forge.z97.speedup.forge+grokfast"."""
    paper: str
    """Which paper (papers.FORGE, papers.GEOM, papers.RFM)."""
    claim: str
    """The claim in words."""
    paper_value: float
    """The paper's number (NaN for a claim that has none)."""
    paper_text: str
    """How the paper states it."""
    spec: str
    """The CPU-scale sweep spec (relative to the repository root); "" when none exists."""
    measure: Callable[[pd.DataFrame], Measured] | None = field(default=None, repr=False)
    """Trials of the sweep -> Measured; raises AnalysisError when the rows cannot say."""
    null: float = 1.0
    """The no-effect value: the verdict's direction is the side of it (1 ratio, 0 difference)."""
    log: bool = True
    """Compare on the log scale (ratios, steps) rather than linearly."""
    tol: float = 0.25
    """Relative tolerance for 'reproduced' beside the interval test."""
    analyze: str = ""
    """The `grokray analyze ...` line that shows the computation ({dir}: the sweep dir)."""
    why_not: str = ""
    """For a claim no CPU sweep measures: why."""


@dataclass(frozen=True)
class LedgerRow:
    """One line of the ledger."""

    claim: Claim
    measured: Measured
    verdict: str
    sweep_dir: str
    """The sweep output dir read ('' when none)."""
    command: str


@dataclass(frozen=True)
class Ledger:
    """The ledger of one output root."""

    out: str
    scale: str
    rows: tuple[LedgerRow, ...]


# ---------------------------------------------------------------------------- verdicts


def verdict_of(paper: float, value: float, ci: tuple[float, float], *, null: float,
               log: bool, tol: float) -> str:
    """The generic verdict (see the module docstring)."""
    if not math.isfinite(paper) or math.isnan(value):
        return NOT_RUN
    lo, hi = ci
    if not (math.isnan(lo) or math.isnan(hi)) and lo <= paper <= hi:
        return REPRODUCED
    if math.isfinite(value):
        if log and value > 0 and paper > 0:
            close = abs(math.log(value / paper)) <= math.log1p(tol)
        else:
            close = abs(value - paper) <= tol * max(abs(paper), 1e-12)
        if close:
            return REPRODUCED
    side_p = np.sign(paper - null)
    side_m = np.sign(value - null)
    if side_p != 0 and side_m == -side_p:
        return OPPOSITE
    if side_p == 0 and side_m != 0:
        return SAME_DIRECTION
    return SAME_DIRECTION


# ---------------------------------------------------------------------------- measurements


def _clopper(k: int, n: int) -> tuple[float, float]:
    from scipy.stats import binomtest

    if n == 0:
        return NAN2
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)


def _counts(df: pd.DataFrame) -> tuple[int, int]:
    ok = df[df["status"] != "failed"]
    g = int((ok["status"] == "grokked").sum())
    return g, len(ok) - g


def _arm(df: pd.DataFrame, arm: str) -> pd.DataFrame:
    sub = df[df["arm"].astype(str) == arm]
    if sub.empty:
        raise AnalysisError(f"no runs of arm {arm!r}")
    return sub


def _km(df: pd.DataFrame):
    """Kaplan-Meier median grok step of these runs (analysis.survival: censored at budget)."""
    from analysis.survival import durations, km_median

    dur = durations(df)
    return km_median(dur["time"], dur["event"])


def _median_ci(x: np.ndarray, n_boot: int = 2000, seed: int = 0) -> tuple[float, tuple]:
    """Median and a percentile bootstrap interval, for values that are not censored durations
    (Wedderburn fractions, axiom leads, delays)."""
    if not len(x):
        return math.nan, NAN2
    rng = np.random.default_rng(seed)
    boot = np.median(rng.choice(x, size=(n_boot, len(x)), replace=True), axis=1)
    lo, hi = np.quantile(boot, [0.025, 0.975], method="inverted_cdf")
    return float(np.median(x)), (float(lo), float(hi))


def speedup(group: str | None, arm: str, base: str) -> Callable[[pd.DataFrame], Measured]:
    """median grok step of `base` / that of `arm` (on `group` when given), bootstrap CI."""

    def m(T: pd.DataFrame) -> Measured:
        from analysis.speedup import speedup_table

        sub = T if group is None else T[T["group"].astype(str) == group]
        if group is not None and sub.empty:
            raise AnalysisError(f"no runs on {group}")
        _arm(sub, arm), _arm(sub, base)
        by = "group" if "group" in sub else "arm"
        res = speedup_table(sub, base, arms=[arm], by=by, n_boot=2000, seed=0)
        row = next(r for r in res.rows if r.arm == arm)
        brow = next(r for r in res.rows if r.arm == base)
        g1, c1 = _counts(_arm(sub, arm))
        g0, c0 = _counts(_arm(sub, base))
        kind = getattr(row, "kind", "estimate")
        bound = {"lower": "; baseline median censored: a lower bound",
                 "upper": f"; {arm} median censored: an upper bound"}.get(kind, "")
        detail = (f"KM median grok step {arm} {row.median:g} ({g1}/{g1 + c1}), {base} "
                  f"{brow.median:g} ({g0}/{g0 + c0}){bound}")
        return Measured(row.speedup, bound_ci(row, brow), g1 + g0, c1 + c0, detail)

    return m


def bound_ci(row, brow) -> tuple[float, float]:  # noqa: ANN001 - SpeedupRow
    """The 95% interval of a speedup, one-sided when a median is censored: the speedup is then
    only known to exceed (baseline censored: > budget / the arm's upper median limit) or to stay
    below (arm censored: < the baseline's upper median limit / budget) a bound, so the interval
    is [bound, inf) or [0, bound], never the uninformative [0, inf) that would count any paper
    value as 'reproduced'."""
    kind = getattr(row, "kind", "estimate")
    if kind == "lower":
        return float(brow.max_time / row.median_ci[1]), math.inf
    if kind == "upper":
        return 0.0, float(brow.median_ci[1] / row.max_time)
    return row.speedup_ci


def grok_rate(arm: str,
              groups: tuple[str, ...] | None = None) -> Callable[[pd.DataFrame], Measured]:
    """Fraction of `arm`'s runs that grokked (on `groups`), Clopper-Pearson CI."""

    def m(T: pd.DataFrame) -> Measured:
        sub = _arm(T, arm)
        if groups is not None:
            sub = sub[sub["group"].astype(str).isin(groups)]
            if sub.empty:
                raise AnalysisError(f"no runs of {arm} on {', '.join(groups)}")
        g, c = _counts(sub)
        n = g + c
        per = ", ".join(f"{k} {int((s['status'] == 'grokked').sum())}/{len(s)}"
                        for k, s in sub.groupby(sub["group"].astype(str), sort=False))
        return Measured(g / n if n else math.nan, _clopper(g, n), g, c, f"{arm}: {per}")

    return m


def mlp_fails(T: pd.DataFrame) -> Measured:
    """The matched MLP's grok rate on S3/D4/A4; reproduced when it is 0 and FORGE groks every
    run within the paper's ~10^3 steps (median <= 2,000)."""
    groups = papers.MLP_FAIL_GROUPS
    mlp = grok_rate("mlp", groups)(T)
    forge = _arm(T, "forge")
    forge = forge[forge["group"].astype(str).isin(groups)]
    fg, fc = _counts(forge)
    med = _km(forge).median
    detail = (f"MLP grokked {mlp.grokked}/{mlp.grokked + mlp.censored}; FORGE grokked "
              f"{fg}/{fg + fc}, median grok step {med:g}")
    if mlp.grokked == 0 and fc == 0 and fg and med <= 2000:
        verdict = REPRODUCED
    elif mlp.value < (fg / max(fg + fc, 1)):
        verdict = SAME_DIRECTION
    else:
        verdict = OPPOSITE
    return Measured(mlp.value, mlp.ci, mlp.grokked + fg, mlp.censored + fc, detail, verdict)


def all_grok(arm: str) -> Callable[[pd.DataFrame], Measured]:
    """Fraction of `arm`'s runs that grokked over every group of the sweep (paper: all do)."""

    def m(T: pd.DataFrame) -> Measured:
        r = grok_rate(arm)(T)
        fails = [str(gname) for gname, s in _arm(T, arm).groupby("group")
                 if (s["status"] != "grokked").mean() > 0.1]
        detail = r.detail + ("; groups below 90%: " + ", ".join(fails) if fails else "")
        return Measured(r.value, r.ci, r.grokked, r.censored, detail)

    return m


def scaling_alpha(T: pd.DataFrame) -> Measured:
    """FORGE's exponent alpha of grok_step = c |G|^alpha: analysis.powerlaw's default fit (the
    censored log-normal AFT over every timed run: a censored run counts as 'longer than its
    budget')."""
    from analysis.powerlaw import fit_power_law

    f = fit_power_law(T, papers.SCALING_ARM, n_boot=0)
    if not f.fitted:
        raise AnalysisError(f"no power law: {f.reason}")
    detail = (f"{f.method}: c {f.c:.4g}; {f.n_groups} groups, {f.n_runs} runs"
              + (f"; groups with no grokked run: {', '.join(f.censored_groups)}"
                 if f.censored_groups else ""))
    return Measured(f.alpha, f.alpha_ci, f.n_grokked, f.n_censored, detail)


def eff_modes(T: pd.DataFrame) -> Measured:
    """Effective harmonic modes FORGE - MLP: median paired difference; sign test one-sided."""
    from analysis.signtest import sign_test

    s = sign_test(T, papers.EFF_MODES_METRIC, "forge", "mlp", alternative="greater")
    a, b = np.asarray(s.values_a, float), np.asarray(s.values_b, float)
    d = a - b
    d = d[np.isfinite(d)]
    med, ci = _median_ci(d)
    g, c = _counts(T)
    detail = (f"FORGE median {s.median_a:.3g}, MLP {s.median_b:.3g} over {s.n_pairs} pairs; "
              f"{s.n_pos} FORGE > MLP, {s.n_neg} <; sign test one-sided p = {s.p_sign:.3g}")
    return Measured(med, ci, g, c, detail)


def _metric_col(T: pd.DataFrame, name: str) -> str | None:
    """The trials column of a per-seed metric: `metric_<name>` as the store writes it (or the
    bare name, as in a hand-made frame); None when neither is there."""
    for col in (f"metric_{name}", name):
        if col in T:
            return col
    return None


def wedderburn(T: pd.DataFrame) -> Measured:
    """Fraction of class-multiplication coefficients recovered exactly (final, grokked runs)."""
    col = _metric_col(T, "wedderburn_frac")
    if col is None:
        raise AnalysisError("no metric_wedderburn_frac column (metric wedderburn not computed)")
    sub = T[T["arm"].astype(str) == "forge"] if "forge" in set(T["arm"]) else T
    g, c = _counts(sub)
    x = sub[col].astype(float).dropna().to_numpy()
    med, ci = _median_ci(x)
    per = ", ".join(f"{k} {v:.4f}" for k, v in
                    sub.groupby(sub["group"].astype(str))[col].median().items())
    return Measured(med, ci, g, c, f"median over {len(x)} runs at the end of training: {per}")


def ident_lead(T: pd.DataFrame) -> Measured:
    """Steps by which the identity axiom (L_ident <= 1% of its initial value) precedes grokking."""
    col = _metric_col(T, "ident_lead")
    if col is None:
        raise AnalysisError("no metric_ident_lead column (FORGE loss curves not recorded)")
    sub = T[T["arm"].astype(str) == "forge"] if "forge" in set(T["arm"]) else T
    g, c = _counts(sub)
    x = sub[col].astype(float).dropna().to_numpy()
    med, ci = _median_ci(x)
    return Measured(med, ci, g, c, f"median lead over {len(x)} grokked runs with an emergence "
                    f"step; mean {np.mean(x) if len(x) else math.nan:.4g}")


def capacity(T: pd.DataFrame) -> Measured:
    """Capacity R*d where P(grok) crosses 0.5 on S4 (logistic fit or separation bracket)."""
    from analysis.phase import phase_diagram

    ph = phase_diagram(T)
    g, c = _counts(T)
    return Measured(ph.threshold, ph.threshold_ci, g, c,
                    f"{ph.method}; {len(ph.cells)} (R, d) cells, {ph.n_runs} runs")


def hamiltonian_drift(system: str, invariant: str = "energy",
                      arm: str = "dad+algebra", base: str = "mlp"
                      ) -> Callable[[pd.DataFrame], Measured]:
    """Median drift of `base` / that of `arm` on one Hamiltonian system, bootstrap CI (runs
    resampled within each arm). The paper reports 20-150,000x: reproduced inside that range,
    same direction between 1 and 20, opposite below 1. A ratio inside the range whose arm still
    drifts by 100% or more compares two failures: same direction, not reproduced."""

    def m(T: pd.DataFrame) -> Measured:
        col = f"metric_drift_{invariant}"
        if "hamiltonian_system" not in T or col not in T:
            raise AnalysisError(f"no {col} on {system}")
        sub = T[(T["hamiltonian_system"].astype(str) == system) & (T["status"] != "failed")]
        xa = _arm(sub, arm)[col].dropna().to_numpy(float)
        xb = _arm(sub, base)[col].dropna().to_numpy(float)
        if not len(xa) or not len(xb):
            raise AnalysisError(f"no {col} runs on {system}")
        rng = np.random.default_rng(0)
        ba = np.median(rng.choice(xa, size=(2000, len(xa))), axis=1)
        bb = np.median(rng.choice(xb, size=(2000, len(xb))), axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = float(np.median(xb) / np.median(xa))
            lo, hi = np.quantile(bb / ba, [0.025, 0.975], method="inverted_cdf")
        verdict = (REPRODUCED if 20 <= r <= 150_000 else SAME_DIRECTION if r > 1
                   else OPPOSITE)
        detail = (f"{system} {invariant}: median drift {base} {np.median(xb):.3g} / {arm} "
                  f"{np.median(xa):.3g} ({len(xb)} and {len(xa)} seeds)")
        if verdict == REPRODUCED and np.median(xa) >= 1.0:  # a ratio of two failures
            verdict = SAME_DIRECTION
            detail += "; both arms drift by over 100%: neither conserves the invariant"
        return Measured(r, (float(lo), float(hi)), 0, 0, detail, verdict)

    return m


def topology_speedup(T: pd.DataFrame) -> Measured:
    """KM median grok step of the LayerNorm baseline / that of the fully bounded spherical
    topology, on modular arithmetic (analysis.speedup.speedup_table)."""
    from analysis.speedup import speedup_table

    tr = T[(T["arch"] == "transformer") & (T["op"] != "group")]
    if not {"layernorm", "spherical_bounded"} <= set(tr["arm"].astype(str)):
        raise AnalysisError("needs a layernorm arm and a spherical_bounded arm")
    res = speedup_table(tr, "layernorm", arms=["spherical_bounded"], by="group")
    row = next(r for r in res.rows if r.arm == "spherical_bounded")
    brow = next(r for r in res.rows if r.arm == "layernorm")
    base, fast = _arm(tr, "layernorm"), _arm(tr, "spherical_bounded")
    g0, c0 = _counts(base)
    g1, c1 = _counts(fast)
    kind = getattr(row, "kind", "estimate")
    return Measured(row.speedup, row.speedup_ci, g0 + g1, c0 + c1,
                    f"KM median step layernorm {brow.median:g} ({g0}/{g0 + c0}), "
                    f"spherical_bounded {row.median:g} ({g1}/{g1 + c1}); {kind}")


def uniform_no_delay(T: pd.DataFrame) -> Measured:
    """Uniform attention: grok step - memorization step (the grokking delay), median over runs;
    reproduced when every run groks and the median delay is at most 2 evaluations."""
    tr = T[(T["arch"] == "transformer") & (T["op"] != "group")]
    attn = tr.get("transformer_attention", pd.Series("standard", index=tr.index)).astype(str)
    u = tr[attn == "uniform"]
    if u.empty:
        raise AnalysisError("no uniform-attention arm on modular arithmetic")
    g, c = _counts(u)
    delay = (u["grok_step"].astype(float) - u["memorize_step"].astype(float)).to_numpy()
    delay = np.where(u["status"].to_numpy() == "grokked", delay, np.inf)
    med, ci = _median_ci(delay)
    ev = float(u["eval_every"].max()) if "eval_every" in u else 25.0
    verdict = (REPRODUCED if c == 0 and med <= 2 * ev
               else SAME_DIRECTION if math.isfinite(med) else OPPOSITE)
    return Measured(med, ci, g, c, f"delay in steps (eval every {ev:g}); {g}/{g + c} grokked",
                    verdict)


def s5_control(T: pd.DataFrame) -> Measured:
    """Spherical topologies on S5 composition: grok rate (paper: they fail)."""
    tr = T[(T["arch"] == "transformer") & (T["op"] == "group")]
    norm = tr.get("transformer_norm", pd.Series("", index=tr.index)).astype(str)
    sph = tr[norm.str.startswith("spherical")]
    if sph.empty:
        raise AnalysisError("no spherical arm on S5")
    g, c = _counts(sph)
    n = g + c
    return Measured(g / n if n else math.nan, _clopper(g, n), g, c,
                    f"spherical arms on S5: {g}/{n} grokked",
                    REPRODUCED if g == 0 else SAME_DIRECTION if g < n else OPPOSITE)


def rfm_iters(op: str) -> Callable[[pd.DataFrame], Measured]:
    """RFM (Gaussian kernel): the iteration at which test accuracy reaches the grok threshold."""

    def m(T: pd.DataFrame) -> Measured:
        sub = T[(T["arch"].astype(str) == "rfm") & (T["op"].astype(str) == op)]
        if "arm" in sub and (sub["arm"].astype(str) == "rfm_gaussian").any():
            sub = sub[sub["arm"].astype(str) == "rfm_gaussian"]
        if sub.empty:
            raise AnalysisError(f"no RFM runs on {op}")
        g, c = _counts(sub)
        km = _km(sub)
        return Measured(km.median, (km.lo, km.hi), g, c,
                        f"KM median grok iteration, {g}/{g + c} grokked")

    return m


# ---------------------------------------------------------------------------- the claims

CPU = "sweeps/cpu"


def _s(name: str) -> str:
    return f"{CPU}/{name}.yaml"


CLAIMS: tuple[Claim, ...] = (
    Claim("forge.nonabelian.mlp_fails", papers.FORGE,
          "S3, D4, A4: matched MLP fails (val acc 0.000) while FORGE groks within ~10^3 steps",
          0.0, "MLP 0/9 within 15,000 steps", _s("nonabelian"), mlp_fails, null=1.0, log=False,
          tol=0.0, analyze="grokray analyze speedup {dir} --baseline mlp"),
    Claim("forge.z97.speedup.forge+grokfast", papers.FORGE,
          "Z/97 4-way ablation: FORGE+Grokfast groks faster than the MLP", 10.20, "10.20x",
          _s("z97_ablation"), speedup("Z97", "forge+grokfast", "mlp"),
          analyze="grokray analyze speedup {dir} --baseline mlp"),
    Claim("forge.z97.speedup.mlp+grokfast", papers.FORGE,
          "Z/97 4-way ablation: MLP+Grokfast vs MLP", 0.86, "0.86x (slower)",
          _s("z97_ablation"), speedup("Z97", "mlp+grokfast", "mlp"),
          analyze="grokray analyze speedup {dir} --baseline mlp"),
    Claim("forge.a5.speedup.mlp", papers.FORGE, "A5: FORGE vs MLP", 10.1, "10.1x",
          _s("a5_ablation"), speedup("A5", "forge", "mlp"),
          analyze="grokray analyze speedup {dir} --baseline mlp"),
    Claim("forge.a5.speedup.mlp+grokfast", papers.FORGE, "A5: FORGE vs MLP+Grokfast", 3.0,
          "3.0x", _s("a5_ablation"), speedup("A5", "forge", "mlp+grokfast"),
          analyze="grokray analyze speedup {dir} --baseline mlp+grokfast"),
    Claim("forge.all_groups_grok", papers.FORGE,
          "FORGE groks on every tested group (scaling family; CPU: up to order 120)", 1.0,
          "all tested groups grok", _s("scaling"), all_grok("forge"), null=0.0, log=False,
          tol=0.1),
    Claim("forge.scaling.alpha", papers.FORGE, "grok step = c |G|^alpha over the scaling family",
          0.170, "alpha 0.170 (c 732, R^2 0.785; 20 groups, 68 seeds)", _s("scaling"),
          scaling_alpha, null=0.0, log=False,
          analyze="grokray analyze scaling {dir} --arms forge"),
    Claim("forge.eff_modes", papers.FORGE,
          "non-Fourier mechanism: FORGE uses more effective harmonic modes than the MLP",
          7.0, "about 23 vs 16 (difference ~7), sign test p < 0.016", _s("fourier_sign"),
          eff_modes, null=0.0, log=False, tol=0.5,
          analyze="grokray analyze signtest {dir} --metric metric_eff_modes --arms forge mlp "
                  "--alternative greater"),
    Claim("forge.wedderburn", papers.FORGE,
          "Wedderburn recovery: class-multiplication coefficients recovered exactly", 1630 / 1639,
          "about 1,630 of 1,639", _s("axioms"), wedderburn, null=0.0, log=False, tol=0.01),
    Claim("forge.axioms.ident_lead", papers.FORGE,
          "axiom emergence: the identity axiom holds before generalization (lead in steps)",
          583.0, "583 +- 80 steps before", _s("axioms"), ident_lead, null=0.0, log=False,
          tol=0.25),
    Claim("forge.capacity.threshold", papers.FORGE,
          "capacity-lift sweep on S4: grokking phase transition in R*d", 256.0, "about 256",
          _s("capacity"), capacity, null=math.inf, analyze="grokray analyze phase {dir}"),
    Claim("forge.cp_rank_s4", papers.FORGE, "CP rank of T_S4 <= 55 < 64", 55.0, "<= 55",
          "", why_not="a bound, not a sweep: `grokray cprank S4` prints 55 and an ALS search "
                  "(docs/cprank.md)"),
    *(Claim(f"forge.hamiltonian.{system}.{inv}", papers.FORGE,
            f"beyond groups: {system} {inv.replace('_', ' ')} drift, MLP / DAD with algebra "
            "losses (long rollout)", 20.0, "20-150,000x lower (over three systems)",
            _s("hamiltonian"), hamiltonian_drift(system, inv),
            analyze="grokray analyze drift {dir} --baseline mlp")
      for system, inv in (("harmonic", "energy"), ("pendulum", "energy"), ("kepler", "energy"),
                          ("kepler", "angular_momentum"))),
    Claim("forge.qm9", papers.FORGE, "beyond groups: QM9 U0 MAE 15.3% better", 15.3, "15.3%",
          "", why_not="not run: no dataset download possible (QM9 is not generated here)"),
    Claim("geom.spherical.speedup", papers.GEOM,
          "fully bounded spherical topology vs LayerNorm/RMSNorm baseline on Z_p addition",
          54160 / 2100, ">20x (54,160 vs 2,100 epochs)", _s("topology"), topology_speedup,
          analyze="grokray analyze speedup {dir} --by group --baseline layernorm"),
    Claim("geom.uniform.no_delay", papers.GEOM,
          "uniform attention generalizes with no grokking delay in every seed (delay in steps)",
          0.0, "no delay", _s("topology"), uniform_no_delay, null=math.inf, log=False,
          analyze="grokray analyze curves {dir} --where transformer_attention=uniform"),
    Claim("geom.s5.control", papers.GEOM,
          "negative control: spherical models fail to generalize on S5 (grok rate)", 0.0,
          "fail in 100,000 epochs", _s("topology"), s5_control, null=1.0, log=False, tol=0.0,
          analyze="grokray analyze speedup {dir} --where group=S5 --baseline layernorm"),
    *(Claim(f"rfm.iters.{op}", papers.RFM, f"RFM on Z_61 {op}: test accuracy jumps to 100% at "
            "iteration", num.value, num.text, _s("rfm"), rfm_iters(op), null=math.inf,
            analyze="grokray analyze speedup {dir} --by op --baseline rfm_quadratic")
      for op, num in papers.RFM_ITERS.items()),
)


# ---------------------------------------------------------------------------- the ledger


def sweep_name(spec: str, root: Path) -> str:
    """The sweep name of a spec file (its `name:`), read without running anything."""
    from grokray.sweep.spec import load_spec

    return load_spec(str(root / spec)).name


def _load_trials(path: Path) -> pd.DataFrame | str | None:
    """The sweep's trials; None when it has none; the reason (str) when they cannot be read."""
    from analysis.load import load
    from grokray.errors import GrokrayError

    if not (path / "trials").is_dir():
        return None
    try:
        T = load([path]).trials
    except GrokrayError as exc:  # a damaged or foreign file: that sweep's claims are not run
        return f"cannot read {path}: {exc}"
    return None if T.empty else T


def repo_root() -> Path:
    """The directory holding sweeps/ (the repository root)."""
    return Path(__file__).resolve().parent.parent


def spec_hashes(spec: str, root: Path) -> set[str]:
    """The config hashes of a spec's trials (what the sweep runs now, at today's defaults)."""
    from grokray.sweep.spec import load_spec

    return {c.config_hash() for c in load_spec(str(root / spec)).trials()}


def ledger(out: str | Path, *, scale: str = "cpu", claims: tuple[Claim, ...] = CLAIMS,
           root: Path | None = None, current_only: bool = True) -> Ledger:
    """Every claim's row from the sweep outputs under `out` (missing sweeps: not run).

    current_only: read only the rows of the configs the spec runs now (a sweep dir may also hold
    rows of an older default, e.g. FORGE's rank before issue 13); off for synthetic fixtures.
    """
    out = Path(out)
    root = root or repo_root()
    rows = []
    cache: dict[str, pd.DataFrame | None] = {}
    for c in claims:
        if not c.spec or c.measure is None:
            rows.append(LedgerRow(c, Measured(math.nan, detail=c.why_not), NOT_RUN, "", ""))
            continue
        name = sweep_name(c.spec, root)
        d = out / name
        if name not in cache:
            T = _load_trials(d)
            if current_only and isinstance(T, pd.DataFrame):
                keep = T["config_hash"].astype(str).isin(spec_hashes(c.spec, root))
                if not keep.any():
                    T = (f"the {len(T)} rows in {d} are of other configs than {c.spec} runs "
                         "now (older defaults?): run the sweep again")
                else:
                    T = T[keep]
            cache[name] = T
        T = cache[name]
        cmd = (f"grokray sweep {c.spec} --out {out} && "
               + (c.analyze.format(dir=d) if c.analyze else f"grokray analyze ledger {out}"))
        if T is None or isinstance(T, str):
            why = T if isinstance(T, str) else f"no rows in {d}"
            rows.append(LedgerRow(c, Measured(math.nan, detail=why), NOT_RUN, str(d), cmd))
            continue
        try:
            m = c.measure(T)
        except (AnalysisError, KeyError, ValueError) as exc:
            rows.append(LedgerRow(c, Measured(math.nan, detail=f"not computed: {exc}"),
                                  NOT_RUN, str(d), cmd))
            continue
        v = m.verdict or verdict_of(c.paper_value, m.value, m.ci, null=c.null, log=c.log,
                                    tol=c.tol)
        rows.append(LedgerRow(c, m, v, str(d), cmd))
    return Ledger(str(out), scale, tuple(rows))


def ledger_table(L: Ledger) -> Table:
    """The ledger as a Table (Markdown / CSV / LaTeX / JSON through analysis.tables)."""
    rows = tuple(
        (r.claim.key, r.claim.paper, r.claim.claim, r.claim.paper_text, r.measured.value,
         r.measured.ci[0], r.measured.ci[1], r.measured.grokked, r.measured.censored, r.verdict,
         r.measured.detail, r.command)
        for r in L.rows
    )
    counts = {v: sum(r.verdict == v for r in L.rows) for v in VERDICTS}
    notes = ("verdicts: " + ", ".join(f"{v} {n}" for v, n in counts.items()),
             "95% intervals: Kaplan-Meier (Brookmeyer-Crowley) for median grok steps and their "
             "ratios, censored AFT for alpha, Clopper-Pearson for rates, bootstrap for medians "
             "of non-durations, delta method or the separation bracket for the capacity "
             "threshold.")
    return Table(f"Reproduction ledger ({L.scale} scale, {L.out})",
                 ("claim", "paper", "what", "paper value", "measured", "ci_low", "ci_high",
                  "grokked", "censored", "verdict", "detail", "command"), rows, notes)


def write_ledger(L: Ledger, out: str | Path | None = None) -> tuple[Path, Path]:
    """Write ledger.md and ledger.json into `out` (default: the ledger's output root)."""
    from analysis.tables import render, to_markdown

    d = Path(out or L.out)
    d.mkdir(parents=True, exist_ok=True)
    t = ledger_table(L)
    md, js = d / "ledger.md", d / "ledger.json"
    md.write_text(to_markdown(t, heading="#"))
    js.write_text(render([t], "json"))
    return md, js
