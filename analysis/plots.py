"""Draw computed results to PNG files. matplotlib is imported here, lazily, on the Agg canvas
(no pyplot, no global state); each function takes a result object and a path, returns the path.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from analysis.curves import CurveSummary
from analysis.phase import PhaseDiagram
from analysis.powerlaw import ScalingResult
from analysis.signtest import SignTestResult
from analysis.speedup import SpeedupTable


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


def plot_scaling(res: ScalingResult, path: str | Path) -> Path:
    """Log-log scatter of grok step vs |G| per arm, with the fitted line and its 95% band."""
    fig, ax = _figure()
    for i, (f, band) in enumerate(zip(res.fits, res.bands, strict=True)):
        color = f"C{i}"
        ax.scatter(f.order, f.step, s=14, alpha=0.7, color=color)
        label = f"{f.arm}: {f.c:.3g}·|G|^{f.alpha:.3f} (R²={f.r2:.2f})"
        ax.plot(band.order, band.fit, color=color, label=label)
        ax.fill_between(band.order, band.lo, band.hi, color=color, alpha=0.2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("group order |G|")
    ax.set_ylabel("grok step")
    ax.legend(fontsize=8)
    return _save(fig, path)


def _edges(v: np.ndarray) -> np.ndarray:
    """Cell edges on a log axis: geometric midpoints, extended by half a step at each end."""
    v = np.asarray(v, dtype=float)
    if len(v) == 1:
        return np.array([v[0] / math.sqrt(2), v[0] * math.sqrt(2)])
    mid = np.sqrt(v[1:] * v[:-1])
    return np.concatenate([[v[0] ** 2 / mid[0]], mid, [v[-1] ** 2 / mid[-1]]])


def plot_phase(res: PhaseDiagram, path: str | Path) -> Path:
    """Heatmap of the grok fraction over (d, R), with the threshold curve R*d = C*."""
    fig, ax = _figure()
    R, D = np.asarray(res.ranks, float), np.asarray(res.widths, float)
    frac = np.full((len(R), len(D)), np.nan)  # [R, d]
    for c in res.cells:
        frac[res.ranks.index(c.rank), res.widths.index(c.d)] = c.frac
    mesh = ax.pcolormesh(_edges(D), _edges(R), frac, cmap="viridis", vmin=0, vmax=1)
    fig.colorbar(mesh, ax=ax, label="grok fraction")
    if math.isfinite(res.threshold):
        d = np.geomspace(_edges(D)[0], _edges(D)[-1], 100)
        ax.plot(d, res.threshold / d, color="w", lw=2, label=f"R·d = {res.threshold:.3g}")
        for b in res.threshold_ci:
            ax.plot(d, b / d, color="w", lw=1, ls="--")
        ax.set_ylim(_edges(R)[0], _edges(R)[-1])
        ax.legend(fontsize=8, loc="upper right")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(D, [f"{v:g}" for v in D], minor=False)
    ax.set_yticks(R, [f"{v:g}" for v in R], minor=False)
    ax.minorticks_off()
    ax.set_xlabel("width d")
    ax.set_ylabel("rank R")
    return _save(fig, path)


def plot_curves(res: CurveSummary, path: str | Path) -> Path:
    """Metric vs step: the median per arm with its interquartile band."""
    fig, ax = _figure()
    for i, b in enumerate(res.bands):
        ax.plot(b.step, b.median, color=f"C{i}", label=f"{b.arm} (n={b.n_runs})")
        ax.fill_between(b.step, b.lo, b.hi, color=f"C{i}", alpha=0.2)
    ax.set_xscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel(res.metric)
    ax.legend(fontsize=8)
    return _save(fig, path)


def plot_speedup(res: SpeedupTable, path: str | Path) -> Path:
    """Bars of the speedup vs the baseline per group and arm, with bootstrap intervals."""
    fig, ax = _figure(max(6.0, 0.6 * len(res.rows)), 4.5)
    arms = [a for a in res.arms if a != res.baseline]
    groups = list(dict.fromkeys(r.group for r in res.rows))
    cell = {(r.group, r.arm): r for r in res.rows}
    width = 0.8 / max(1, len(arms))
    for j, a in enumerate(arms):
        xs, ys, err = [], [], [[], []]
        for i, g in enumerate(groups):
            r = cell.get((g, a))
            if r is None or not math.isfinite(r.speedup):
                continue
            lo, hi = r.speedup_ci
            xs.append(i + j * width)
            ys.append(r.speedup)
            err[0].append(r.speedup - lo if math.isfinite(lo) else 0.0)
            err[1].append(hi - r.speedup if math.isfinite(hi) else 0.0)
        ax.bar(xs, ys, width, yerr=err, color=f"C{j}", label=a, capsize=2)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xticks([i + width * (len(arms) - 1) / 2 for i in range(len(groups))], groups)
    ax.set_ylabel(f"speedup vs {res.baseline}")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    return _save(fig, path)


def plot_signtest(res: SignTestResult, path: str | Path) -> Path:
    """Paired values, arm a against arm b, with the diagonal (censored values at the top)."""
    fig, ax = _figure(5.0, 5.0)
    a, b = np.asarray(res.values_a, float), np.asarray(res.values_b, float)
    finite = np.concatenate([a[np.isfinite(a)], b[np.isfinite(b)]])
    top = float(finite.max() * 1.1) if len(finite) else 1.0
    lo = float(finite.min()) if len(finite) else 0.0
    ax.scatter(np.where(np.isfinite(b), b, top), np.where(np.isfinite(a), a, top), s=20)
    ax.plot([lo, top], [lo, top], color="k", lw=0.8)
    ax.set_xlabel(f"{res.metric}: {res.arm_b}")
    ax.set_ylabel(f"{res.metric}: {res.arm_a}")
    ax.set_title(f"+{res.n_pos} -{res.n_neg} ={res.n_ties}; sign p={res.p_sign:.3g}")
    return _save(fig, path)


PLOTS = {
    ScalingResult: plot_scaling,
    PhaseDiagram: plot_phase,
    CurveSummary: plot_curves,
    SpeedupTable: plot_speedup,
    SignTestResult: plot_signtest,
}


def plot(result: object, path: str | Path) -> Path:
    """Draw any computed result."""
    return PLOTS[type(result)](result, path)
