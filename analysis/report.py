"""One Markdown report (with PNGs beside it) for one or several sweep outputs: every table and
plot that applies, and the papers' numbers beside the measured ones where a sweep matches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from grokray_analysis import papers
from grokray_analysis.analyses import Analysis, slug
from grokray_analysis.errors import AnalysisError
from grokray_analysis.load import Sweep, load
from grokray_analysis.phase import phase_diagrams
from grokray_analysis.powerlaw import scaling
from grokray_analysis.registry import analyses
from grokray_analysis.signtest import sign_test
from grokray_analysis.speedup import ablation_order, speedup_table
from grokray_analysis.tables import Table, fmt, sig3, speedup_value, to_markdown


@dataclass(frozen=True)
class Comparison:
    """A paper number and the number this sweep measured for it."""

    number: papers.PaperNumber
    """The published number."""
    measured: object
    """The measured value: a float, a `Bound` ('> x': e.g. a speedup over a baseline that never
    reached its median), None/NaN when it could not be computed."""
    detail: str
    """How it was measured (counts, interval)."""


def _speedup_of(trials: pd.DataFrame, group: str, arm: str, base: str):
    sub = trials[trials["group"].astype(str) == group]
    res = speedup_table(sub, base, arms=[arm])
    row = next(r for r in res.rows if r.arm == arm)
    b = next(r for r in res.rows if r.arm == base)
    lo, hi = row.speedup_ci
    bound = {"lower": " (lower bound: the baseline's median is censored)",
             "upper": " (upper bound: the arm's median is censored)",
             "none": " (undefined: both medians censored)"}.get(row.kind, "")
    detail = (f"{row.k}/{row.n} grokked vs {b.k}/{b.n}, KM medians, >= 95% CI "
              f"[{fmt(sig3(lo))}, {fmt(sig3(hi))}]{bound}")
    value = speedup_value(row)
    return value, detail


def _median_grok(num: papers.PaperNumber, sub: pd.DataFrame, what: str) -> Comparison:
    """The median grok step of the grokked runs in `sub` (NaN when none grokked)."""
    g = sub[sub["status"] == "grokked"]["grok_step"]
    return Comparison(num, float(g.median()) if len(g) else math.nan,
                      f"{what} of {len(g)}/{len(sub)} grokked runs")


def paper_comparisons(trials: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0):
    """Every paper number this sweep's rows can be compared with."""
    out: list[Comparison] = []
    arms = set(trials["arm"].astype(str))
    groups = set(trials["group"].astype(str)) if "group" in trials else set()
    for g, items in papers.SPEEDUPS.items():
        for arm, base, num in items:
            if g in groups and {arm, base} <= arms:
                try:
                    v, detail = _speedup_of(trials, g, arm, base)
                except AnalysisError as exc:
                    v, detail = math.nan, f"not computed: {exc}"
                out.append(Comparison(num, v, detail))
    fails = trials[(trials["arm"] == "mlp") & trials["group"].isin(papers.MLP_FAIL_GROUPS)] \
        if "group" in trials else trials.iloc[:0]
    if len(fails):
        k = int((fails["status"] == "grokked").sum())
        out.append(Comparison(papers.MLP_FAILS, k / len(fails), f"{k}/{len(fails)} grokked"))
    if papers.SCALING_ARM in arms and "group_order" in trials and (
        trials["group_order"].nunique() >= 2
    ):
        aft, ols = scaling(trials, arms=[papers.SCALING_ARM], methods=("aft", "ols"),
                           n_boot=n_boot, seed=seed).fits
        info = (f"{aft.n_groups} groups, {aft.n_runs} runs, {aft.n_grokked} grokked, "
                f"{aft.n_censored} censored")
        for num, v, ci in ((papers.SCALING[0], aft.c, aft.c_ci),
                           (papers.SCALING[1], aft.alpha, aft.alpha_ci)):
            detail = (f"censored log-normal AFT, 95% CI [{fmt(sig3(ci[0]))}, "
                      f"{fmt(sig3(ci[1]))}] (groups as the unit); {info}") if aft.fitted \
                else aft.reason
            out.append(Comparison(num, v, detail))
        out.append(Comparison(papers.SCALING[2], ols.r2,
                              f"OLS on the {ols.n_points} grokked runs only (as the paper); "
                              f"{ols.n_censored} censored runs not in it" if ols.fitted
                              else ols.reason))
    if papers.EFF_MODES_METRIC in trials and {"forge", "mlp"} <= arms:
        try:
            s = sign_test(trials, papers.EFF_MODES_METRIC, "forge", "mlp", alternative="greater")
            out.append(Comparison(papers.EFF_MODES[0], s.median_a, f"median over {s.n_pairs}"))
            out.append(Comparison(papers.EFF_MODES[1], s.median_b, f"median over {s.n_pairs}"))
            out.append(Comparison(papers.EFF_MODES[2], s.p_sign,
                                  f"one-sided, {s.n_pos}/{s.n_pos + s.n_neg} forge > mlp"))
        except AnalysisError:
            pass
    if {"model_rank", "model_d"} <= set(trials) and groups == {papers.CAPACITY_GROUP}:
        try:
            for ph in phase_diagrams(trials).diagrams:
                lo, hi = ph.threshold_ci
                out.append(Comparison(
                    papers.CAPACITY, ph.threshold,
                    f"arm {ph.arm}: 95% profile interval [{fmt(sig3(lo))}, {fmt(sig3(hi))}] "
                    f"({ph.method}), {ph.n_runs} runs"))
        except AnalysisError:
            pass
    if "arch" in trials and "op" in trials:
        for op, num in papers.RFM_ITERS.items():
            sub = trials[(trials["arch"] == "rfm") & (trials["op"] == op)]
            if len(sub):
                out.append(_median_grok(num, sub, "median"))
        # the geometric-bias paper's arms, by their config columns (not by arm names): the
        # baseline is a LayerNorm/RMSNorm transformer with standard attention, the accelerated
        # one the fully bounded spherical topology; both on modular arithmetic (not S5)
        tr = trials[(trials["arch"] == "transformer") & (trials["op"] != "group")]
        norm = tr.get("transformer_norm", pd.Series("", index=tr.index))
        attn = tr.get("transformer_attention", pd.Series("standard", index=tr.index))
        baseline = norm.isin(["layernorm", "rmsnorm"]) & (attn == "standard")
        bounded = norm == "spherical_bounded"
        for mask, num in ((baseline, papers.GEOM_EPOCHS[0]), (bounded, papers.GEOM_EPOCHS[1])):
            sub = tr[mask]
            if len(sub):
                out.append(_median_grok(num, sub, "median step"))
    return out


def comparison_table(comps: list[Comparison]) -> Table:
    """Paper number beside the measured one."""
    rows = tuple(
        (c.number.paper, c.number.experiment, c.number.quantity, c.number.text, c.measured,
         c.detail)
        for c in comps
    )
    return Table("Paper numbers beside measured ones",
                 ("paper", "experiment", "quantity", "paper value", "measured", "detail"), rows)


@dataclass(frozen=True)
class Item:
    """One analysis of a sweep's report: its title, file stem, and its result (or why not)."""

    title: str
    """The section heading."""
    name: str
    """A file-name stem for its plot."""
    result: object
    """The frozen result (its analysis's `tables` and `plot` take it), or None."""
    skipped: str = ""
    """Why it was not computed ("" when it was)."""
    analysis: Analysis | None = None
    """The registered analysis that made it (grokray_analysis.registry)."""


def report_items(T: pd.DataFrame, curves: pd.DataFrame | None, *, n_boot: int = 1000,
                 seed: int = 0) -> list[Item]:
    """Every section the registered analyses add for one sweep's trials (and curves),
    computed, in registry order (each analysis's `report`); the Markdown report and the HTML
    views draw the same list."""
    items: list[Item] = []
    for a in analyses().values():
        if a.report is None:
            continue
        for sec in a.report(T, curves, n_boot=n_boot, seed=seed):
            try:
                items.append(Item(sec.title, sec.name, sec.compute(), analysis=a))
            except AnalysisError as exc:
                items.append(Item(sec.title, sec.name, None, str(exc), analysis=a))
    return items


def sweep_summary(sweep: Sweep) -> str:
    """One line: runs, where from, status counts and arms."""
    T = sweep.trials
    status = T["status"].value_counts().sort_index()
    arms = ablation_order(sorted(T["arm"].unique()))
    return (f"{len(T)} runs from {', '.join(str(p) for p in sweep.paths)}; status: "
            + ", ".join(f"{k} {v}" for k, v in status.items())
            + f"; arms: {', '.join(arms)}.")


def _section(sweep: Sweep, out_dir: Path, n_boot: int, seed: int) -> list[str]:
    T = sweep.trials
    stem = slug(sweep.name)
    lines = [f"## Sweep `{sweep.name}`", "", sweep_summary(sweep), ""]
    for it in report_items(T, sweep.curves, n_boot=n_boot, seed=seed):
        if it.skipped:
            lines.extend([f"### {it.title}", "", f"Skipped: {it.skipped}", ""])
            continue
        a = it.analysis
        png = a.plot(it.result, out_dir / f"{stem}-{it.name}.png") if a.plot else None
        for t in a.tables_of(it.result):
            lines.append(to_markdown(t))
        if png is not None:
            lines.extend([f"![{it.title}]({png.name})", ""])
    comps = paper_comparisons(T, n_boot=n_boot, seed=seed)
    if comps:
        lines.append(to_markdown(comparison_table(comps)))
    return lines


def build_report(
    paths: list[str | Path], output: str | Path, *, n_boot: int = 1000, seed: int = 0
) -> Path:
    """Write the Markdown report to `output` and its PNGs beside it; returns the report path."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    sweeps = [load(p) for p in paths]
    lines = ["# grokray analysis report", ""]
    lines.append(f"Sweeps: {', '.join(f'`{s.name}`' for s in sweeps)}. Bootstrap: {n_boot} "
                 f"resamples, seed {seed}. Censored runs (never grokked) are counted, never "
                 "dropped or filled in.")
    lines.append("")
    for s in sweeps:
        lines += _section(s, output.parent, n_boot, seed)
    output.write_text("\n".join(lines).rstrip() + "\n")
    return output

