"""Draw computed results to PNG files. matplotlib is imported here, lazily, on the Agg canvas
(no pyplot, no global state); each function takes a result object and a path, returns the path.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from grokray_analysis.curves import CurveSummary, is_accuracy
from grokray_analysis.phase import PhaseDiagram, PhaseDiagrams
from grokray_analysis.powerlaw import ScalingResult
from grokray_analysis.signtest import SignTestResult
from grokray_analysis.speedup import SpeedupTable


def _figure(w: float = 6.0, h: float = 4.5):
    from matplotlib.figure import Figure  # lazy: keeps the CLI import cheap

    fig = Figure(figsize=(w, h), dpi=100)
    return fig, fig.add_subplot(1, 1, 1)


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, format="png")
    return path


def _log_ticks(ax, axis: str = "both") -> None:
    """Plain-number ticks at 1, 2, 5 x 10^k on log axes (no 10^2.3-style labels)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    for name in ("x", "y") if axis == "both" else (axis,):
        a = getattr(ax, f"{name}axis")
        lo, hi = sorted(getattr(ax, f"get_{name}lim")())
        narrow = lo > 0 and hi / lo < 12  # about a decade or less: label 1, 2, 3, 5 x 10^k
        subs = (1.0, 2.0, 3.0, 5.0) if narrow else (1.0, 2.0, 5.0)
        a.set_major_locator(LogLocator(base=10, subs=subs))
        a.set_major_formatter(fmt)
        a.set_minor_formatter(NullFormatter())


def plot_scaling(res: ScalingResult, path: str | Path) -> Path:
    """Log-log grok step vs |G| per arm: grokked runs filled, censored runs as open triangles at
    their budget (their grok step is larger), the fitted median line and its 95% band."""
    from matplotlib.lines import Line2D

    fig, ax = _figure(7.0, 5.0)
    arms = list(dict.fromkeys(f.arm for f in res.fits))
    drawn = set()
    for f, band in zip(res.fits, res.bands, strict=True):
        color = f"C{arms.index(f.arm)}"
        if f.arm not in drawn:
            drawn.add(f.arm)
            ax.scatter(f.order, f.step, s=16, alpha=0.8, color=color,
                       label=f"{f.arm}: grokked ({f.n_grokked})")
            if f.cens_order:
                ax.scatter(f.cens_order, f.cens_step, s=36, marker="^", facecolors="none",
                           edgecolors=color, label=f"{f.arm}: censored at budget "
                                                  f"({f.n_censored})")
        if band is None:
            continue
        ls = "-" if f.method == "aft" else "--"
        kind = "censored AFT" if f.method == "aft" else f"OLS grokked only, R²={f.r2:.2f}"
        ax.plot(band.order, band.fit, color=color, ls=ls,
                label=f"{f.arm} {kind}: {f.c:.3g}·|G|^{f.alpha:.3f} "
                      f"[{f.alpha_ci[0]:.2f}, {f.alpha_ci[1]:.2f}] ({f.interval})")
        ax.fill_between(band.order, band.lo, band.hi, color=color,
                        alpha=0.15 if f.method == "aft" else 0.07)
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="0.5", lw=6, alpha=0.3))
    labels.append("band: 95% CI of the median line (interval named in brackets)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _log_ticks(ax)
    orders = sorted({o for f in res.fits for o in f.order + f.cens_order})
    if 0 < len(orders) <= 12:  # few groups: label each order
        from matplotlib.ticker import NullFormatter

        ax.set_xticks(orders, [f"{o:g}" for o in orders])
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("group order |G|")
    ax.set_ylabel("grok step")
    unfit = [f"{f.arm} ({f.method})" for f in res.fits if not f.fitted]
    ax.set_title("Grok step vs group order" + (
        "" if not unfit else "\nnot fitted (too few grokked runs): " + ", ".join(unfit)),
        fontsize=9)
    ax.legend(handles, labels, fontsize=7)
    return _save(fig, path)


def _edges(v: np.ndarray) -> np.ndarray:
    """Cell edges on a log axis: geometric midpoints, extended by half a step at each end."""
    v = np.asarray(v, dtype=float)
    if len(v) == 1:
        return np.array([v[0] / math.sqrt(2), v[0] * math.sqrt(2)])
    mid = np.sqrt(v[1:] * v[:-1])
    return np.concatenate([[v[0] ** 2 / mid[0]], mid, [v[-1] ** 2 / mid[-1]]])


def plot_phase(res: PhaseDiagrams | PhaseDiagram, path: str | Path) -> Path:
    """One heatmap of the grok fraction over (d, R) per arm, each cell annotated k/n, with the
    threshold curve R*d = C* and its 95% profile interval (dashed)."""
    from matplotlib.figure import Figure

    diagrams = res.diagrams if isinstance(res, PhaseDiagrams) else (res,)
    fig = Figure(figsize=(5.5 * len(diagrams), 4.8), dpi=100)
    axes = [fig.add_subplot(1, len(diagrams), i + 1) for i in range(len(diagrams))]
    for ax, ph in zip(axes, diagrams, strict=True):
        _phase_panel(fig, ax, ph)
    return _save(fig, path)


def _phase_panel(fig, ax, res: PhaseDiagram) -> None:
    if not res.cells:
        ax.set_title(f"{res.arm}: no runs")
        return
    R, D = np.asarray(res.ranks, float), np.asarray(res.widths, float)
    frac = np.full((len(R), len(D)), np.nan)  # [R, d]
    for c in res.cells:
        frac[res.ranks.index(c.rank), res.widths.index(c.d)] = c.frac
    mesh = ax.pcolormesh(_edges(D), _edges(R), frac, cmap="viridis", vmin=0, vmax=1)
    fig.colorbar(mesh, ax=ax, label="grok fraction k/n")
    for c in res.cells:
        ax.text(c.d, c.rank, f"{c.k}/{c.n}", ha="center", va="center", fontsize=7,
                color="k" if c.frac > 0.6 else "w")
    if math.isfinite(res.threshold):
        d = np.geomspace(_edges(D)[0], _edges(D)[-1], 100)
        ax.plot(d, res.threshold / d, color="r", lw=2, label=f"R·d = {res.threshold:.4g}")
        lo, hi = res.threshold_ci
        label = f"95% profile interval [{lo:.4g}, {hi:.4g}]"
        for b in (lo, hi):
            if 0 < b < math.inf:
                ax.plot(d, b / d, color="r", lw=1, ls="--", label=label)
                label = None
        ax.set_ylim(_edges(R)[0], _edges(R)[-1])
        ax.legend(fontsize=7, loc="lower left")
    elif res.method == "none" and res.n_runs:
        lo, hi = res.threshold_ci
        bound = f"C* > {lo:.4g}" if hi == math.inf else f"C* < {hi:.4g}"
        ax.text(0.02, 0.02, f"every run agrees: {bound} (95%)", transform=ax.transAxes,
                fontsize=8, color="r")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(D, [f"{v:g}" for v in D], minor=False)
    ax.set_yticks(R, [f"{v:g}" for v in R], minor=False)
    ax.minorticks_off()
    ax.set_xlabel("width d")
    ax.set_ylabel("rank R")
    ax.set_title(f"{res.arm}: P(grok) over R and d ({res.method})", fontsize=9)


def plot_curves(res: CurveSummary, path: str | Path) -> Path:
    """Metric vs step per arm: the median over runs (val solid, train dashed) and its
    interquartile band; the accuracy threshold as a dotted line (accuracy metrics only); other
    columns drawn with accuracies (weight norms, losses) on a right-hand axis."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig, ax = _figure(7.0, 4.8)
    arms = list(dict.fromkeys(b.arm for b in res.bands))
    metrics = list(dict.fromkeys(b.metric for b in res.bands))
    styles = ["-", "--", ":", "-."]
    # accuracies and other columns (weight norms, losses) together: the others on a right axis
    mixed = any(map(is_accuracy, metrics)) and not all(map(is_accuracy, metrics))
    right = ax.twinx() if mixed else ax
    for b in res.bands:
        i, j = arms.index(b.arm), metrics.index(b.metric)
        step = np.asarray(b.step)
        keep = step > 0  # log axis
        on = ax if is_accuracy(b.metric) else right
        on.plot(step[keep], np.asarray(b.median)[keep], color=f"C{i}", ls=styles[j % 4])
        on.fill_between(step[keep], np.asarray(b.lo)[keep], np.asarray(b.hi)[keep],
                        color=f"C{i}", alpha=0.15)
    if mixed:
        right.set_ylabel(", ".join(m for m in metrics if not is_accuracy(m)), fontsize=8)
    n_runs = {b.arm: b.n_runs for b in res.bands}
    handles = [Line2D([], [], color=f"C{i}", label=f"{a} (n={n_runs[a]})")
               for i, a in enumerate(arms)]
    handles += [Line2D([], [], color="0.3", ls=styles[j % 4], label=f"median {m}")
                for j, m in enumerate(metrics)]
    handles.append(Patch(color="0.5", alpha=0.3, label="interquartile range over runs"))
    if any(is_accuracy(m) for m in metrics):
        ax.axhline(res.threshold, color="0.4", lw=0.8, ls=":")
        handles.append(Line2D([], [], color="0.4", lw=0.8, ls=":",
                              label=f"grok threshold {res.threshold:g}"))
    ax.set_xscale("log")
    _log_ticks(ax, "x")
    ax.set_xlabel("step")
    ax.set_ylabel(", ".join(m for m in metrics if is_accuracy(m) or not mixed))
    ax.set_title("Learning curves: " + " and ".join(metrics), fontsize=9)
    ax.legend(handles=handles, fontsize=7)
    return _save(fig, path)


def plot_speedup(res: SpeedupTable, path: str | Path) -> Path:
    """Speedup vs the baseline per group and arm on a log axis, with its >= 95% interval.
    Filled circles are estimates; open up-triangles are lower bounds (the baseline's median is
    censored: the speedup is at least this); open down-triangles upper bounds (the arm's median is
    censored); 'n/a' marks cells where both medians are censored."""
    from matplotlib.lines import Line2D

    arms = [a for a in res.arms if a != res.baseline]
    groups = list(dict.fromkeys(r.group for r in res.rows))
    fig, ax = _figure(max(6.0, 0.9 * len(groups) * max(1, len(arms)) ** 0.5 + 2), 4.8)
    cell = {(r.group, r.arm): r for r in res.rows}
    width = 0.8 / max(1, len(arms))
    marker = {"estimate": "o", "lower": "^", "upper": "v"}
    for j, a in enumerate(arms):
        for i, g in enumerate(groups):
            r = cell.get((g, a))
            if r is None:
                continue
            x = i + (j - (len(arms) - 1) / 2) * width
            if r.kind not in marker:
                ax.annotate("n/a", (x, 1.0), ha="center", fontsize=7, color=f"C{j}")
                continue
            lo, hi = r.speedup_ci
            top = hi if math.isfinite(hi) else r.speedup * 10
            bot = lo if math.isfinite(lo) and lo > 0 else r.speedup / 10
            ax.plot([x, x], [bot, top], color=f"C{j}", lw=1.2,
                    ls="-" if math.isfinite(hi) and lo > 0 else ":")
            filled = r.kind == "estimate"
            ax.plot([x], [r.speedup], marker=marker[r.kind], ms=8, color=f"C{j}",
                    mfc=f"C{j}" if filled else "white")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel(f"speedup vs {res.baseline} (KM median ratio)")
    ax.set_yscale("log")
    _log_ticks(ax, "y")
    handles = [Line2D([], [], color=f"C{j}", marker="o", ls="", label=a)
               for j, a in enumerate(arms)]
    handles += [
        Line2D([], [], color="0.3", marker="^", mfc="white", ls="",
               label="> lower bound: baseline median censored"),
        Line2D([], [], color="0.3", marker="v", mfc="white", ls="",
               label="< upper bound: arm median censored"),
        Line2D([], [], color="0.3", ls="-", label=">= 95% interval"),
        Line2D([], [], color="0.3", ls=":", label="interval unbounded on one side"),
    ]
    ax.legend(handles=handles, fontsize=7)
    ax.set_title(f"Speedup of each arm over {res.baseline} (median grok step ratio)",
                 fontsize=9)
    return _save(fig, path)


def plot_signtest(res: SignTestResult, path: str | Path) -> Path:
    """Paired values, arm a against arm b, with the diagonal. Both observed: filled dots;
    one or both censored (never grokked): open markers at the budget, an arrow-like triangle
    pointing the way the true value lies; undecidable pairs in grey."""
    from matplotlib.lines import Line2D

    fig, ax = _figure(5.5, 5.5)
    a, b = np.asarray(res.values_a, float), np.asarray(res.values_b, float)
    oa = np.asarray(res.observed_a or [True] * len(a), bool)
    ob = np.asarray(res.observed_b or [True] * len(b), bool)
    both = oa & ob
    ax.scatter(b[both], a[both], s=22, color="C0")
    for mask, marker in ((~oa & ob, "^"), (oa & ~ob, ">"), (~oa & ~ob, "D")):
        if mask.any():  # open: a censored value (the true one is larger, the arrow's way)
            decided = _decided(a, oa, b, ob)
            for dec, color in ((mask & decided, "C3"), (mask & ~decided, "0.6")):
                if dec.any():
                    ax.scatter(b[dec], a[dec], s=40, marker=marker, facecolors="none",
                               edgecolors=color)
    vals = np.concatenate([a, b])
    vals = vals[np.isfinite(vals)]
    lo, hi = (float(vals.min()), float(vals.max())) if len(vals) else (0.0, 1.0)
    ax.plot([lo, hi], [lo, hi], color="k", lw=0.8)
    pad = (hi / lo) ** 0.05 if lo > 0 else 1.0
    if lo > 0:  # same range on both axes: the diagonal is a = b
        ax.set_xlim(lo / pad, hi * pad)
        ax.set_ylim(lo / pad, hi * pad)
    ax.set_xlabel(f"{res.metric}: {res.arm_b}")
    ax.set_ylabel(f"{res.metric}: {res.arm_a}")
    if res.metric == "grok_step" and lo > 0:
        ax.set_xscale("log")
        ax.set_yscale("log")
        _log_ticks(ax)
    handles = [
        Line2D([], [], color="C0", marker="o", ls="", label="both observed"),
        Line2D([], [], color="C3", marker="^", mfc="none", ls="",
               label=f"{res.arm_a} censored at budget (true value higher)"),
        Line2D([], [], color="C3", marker=">", mfc="none", ls="",
               label=f"{res.arm_b} censored at budget (true value to the right)"),
        Line2D([], [], color="0.6", marker="D", mfc="none", ls="",
               label=f"undecidable ({res.n_undecided})"),
        Line2D([], [], color="k", lw=0.8, label="a = b"),
    ]
    ax.legend(handles=handles, fontsize=7)
    ax.set_title(f"{res.arm_a} vs {res.arm_b}: a>b {res.n_pos}, a<b {res.n_neg}, ties "
                 f"{res.n_ties}, undecidable {res.n_undecided}; sign p={res.p_sign:.3g}",
                 fontsize=8)
    return _save(fig, path)


def _decided(a, oa, b, ob) -> np.ndarray:
    from grokray_analysis.signtest import decide

    return ~np.isnan(decide(a, oa, b, ob))
