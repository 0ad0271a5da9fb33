"""Speedup tables: per group, the median grok step of each arm, its grok rate, and the speedup
against a baseline arm with a bootstrap interval.

Medians count a run that never grokked (`not_grokked`, or `diverged`: it stopped without
grokking) as +inf, so the median is censored (inf) when half or more of the runs did not grok.
`failed` runs (an exception) are left out and counted. The speedup is
`median(baseline) / median(arm)`; when only the baseline's median is censored, the speedup is
reported as a lower bound, `budget / median(arm)`, with the baseline's largest `steps_run` as the
budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.errors import AnalysisError
from analysis.load import require_arms, require_columns

ABLATION_ARMS = ("mlp", "mlp+grokfast", "forge", "forge+grokfast")
"""The papers' 4-way matched-budget ablation, in its column order."""


@dataclass(frozen=True)
class SpeedupRow:
    """One (group, arm) cell of a speedup table."""

    group: str
    """Value of the `by` column (a group name by default)."""
    arm: str
    """The arm."""
    n: int
    """Runs counted (grokked, not_grokked, diverged)."""
    k: int
    """Runs that grokked."""
    n_failed: int
    """Runs that failed (left out)."""
    median: float
    """Median grok step, never-grokked runs as +inf (inf when censored)."""
    speedup: float
    """median(baseline) / median(arm); NaN when undefined."""
    speedup_ci: tuple[float, float]
    """95% percentile bootstrap interval of the speedup (runs resampled within each cell)."""
    lower_bound: bool
    """True when the baseline's median is censored and `speedup` is budget / median(arm)."""


@dataclass(frozen=True)
class SpeedupTable:
    """Speedup of every arm against a baseline, per group."""

    baseline: str
    """The baseline arm."""
    by: str
    """The column rows are grouped by."""
    arms: tuple[str, ...]
    """Arms in display order (the 4-way ablation order first)."""
    rows: tuple[SpeedupRow, ...]
    """One row per (group, arm) present."""
    n_boot: int
    """Bootstrap resamples per cell."""


def ablation_order(arms: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The 4-way ablation arms first in their paper order, then the rest sorted."""
    known = [a for a in ABLATION_ARMS if a in arms]
    return tuple(known + sorted(a for a in arms if a not in ABLATION_ARMS))


def _steps(df: pd.DataFrame) -> np.ndarray:
    return np.where(df["status"] == "grokked", df["grok_step"], np.inf).astype(float)


def _boot_medians(x: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    idx = rng.integers(0, len(x), size=(n_boot, len(x)))  # [n_boot, n]
    return np.median(x[idx], axis=1)  # inf propagates: a censored median stays inf


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(num, float) / np.asarray(den, float)


def speedup_table(
    trials: pd.DataFrame,
    baseline: str,
    *,
    arms: list[str] | None = None,
    by: str = "group",
    n_boot: int = 1000,
    seed: int = 0,
) -> SpeedupTable:
    """Per `by` value and arm: k/n, median grok step, and speedup vs `baseline` (bootstrap CI)."""
    require_columns(trials, ["arm", by])
    all_arms = sorted(trials["arm"].unique())
    arms = list(arms) if arms else all_arms
    require_arms(trials, [baseline, *arms])
    order = ablation_order(sorted(set(arms) | {baseline}))
    rng = np.random.default_rng(seed)
    rows = []
    for g, sub in trials.groupby(by, sort=True):
        cells = {a: sub[sub["arm"] == a] for a in order}
        base = cells[baseline]
        base_ok = base[base["status"] != "failed"]
        base_x = _steps(base_ok)
        base_med = float(np.median(base_x)) if len(base_x) else float("nan")
        base_boot = _boot_medians(base_x, n_boot, rng) if len(base_x) and n_boot else None
        has_budget = "steps_run" in base_ok and len(base_ok)
        budget = float(base_ok["steps_run"].max()) if has_budget else np.nan
        for a in order:
            cell = cells[a]
            if cell.empty:
                continue
            ok = cell[cell["status"] != "failed"]
            x = _steps(ok)
            med = float(np.median(x)) if len(x) else float("nan")
            lower = bool(np.isinf(base_med) and np.isfinite(med))
            speedup = float(_ratio(budget if lower else base_med, med)) if len(x) else np.nan
            if np.isinf(base_med) and np.isinf(med):
                speedup = float("nan")
            ci = (float("nan"), float("nan"))
            if base_boot is not None and len(x) and not lower and np.isfinite(speedup):
                r = _ratio(base_boot, _boot_medians(x, n_boot, rng))
                if not np.isnan(r).any():
                    lo, hi = np.quantile(r, [0.025, 0.975], method="inverted_cdf")
                    ci = (float(lo), float(hi))
            rows.append(
                SpeedupRow(
                    group=str(g), arm=a, n=len(ok), k=int((ok["status"] == "grokked").sum()),
                    n_failed=len(cell) - len(ok), median=med, speedup=speedup,
                    speedup_ci=ci, lower_bound=lower,
                )
            )
    if not rows:
        raise AnalysisError("no rows to build a speedup table from")
    return SpeedupTable(
        baseline=baseline, by=by, arms=order, rows=tuple(rows), n_boot=n_boot
    )
