"""A curve metric read at three points of every run: the first eval, the grok step, the end.

The trials table keeps one value per seed (a curve metric's last finite value: the end of the
budget, or of an early stop). Whether a comparison of two arms holds at the end only, or also
when the run generalizes, needs the curve: for each run (config_hash, seed) and each metric,

- `init`: the first finite value (the trainer evaluates at step 0: the initialization);
- `at_grok`: the value at the run's grok step (the last eval at or before it; NaN when the run
  did not grok);
- `end`: the last finite value.

Per (`by` value, arm): the median over runs and its range (min, max) at each point.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from grokray_analysis.errors import AnalysisError
from grokray_analysis.load import require_columns

__all__ = ["PointCell", "MetricPoints", "metric_points", "run_points"]


@dataclass(frozen=True)
class PointCell:
    """One (group-by value, arm, metric): medians and ranges over runs."""

    by: str
    arm: str
    metric: str
    runs: int
    """runs with a curve for this metric"""
    grokked: int
    """of them, runs that grokked (they have an `at_grok` value)"""
    init: tuple[float, float, float]
    """(median, min, max) at the first finite eval"""
    at_grok: tuple[float, float, float]
    """(median, min, max) at the grok step (grokked runs only)"""
    end: tuple[float, float, float]
    """(median, min, max) at the last finite eval"""
    grok_step: float
    """median grok step of the grokked runs"""


@dataclass(frozen=True)
class MetricPoints:
    by: str
    cells: tuple[PointCell, ...]


def run_points(curve: pd.DataFrame, metric: str, grok_step: float) -> tuple[float, float, float]:
    """(init, at_grok, end) of one run's curve (rows of one config_hash and seed)."""
    c = curve.sort_values("step")
    v = pd.to_numeric(c[metric], errors="coerce").to_numpy(float)
    s = c["step"].to_numpy(float)
    ok = np.isfinite(v)
    if not ok.any():
        return (np.nan, np.nan, np.nan)
    v, s = v[ok], s[ok]
    at = np.nan
    if np.isfinite(grok_step):
        before = np.flatnonzero(s <= grok_step)
        at = float(v[before[-1]]) if before.size else np.nan
    return (float(v[0]), at, float(v[-1]))


def _stat(x: list[float]) -> tuple[float, float, float]:
    a = np.asarray([t for t in x if np.isfinite(t)], float)
    if a.size == 0:
        return (np.nan, np.nan, np.nan)
    return (float(np.median(a)), float(a.min()), float(a.max()))


def metric_points(trials: pd.DataFrame, curves: pd.DataFrame, metrics: list[str],
                  by: str = "group") -> MetricPoints:
    """Each metric at init, at the grok step and at the end, per (`by`, arm)."""
    if curves.empty:
        raise AnalysisError("this sweep has no curves (no curves/*.parquet)")
    require_columns(trials, ["config_hash", "seed", "arm", "grok_step", by])
    require_columns(curves, ["config_hash", "seed", "step", *metrics])
    # `--by arm` names one column twice: a cell is then one arm (its by value is the arm)
    cols = list(dict.fromkeys(["config_hash", "seed", "arm", "grok_step", by]))
    keys = trials[cols].drop_duplicates(["config_hash", "seed"])
    cells = []
    for key, runs in keys.groupby(list(dict.fromkeys([by, "arm"])), sort=True):
        bv, arm = (key[0], key[0]) if by == "arm" else key
        merged = curves.merge(runs[["config_hash", "seed"]], on=["config_hash", "seed"])
        by_run = dict(tuple(merged.groupby(["config_hash", "seed"], sort=True)))
        for m in metrics:
            pts = [run_points(by_run[(r.config_hash, r.seed)], m, float(r.grok_step))
                   for r in runs.itertuples() if (r.config_hash, r.seed) in by_run]
            if not pts:
                continue
            g = runs["grok_step"].to_numpy(float)
            cells.append(PointCell(
                by=str(bv), arm=str(arm), metric=m, runs=len(pts),
                grokked=int(sum(np.isfinite(p[1]) for p in pts)),
                init=_stat([p[0] for p in pts]), at_grok=_stat([p[1] for p in pts]),
                end=_stat([p[2] for p in pts]),
                grok_step=float(np.median(g[np.isfinite(g)])) if np.isfinite(g).any() else np.nan,
            ))
    if not cells:
        raise AnalysisError(f"no curve values for {metrics}")
    return MetricPoints(by=by, cells=tuple(cells))
