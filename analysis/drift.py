"""Invariant drift of learned Hamiltonian dynamics per (system, arm), and the ratio to a baseline.

Reads the trials of a `hamiltonian` sweep (columns `hamiltonian_system`, `arm`,
`metric_drift_<invariant>`). Per cell: seeds, median drift and its range over seeds, rollout
blow-ups (an orbit that went non-finite counts as drift inf, so a median can be inf), and the
leapfrog reference. Ratio: median drift of the baseline arm / median drift of the arm (> 1: the
arm drifts less), the figure the FORGE paper reports as "20-150,000x lower".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from grokray_analysis.errors import AnalysisError
from grokray_analysis.load import require_columns


@dataclass(frozen=True)
class DriftCell:
    system: str
    arm: str
    invariant: str
    n: int
    """seeds counted"""
    median: float
    lo: float
    """smallest seed's drift"""
    hi: float
    """largest seed's drift"""
    blowups: float
    """rollout orbits that went non-finite, summed over seeds"""
    reference: float
    """leapfrog drift at the same dt (median over seeds)"""
    ratio: float
    """baseline median / this median (NaN for the baseline itself)"""


@dataclass(frozen=True)
class DriftTable:
    baseline: str
    cells: tuple[DriftCell, ...]
    n_failed: int


def drift_table(trials: pd.DataFrame, baseline: str = "mlp") -> DriftTable:
    """Median drift per (system, arm, invariant) and its ratio to `baseline`."""
    require_columns(trials, ["hamiltonian_system", "arm", "status"])
    cols = sorted(c for c in trials.columns
                  if c.startswith("metric_drift_") and trials[c].notna().any())
    if not cols:
        raise AnalysisError("no metric_drift_* columns: is this a hamiltonian sweep?")
    ok = trials[trials["status"] == "not_grokked"]
    if baseline not in set(ok["arm"]):
        raise AnalysisError(f"baseline arm {baseline!r} not found; arms: "
                            f"{sorted(set(ok['arm']))}")
    cells = []
    for (system, arm), sub in ok.groupby(["hamiltonian_system", "arm"], sort=True):
        base = ok[(ok["hamiltonian_system"] == system) & (ok["arm"] == baseline)]
        for c in cols:
            v = sub[c].dropna().to_numpy(float)
            if v.size == 0:
                continue
            inv = c[len("metric_drift_"):]
            med = float(np.median(v))
            bmed = float(np.median(base[c].dropna().to_numpy(float))) if len(base) else np.nan
            ref_col = f"metric_ref_drift_{inv}"
            ref = float(np.median(sub[ref_col])) if ref_col in sub else np.nan
            ratio = np.nan if arm == baseline else (bmed / med if med > 0 else np.inf)
            blow = float(sub["metric_blowups"].sum()) if "metric_blowups" in sub else 0.0
            cells.append(DriftCell(str(system), str(arm), inv, int(v.size), med,
                                   float(v.min()), float(v.max()), blow, ref, float(ratio)))
    return DriftTable(baseline, tuple(cells), int((trials["status"] == "failed").sum()))
