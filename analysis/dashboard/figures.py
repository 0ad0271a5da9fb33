"""Plotly figures (plain dicts: `{"data": [...], "layout": {...}}`) of analysis results, and
HTML tables of `grokray_analysis.tables.Table`s: the drawing half of the dashboard and the HTML
report.

Every number comes from a frozen analysis result (compute and draw apart, as
`grokray_analysis.plots`
does for PNGs); nothing here computes a statistic. Censored values are drawn open (hollow
markers, dashed lines, grey) everywhere, and their table cells carry the class `censored`.
"""

from __future__ import annotations

import html
import math

import numpy as np

from grokray_analysis.curves import CurveSummary, is_accuracy
from grokray_analysis.phase import PhaseDiagram, PhaseDiagrams
from grokray_analysis.powerlaw import ScalingResult
from grokray_analysis.signtest import SignTestResult
from grokray_analysis.speedup import SpeedupTable
from grokray_analysis.tables import Bound, Table, fmt

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf")
CENSORED = "#9a9a9a"
"""the colour of a censored (never grokked) run or value"""


def plotly_js() -> bytes:
    """plotly.min.js as the installed `plotly` package ships it (nothing is fetched)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs().encode()


def color(i: int) -> str:
    """The i-th arm colour."""
    return COLORS[i % len(COLORS)]


def rgba(hex_color: str, alpha: float) -> str:
    """`#rrggbb` with an alpha, for a band's fill."""
    r, g, b = (int(hex_color[k:k + 2], 16) for k in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _num(v) -> float | None:
    """A JSON number (None for NaN/inf: Plotly leaves a gap)."""
    v = float(v)
    return v if math.isfinite(v) else None


def _nums(vs) -> list[float | None]:
    return [_num(v) for v in vs]


def _layout(title: str, x: str, y: str, *, xlog: bool = False, ylog: bool = False) -> dict:
    return {"title": {"text": title, "font": {"size": 13}},
            "xaxis": {"title": {"text": x}, "type": "log" if xlog else "-"},  # -: Plotly infers
            "yaxis": {"title": {"text": y}, "type": "log" if ylog else "-"},
            "margin": {"l": 60, "r": 20, "t": 40, "b": 50}, "legend": {"font": {"size": 10}},
            "hovermode": "closest"}


def band_traces(arm: str, i: int, step, median, lo, hi, *, metric: str, dash: str = "solid",
                n_runs: int | None = None, group: str | None = None) -> list[dict]:
    """The interquartile band (filled) and the median line of one arm on one metric."""
    c = color(i)
    name = f"{arm} {metric}" + (f" (n={n_runs})" if n_runs is not None else "")
    key = group or arm
    return [
        {"type": "scatter", "mode": "lines", "x": _nums(step), "y": _nums(hi),
         "line": {"width": 0, "color": c}, "hoverinfo": "skip", "showlegend": False,
         "legendgroup": key, "meta": {"arm": arm, "role": "hi"}},
        {"type": "scatter", "mode": "lines", "x": _nums(step), "y": _nums(lo),
         "fill": "tonexty", "fillcolor": rgba(c, 0.18), "line": {"width": 0, "color": c},
         "hoverinfo": "skip", "showlegend": False, "legendgroup": key,
         "meta": {"arm": arm, "role": "lo"}},
        {"type": "scatter", "mode": "lines", "x": _nums(step), "y": _nums(median), "name": name,
         "line": {"color": c, "dash": dash, "width": 2}, "legendgroup": key,
         "meta": {"arm": arm, "role": "median"},
         "hovertemplate": f"{html.escape(arm)} median {metric}: %{{y:.4g}} at step %{{x}}"
                          "<extra></extra>"},
    ]


def curves_figure(res: CurveSummary) -> dict:
    """Median and interquartile band per arm (val solid, train dashed), log step axis."""
    arms = list(dict.fromkeys(b.arm for b in res.bands))
    metrics = list(dict.fromkeys(b.metric for b in res.bands))
    dashes = ("solid", "dash", "dot", "dashdot")
    data = []
    for b in res.bands:
        data += band_traces(b.arm, arms.index(b.arm), b.step, b.median, b.lo, b.hi,
                            metric=b.metric, dash=dashes[metrics.index(b.metric) % 4],
                            n_runs=b.n_runs, group=f"{b.arm}/{b.metric}")
    lay = _layout("Learning curves: median and interquartile band per arm", "step",
                  ", ".join(metrics), xlog=True)
    if any(is_accuracy(m) for m in metrics):
        lay["shapes"] = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1,
                          "y0": res.threshold, "y1": res.threshold,
                          "line": {"dash": "dot", "color": "#666", "width": 1}}]
    return {"data": data, "layout": lay}


def speedup_figure(res: SpeedupTable) -> dict:
    """Speedup vs the baseline per group and arm with its >= 95% interval; open triangles are
    one-sided bounds (a censored median), 'n/a' cells both censored."""
    arms = [a for a in res.arms if a != res.baseline]
    symbol = {"estimate": "circle", "lower": "triangle-up-open", "upper": "triangle-down-open"}
    data = []
    for j, a in enumerate(arms):
        rows = [r for r in res.rows if r.arm == a and r.kind in symbol]
        lo = [r.speedup_ci[0] for r in rows]
        hi = [r.speedup_ci[1] for r in rows]
        data.append({
            "type": "scatter", "mode": "markers", "name": a,
            "x": [str(r.group) for r in rows], "y": _nums(r.speedup for r in rows),
            "marker": {"color": color(j), "size": 10,
                       "symbol": [symbol[r.kind] for r in rows]},
            "error_y": {"type": "data", "symmetric": False,
                        "array": [_num(h - r.speedup) if math.isfinite(h) else None
                                  for h, r in zip(hi, rows, strict=True)],
                        "arrayminus": [_num(r.speedup - lw) if math.isfinite(lw) else None
                                       for lw, r in zip(lo, rows, strict=True)],
                        "color": color(j)},
            "text": [{"estimate": "estimate", "lower": "lower bound (baseline censored)",
                      "upper": "upper bound (arm censored)"}[r.kind] for r in rows],
            "hovertemplate": "%{x}: %{y:.3g} (%{text})<extra>" + html.escape(a) + "</extra>",
        })
    lay = _layout(f"Speedup over {res.baseline} (Kaplan-Meier median ratio, >= 95% interval)",
                  res.by, f"speedup vs {res.baseline}", ylog=True)
    lay["shapes"] = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1,
                      "line": {"color": "#000", "width": 1}}]
    return {"data": data, "layout": lay}


def signtest_figure(res: SignTestResult) -> dict:
    """Paired values a against b; censored values open (at their budget)."""
    a, b = np.asarray(res.values_a, float), np.asarray(res.values_b, float)
    oa = np.asarray(res.observed_a or [True] * len(a), bool)
    ob = np.asarray(res.observed_b or [True] * len(b), bool)
    data = []
    for mask, name, sym, col in ((oa & ob, "both observed", "circle", COLORS[0]),
                                 (~oa & ob, f"{res.arm_a} censored", "triangle-up-open",
                                  CENSORED),
                                 (oa & ~ob, f"{res.arm_b} censored", "triangle-right-open",
                                  CENSORED),
                                 (~oa & ~ob, "both censored", "diamond-open", CENSORED)):
        if mask.any():
            data.append({"type": "scatter", "mode": "markers", "name": name,
                         "x": _nums(b[mask]), "y": _nums(a[mask]),
                         "marker": {"symbol": sym, "color": col, "size": 9}})
    vals = np.concatenate([a, b])
    vals = vals[np.isfinite(vals)]
    if len(vals):
        lo, hi = float(vals.min()), float(vals.max())
        data.append({"type": "scatter", "mode": "lines", "name": "a = b", "x": [lo, hi],
                     "y": [lo, hi], "line": {"color": "#000", "width": 1}})
    log = res.metric == "grok_step" and len(vals) and float(vals.min()) > 0
    title = (f"{res.arm_a} vs {res.arm_b} on {res.metric}: a>b {res.n_pos}, a<b {res.n_neg}, "
             f"undecidable {res.n_undecided}; sign p={res.p_sign:.3g}")
    return {"data": data, "layout": _layout(title, f"{res.metric}: {res.arm_b}",
                                            f"{res.metric}: {res.arm_a}", xlog=bool(log),
                                            ylog=bool(log))}


def scaling_figure(res: ScalingResult) -> dict:
    """Grok step vs |G| per arm: grokked runs filled, censored runs open at their budget, the
    fitted power law and its 95% band (the censored AFT fit when present)."""
    data = []
    arms = list(dict.fromkeys(f.arm for f in res.fits))
    drawn_points = set()
    for f, band in zip(res.fits, res.bands, strict=True):
        i = arms.index(f.arm)
        c = color(i)
        if f.arm not in drawn_points:
            drawn_points.add(f.arm)
            data.append({"type": "scatter", "mode": "markers", "name": f"{f.arm} grokked",
                         "x": _nums(f.order), "y": _nums(f.step), "text": list(f.point_group),
                         "marker": {"color": c, "size": 7, "opacity": 0.7},
                         "legendgroup": f.arm})
            if f.cens_order:
                data.append({"type": "scatter", "mode": "markers",
                             "name": f"{f.arm} censored (at budget)",
                             "x": _nums(f.cens_order), "y": _nums(f.cens_step),
                             "marker": {"color": CENSORED, "size": 9,
                                        "symbol": "triangle-up-open",
                                        "line": {"color": c, "width": 1.5}},
                             "legendgroup": f.arm})
        if band is None:
            continue
        dash = "solid" if f.method == "aft" else "dash"
        data += band_traces(f.arm, i, band.order, band.fit, band.lo, band.hi,
                            metric=f"{f.method} fit c={f.c:.3g} alpha={f.alpha:.3g} "
                                   f"[{f.alpha_ci[0]:.3g}, {f.alpha_ci[1]:.3g}] ({f.interval})",
                            dash=dash,
                            group=f"{f.arm}/{f.method}")
    return {"data": data, "layout": _layout("Grok step vs |G|: power law (censored AFT, OLS "
                                            "dashed)", "|G|", "grok step", xlog=True,
                                            ylog=True)}


def phase_figure(res: PhaseDiagrams | PhaseDiagram) -> dict:
    """P(grok) per (R, d) cell, one panel per arm side by side, and the threshold R*d = C*."""
    diagrams = res.diagrams if isinstance(res, PhaseDiagrams) else (res,)
    data, lay = [], _layout("Capacity-lift phase diagram: fraction grokked per (R, d), "
                            "threshold R*d = C*", "d", "R", xlog=True, ylog=True)
    n = len(diagrams)
    for k, ph in enumerate(diagrams):
        ax = "" if k == 0 else str(k + 1)
        d = [c.d for c in ph.cells]
        r = [c.rank for c in ph.cells]
        data.append({"type": "scatter", "mode": "markers", "name": f"{ph.arm} P(grok)",
                     "x": d, "y": r, "xaxis": f"x{ax}", "yaxis": f"y{ax}",
                     "text": [f"{c.k}/{c.n} grokked" for c in ph.cells],
                     "marker": {"size": 18, "symbol": "square",
                                "color": [c.frac for c in ph.cells], "cmin": 0, "cmax": 1,
                                "colorscale": "Viridis", "showscale": k == n - 1,
                                "line": {"color": [CENSORED if c.k == 0 else "#333"
                                                   for c in ph.cells], "width": 1}},
                     "hovertemplate": "R=%{y}, d=%{x}: %{text}<extra>" + html.escape(ph.arm)
                                      + "</extra>"})
        if math.isfinite(ph.threshold) and ph.ranks:
            rs = np.geomspace(min(ph.ranks), max(ph.ranks), 30)
            data.append({"type": "scatter", "mode": "lines", "x": _nums(ph.threshold / rs),
                         "y": _nums(rs), "xaxis": f"x{ax}", "yaxis": f"y{ax}",
                         "name": f"{ph.arm}: C* = {ph.threshold:.3g} ({ph.method})",
                         "line": {"color": "#d62728", "dash": "dash"}})
        if k:
            lay[f"xaxis{k + 1}"] = {**lay["xaxis"], "anchor": f"y{k + 1}"}
            lay[f"yaxis{k + 1}"] = {**lay["yaxis"], "anchor": f"x{k + 1}"}
    if n > 1:
        for k in range(n):
            key = "xaxis" if k == 0 else f"xaxis{k + 1}"
            lay[key]["domain"] = [k / n + 0.02, (k + 1) / n - 0.02]
    return {"data": data, "layout": lay}


def table_html(t: Table) -> str:
    """A Table as an HTML <table>; one-sided values (`Bound`: a censored median) get the class
    `censored`."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in t.columns)
    body = []
    for row in t.rows:
        cells = "".join(
            f'<td class="{"censored" if isinstance(v, Bound) else ""}">{html.escape(fmt(v))}'
            "</td>" for v in row)
        body.append(f"<tr>{cells}</tr>")
    notes = "".join(f"<p class=\"note\">{html.escape(n)}</p>" for n in t.notes)
    return (f"<h4>{html.escape(t.title)}</h4><table class=\"grid\"><thead><tr>{head}</tr>"
            f"</thead><tbody>{''.join(body)}</tbody></table>{notes}")
