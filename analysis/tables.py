"""Turn computed results into tables and render them as Markdown, CSV, LaTeX or JSON.

A `Table` holds raw values (numbers stay numbers); rendering formats them: floats to 4
significant digits, inf as `inf`, NaN as empty (`null` in JSON).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

from grokray_analysis.atgrok import MetricPoints
from grokray_analysis.axiomlead import AxiomLeads
from grokray_analysis.cpcompare import CPComparison
from grokray_analysis.curves import CurveSummary, is_accuracy
from grokray_analysis.drift import DriftTable
from grokray_analysis.phase import PhaseDiagram, PhaseDiagrams
from grokray_analysis.powerlaw import AlphaComparison, ScalingResult
from grokray_analysis.signtest import SignTestResult
from grokray_analysis.speedup import SpeedupTable

FORMATS = ("md", "csv", "tex", "json")


@dataclass(frozen=True)
class Table:
    """A titled table of raw values."""

    title: str
    """One line saying what the table is."""
    columns: tuple[str, ...]
    """Column names."""
    rows: tuple[tuple[object, ...], ...]
    """Rows of raw values, one per line, in column order."""
    notes: tuple[str, ...] = ()
    """Lines printed under the table (Markdown, LaTeX, JSON; not CSV)."""


@dataclass(frozen=True)
class Bound:
    """A one-sided value: the quantity is larger (`op` ">") or smaller ("<") than `value`.

    Printed "> 4000" in every format (JSON: {"bound": ">", "value": 4000}).
    """

    op: str
    """">" or "<"."""
    value: float
    """The bound."""


def median_value(median: float, max_time: float) -> object:
    """A Kaplan-Meier median as a table value: the number, or `> max_time` when censored."""
    return Bound(">", max_time) if math.isinf(median) else median


def fmt(v: object) -> str:
    """A value as table text."""
    if v is None:
        return ""
    if isinstance(v, Bound):
        return f"{v.op} {fmt(v.value)}"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == int(v) and abs(v) < 1e7:
            return str(int(v))
        return f"{v:.4g}"
    if isinstance(v, (tuple, list)):
        return " ".join(fmt(x) for x in v)
    return str(v)


# ---- result -> tables -----------------------------------------------------------------------


INTERVAL_TEXT = {
    "group": "groups as the unit of replication: cluster-robust (sandwich) covariance from "
             "per-group score sums, t quantile with G - 2 degrees of freedom, G groups (ols "
             "with --medians: the points are the groups, t_{G-2})",
    "per-run": "every run an independent observation (no group effect assumed)",
    "group-bootstrap": "groups as the unit: percentile interval over resamples of whole groups, "
                       "the censored fit refitted per resample",
}
METHOD_TEXT = {
    "aft": "censored log-normal AFT (every run; not-grokked runs right-censored at the budget)",
    "ols": "OLS on log-log over grokked runs only (censored runs dropped: biased; paper's R^2)",
}


def scaling_tables(res: ScalingResult, comparison: AlphaComparison | None = None) -> list[Table]:
    """Power-law fits, one row per (arm, method); runs per group; the exponent comparison."""
    comparison = comparison or res.comparison
    cols = (
        res.by, "method", "interval", "c", "c_lo", "c_hi", "alpha", "alpha_lo", "alpha_hi",
        "alpha_run_lo", "alpha_run_hi", "sigma", "alpha_seedboot_lo", "alpha_seedboot_hi", "r2",
        "groups", "points", "runs", "grokked", "censored", "failed", "never_grokked_groups",
        "note",
    )
    rows = tuple(
        (
            f.arm, f.method + ("-medians" if f.medians else ""), f.interval, f.c, *f.c_ci,
            f.alpha, *f.alpha_ci, *f.alpha_run_ci, f.sigma, *f.alpha_boot_ci, f.r2, f.n_groups,
            f.n_points, f.n_runs, f.n_grokked, f.n_censored, f.n_excluded,
            " ".join(f.censored_groups), f.reason or f.note,
        )
        for f in res.fits
    )
    methods = list(dict.fromkeys(f.method for f in res.fits))
    intervals = list(dict.fromkeys(f.interval for f in res.fits))
    n_boot = max((f.n_boot for f in res.fits if f.method == "ols"), default=0)
    notes = tuple(f"method {m}: {METHOD_TEXT[m]}." for m in methods) + tuple(
        f"interval {i}: {INTERVAL_TEXT[i]}." for i in intervals) + (
        "c * |G|^alpha is the median grok step at order |G|. alpha_lo/hi: the 95% interval "
        "the interval column names; alpha_run_lo/hi: the per-run interval beside it (every run "
        "independent: t_{k-2}, k grokked runs; for aft Wald widened to match OLS when nothing "
        "is censored). censored = runs that did not grok within their budget (not_grokked, "
        "diverged); failed runs carry no time.",
    )
    if "ols" in methods:
        notes += (f"alpha_seedboot: percentile bootstrap over seeds for ols ({n_boot} "
                  "resamples; the runs of a drawn seed come along in every group: groups held "
                  "fixed, no group effect).",)
    out = [Table("Power law grok_step = c * |G|^alpha", cols, rows, notes)]
    seen, grows = set(), []
    for f in res.fits:
        if f.arm in seen:
            continue
        seen.add(f.arm)
        grows += [(f.arm, g.group, g.order, g.n, g.grokked, g.censored,
                   median_value(g.median, g.max_time)) for g in f.groups]
    out.append(Table(
        "Runs per group: grokked / censored", (res.by, "group", "order", "runs", "grokked",
                                               "censored", "km_median"),
        tuple(grows),
        ("km_median: Kaplan-Meier median grok step; '> T' when half or more of the runs never "
         "grokked (the median is beyond the largest budget T).",),
    ))
    if comparison is not None:
        c = comparison
        out.append(
            Table(
                "Exponent difference (interaction term)",
                ("arm_a", "arm_b", "method", "alpha_a", "alpha_b", "diff", "diff_lo", "diff_hi",
                 "t", "p_value", "points", "note"),
                ((c.arm_a, c.arm_b, c.method, c.alpha_a, c.alpha_b, c.diff, *c.diff_ci, c.t,
                  c.p_value, c.n_points, c.reason),),
                (f"log T ~ log|G| * [arm == {c.arm_b}]; method {c.method}: "
                 f"{METHOD_TEXT[c.method]}; interval {c.interval}: "
                 + ("a group's runs in both arms one cluster, t on G - 2"
                    if c.interval == "group" else "runs independent") + ".",),
            )
        )
    return out


def signtest_tables(res: SignTestResult) -> list[Table]:
    """One row: counts of the paired differences (decided, tied, undecidable) and p-values."""
    cols = (
        "metric", "arm_a", "arm_b", "alternative", "pairs", "a>b", "a<b", "ties", "undecidable",
        "censored", "unpaired", "median_a", "median_b", "p_sign", "wilcoxon_n", "wilcoxon_stat",
        "p_wilcoxon",
    )
    med_a = median_value(res.median_a, res.max_a)
    med_b = median_value(res.median_b, res.max_b)
    row = (
        res.metric, res.arm_a, res.arm_b, res.alternative, res.n_pairs, res.n_pos, res.n_neg,
        res.n_ties, res.n_undecided, res.n_censored, res.n_missing, med_a, med_b, res.p_sign,
        res.n_wilcoxon, res.w_stat, res.p_wilcoxon,
    )
    notes = [
        f"Paired by {', '.join(res.pair_by)}; exact binomial sign test on the decided pairs "
        "(ties left out, counted); Wilcoxon signed-rank on the pairs where both values are "
        "observed.",
    ]
    if res.metric == "grok_step":
        notes.append(
            "A run that never grokked is censored at its budget: a pair with one censored run is "
            "decided when the other grokked within that budget; 'undecidable' pairs (both "
            "censored, or a grok after the other's budget) are counted, not tested. Medians: "
            "Kaplan-Meier ('> T': censored)."
        )
    return [Table(f"Sign test: {res.metric}, {res.arm_a} vs {res.arm_b}", cols, (row,),
                  tuple(notes))]


def speedup_tables(res: SpeedupTable, wide: bool = True) -> list[Table]:
    """The ablation layout (wide: one row per group) or one row per (group, arm) (long)."""
    note = (
        f"Speedup = Kaplan-Meier median grok step of {res.baseline} / of the arm. A median is "
        "'> T' when half or more of its runs never grokked (beyond the largest budget T); then "
        "the speedup is a bound: '> x' (baseline censored: at least x), '< x' (arm censored), "
        "'n/a' (both censored). Intervals: 95% Brookmeyer-Crowley for a median; for a speedup "
        "the ratio of two 97.5% median intervals (>= 95% joint coverage).",
    )
    if not wide:
        cols = (res.by, "arm", "k", "n", "rate", "median", "median_lo", "median_hi", "speedup",
                "speedup_lo", "speedup_hi", "kind", "failed")
        rows = tuple(
            (r.group, r.arm, r.k, r.n, r.k / r.n if r.n else math.nan,
             median_value(r.median, r.max_time), *r.median_ci, speedup_value(r),
             *r.speedup_ci, r.kind, r.n_failed)
            for r in res.rows
        )
        return [Table(f"Speedup vs {res.baseline}", cols, rows, note)]
    cols = [res.by]
    for a in res.arms:
        cols += [f"{a} step (k/n)"] + ([] if a == res.baseline else [f"{a} speedup"])
    groups = list(dict.fromkeys(r.group for r in res.rows))
    cell = {(r.group, r.arm): r for r in res.rows}
    rows = []
    for g in groups:
        row: list[object] = [g]
        for a in res.arms:
            r = cell.get((g, a))
            row.append(f"{fmt(median_value(r.median, r.max_time))} ({r.k}/{r.n})" if r else "")
            if a != res.baseline:
                row.append(_speedup_text(r) if r else "")
        rows.append(tuple(row))
    return [Table(f"Speedup vs {res.baseline}", tuple(cols), tuple(rows), note)]


def speedup_value(r) -> object:
    """The speedup as a table value: a number, a Bound ('> x', '< x'), or None (undefined)."""
    if r.kind == "lower":
        return Bound(">", r.speedup)
    if r.kind == "upper":
        return Bound("<", r.speedup)
    if r.kind == "none" or math.isnan(r.speedup):
        return None
    return r.speedup


def _speedup_text(r) -> str:
    if r.kind == "none" or math.isnan(r.speedup):
        return "n/a (both censored)" if r.n and r.k == 0 else "n/a"
    lo, hi = r.speedup_ci
    ci = "" if math.isnan(lo) else f" [{fmt(sig3(lo))}, {fmt(sig3(hi))}]"
    op = {"lower": "> ", "upper": "< "}.get(r.kind, "")
    return f"{op}{r.speedup:.3g}x{ci}"


def sig3(v: float) -> float:
    """v rounded to 3 significant digits (inf/NaN kept)."""
    return float(f"{v:.3g}") if math.isfinite(v) else v


def phase_tables(res: PhaseDiagrams | PhaseDiagram) -> list[Table]:
    """The grid cells of every arm, and each arm's capacity threshold."""
    diagrams = res.diagrams if isinstance(res, PhaseDiagrams) else (res,)
    cols = ("arm", "R", "d", "R*d", "k", "n", "grok_frac", "median_step")
    rows = tuple(
        (p.arm, c.rank, c.d, c.rank * c.d, c.k, c.n, c.frac, median_value(c.median, c.max_time))
        for p in diagrams for c in p.cells
    )
    thr = Table(
        "Capacity threshold (P(grok) = 0.5)",
        ("arm", "threshold", "lo", "hi", "method", "gap_lo", "gap_hi", "delta_lo", "delta_hi",
         "b0", "b1", "runs", "failed"),
        tuple((p.arm, p.threshold, *p.threshold_ci, p.method, *p.gap, *p.delta_ci, p.b0, p.b1,
               p.n_runs, p.n_failed) for p in diagrams),
        ("logit P(grok) = b1 (log(R*d) - log C*), b1 >= 0; 95% profile-likelihood interval "
         "(lo 0 / hi inf: unbounded). method separation: no run grokked at or below gap_lo, every "
         "run grokked at or above gap_hi; the MLE does not exist and the interval holds the gap. "
         "delta_lo/hi: the delta-method interval, shown for comparison only (unreliable near "
         "separation). method none: every run had the same outcome; no estimate, only the "
         "one-sided bound (nothing grokked: C* > lo; everything grokked: C* < hi).",)
        + (("Arms pooled into one diagram on request.",)
           if isinstance(res, PhaseDiagrams) and res.pooled else ()),
    )
    return [Table("Phase diagram over rank R and width d (k/n grokked per cell)", cols, rows),
            thr]


def cpcompare_tables(res: CPComparison) -> list[Table]:
    """The capacity threshold beside the CP-rank bounds of the same group."""
    n = res.order
    rows = [
        ("measured capacity threshold C* (R*d)", res.threshold,
         f"95% [{fmt(res.threshold_ci[0])}, {fmt(res.threshold_ci[1])}]"),
        ("smallest grokking R*d in the grid", res.min_capacity_grokked, ""),
        ("smallest grokking R in the grid", res.min_rank_grokked, ""),
        ("CP lower bound (Alder-Strassen 2n-k)", res.lower_bound, "over C"),
        ("Wedderburn upper bound sum R(d_i)", res.wedderburn_bound, "over C"),
        ("trivial upper bound n^2", res.trivial_bound, ""),
    ]
    rows += [(f"numerical ALS rank over {f}", r, "upper bound; NaN: none found")
             for f, r in res.numerical]
    rows += [
        ("T_G floor (2n-k)*n in R*d", res.exact_floor, f"logits = T_G needs R >= "
         f"{res.lower_bound}, d >= n = {n}"),
        ("Wedderburn capacity bound*n in R*d", res.wedderburn_capacity, "exact CP exists"),
        ("faithful capacity rank*dim in R*d", res.faithful_capacity,
         f"exact product on {res.faithful or '?'} (upper bound on what suffices)"),
    ]
    notes = (
        res.verdict + ".",
        "n = |G|, k = number of irreps. Exact bounds concern exact products; grokking needs "
        "held-out argmax accuracy within a finite budget: C* depends on the sweep's steps/lr/wd, "
        "a bound on none (docs/cprank.md, 'Link to the capacity-lift sweep').",
    )
    arm = "" if res.arm == "all" else f" ({res.arm})"
    return [Table(f"Capacity threshold vs CP rank of T_{res.group}{arm}", ("quantity", "value",
                                                                      "note"),
                  tuple(rows), notes)]


def drift_tables(res: DriftTable) -> list[Table]:
    """Median invariant drift per system and arm, and the ratio to the baseline arm."""
    cols = ("system", "invariant", "arm", "seeds", "median_drift", "min", "max", "blowups",
            "leapfrog_drift", f"ratio_{res.baseline}/arm")
    rows = tuple((c.system, c.invariant, c.arm, c.n, c.median, c.lo, c.hi, c.blowups,
                  c.reference, c.ratio) for c in res.cells)
    note = ("drift = mean over held-out orbits of max_t |I(x_t) - I(x_0)| / |I(x_0)|; ratio > 1: "
            "the arm drifts less than the baseline; inf drift = a rollout blew up.",)
    return [Table("Invariant drift of learned Hamiltonian dynamics", cols, rows, note)]


def curve_tables(res: CurveSummary) -> list[Table]:
    """One row per (arm, metric): runs, last step, final median/IQR, first crossing step."""
    cols = ("arm", "metric", "runs", "last_step", "final_median", "final_q25", "final_q75",
            f"first_step_median>={res.threshold:g}")
    rows = tuple(
        (b.arm, b.metric, b.n_runs, b.step[-1], b.median[-1], b.lo[-1], b.hi[-1],
         b.cross_step if is_accuracy(b.metric) else "n/a (not an accuracy)")
        for b in res.bands
    )
    return [Table(f"Curves: {', '.join(res.metrics or (res.metric,))} by arm", cols, rows)]


def atgrok_tables(res: MetricPoints) -> list[Table]:
    """Each metric at the first eval, the grok step and the end: median (min-max) per arm."""
    def mr(t: tuple[float, float, float]) -> str:
        return "" if math.isnan(t[0]) else f"{fmt(t[0])} ({fmt(t[1])}-{fmt(t[2])})"

    cols = (res.by, "arm", "metric", "runs", "grokked", "median_grok_step", "init", "at_grok",
            "end")
    rows = tuple((c.by, c.arm, c.metric, c.runs, c.grokked, c.grok_step, mr(c.init),
                  mr(c.at_grok), mr(c.end)) for c in res.cells)
    note = ("median (min-max) over runs; init: first eval (step 0), at_grok: the eval at the "
            "run's grok step (grokked runs), end: last finite eval",)
    return [Table("Curve metrics at init, at the grok step and at the end", cols, rows, note)]


def axiomlead_tables(res: AxiomLeads) -> list[Table]:
    """Axiom lead over grokking per arm and threshold definition."""
    cols = (res.by, "arm", "axiom", "definition", "runs", "grokked", "with_lead", "median_lead",
            "mean_lead", "sd_lead", "min_lead", "max_lead", "lead>0", "median_emergence_step")
    rows = tuple((c.by, c.arm, c.axiom, c.definition, c.runs, c.grokked, c.n, c.median, c.mean,
                  c.sd, c.lo, c.hi, c.positive, c.median_step) for c in res.cells)
    note = ("lead = grok step - emergence step (> 0: the axiom holds before generalization); "
            "rel=r: L <= r * L(step 0); abs=a: L <= a; +held: L stays below through the grok "
            "step",)
    return [Table("Axiom emergence lead over grokking", cols, rows, note)]


# ---- rendering ------------------------------------------------------------------------------


def to_markdown(t: Table, heading: str = "###") -> str:
    lines = [f"{heading} {t.title}", ""] if heading else []
    lines.append("| " + " | ".join(t.columns) + " |")
    lines.append("|" + "|".join("---" for _ in t.columns) + "|")
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in t.rows]
    if t.notes:
        lines += [""] + list(t.notes)
    return "\n".join(lines) + "\n"


def to_csv(t: Table) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(t.columns)
    w.writerows([fmt(v) for v in row] for row in t.rows)
    return buf.getvalue()


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        ">": r"$>$", "<": r"$<$"}


def _tex(s: str) -> str:
    return "".join(_TEX.get(ch, ch) for ch in s)


def to_latex(t: Table) -> str:
    lines = [
        f"% {t.title}",
        r"\begin{tabular}{" + "l" * len(t.columns) + "}",
        r"\toprule",
        " & ".join(_tex(c) for c in t.columns) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(_tex(fmt(v)) for v in row) + r" \\" for row in t.rows]
    lines += [r"\bottomrule", r"\end{tabular}"]
    lines += [f"% {n}" for n in t.notes]
    return "\n".join(lines) + "\n"


def _json_value(v: object) -> object:
    if isinstance(v, Bound):
        return {"bound": v.op, "value": _json_value(v.value)}
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if hasattr(v, "item"):  # numpy scalar
        return _json_value(v.item())
    return v


def to_json_obj(t: Table) -> dict:
    return {
        "title": t.title,
        "columns": list(t.columns),
        "rows": [
            {c: _json_value(v) for c, v in zip(t.columns, row, strict=True)} for row in t.rows
        ],
        "notes": list(t.notes),
    }


def render(tables: Sequence[Table], fmt_name: str = "md") -> str:
    """All tables in one format (JSON: a list of table objects)."""
    if fmt_name == "json":
        return json.dumps([to_json_obj(t) for t in tables], indent=2) + "\n"
    one = {"md": to_markdown, "csv": to_csv, "tex": to_latex}[fmt_name]
    return "\n".join(one(t) for t in tables)
