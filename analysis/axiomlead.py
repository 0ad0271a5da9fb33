"""Axiom-emergence lead over grokking under several threshold definitions, from the curves.

The trials table holds one definition (`grokray.metrics.axioms`: the first eval with
L <= 1% of the loss at initialization). The paper ("the identity axiom is satisfied 583 +- 80
steps before generalization") does not say what "satisfied" means, so this reads the same
curves (`loss_ident`, `loss_assoc`, `loss_inv`) under other thresholds:

- `rel=r`: first eval with L <= r * L0, L0 the run's first finite value (r = 0.01 is the
  trials-table definition; `grokray.metrics.axioms.first_below`);
- `abs=a`: first eval with L <= a (an absolute level: the loss as a squared distance in the
  embedding space, independent of where it started);
- `+held`: the first eval from which L stays at or below the threshold through the grok step
  (NaN when it is above it at the grok step): "satisfied" as a lasting state, not a crossing.

The lead is grok_step - emergence step (positive: the axiom holds before generalization).
Per (`by` value, arm, definition): runs, grokked runs, runs with a lead, the median lead, its
mean and standard deviation (the paper's "+- 80" is one of these or an interval; it does not
say), the range, and how many leads are positive.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from grokray.schema import AXIOM_COLUMNS
from grokray_analysis.errors import AnalysisError
from grokray_analysis.load import require_columns

__all__ = ["LeadCell", "AxiomLeads", "emergence", "axiom_leads"]


@dataclass(frozen=True)
class LeadCell:
    by: str
    arm: str
    axiom: str
    definition: str
    runs: int
    grokked: int
    n: int
    """grokked runs where the axiom emerged (so a lead exists)"""
    median: float
    mean: float
    sd: float
    lo: float
    hi: float
    positive: int
    """leads > 0: the axiom held before generalization"""
    median_step: float
    """median emergence step"""


@dataclass(frozen=True)
class AxiomLeads:
    by: str
    cells: tuple[LeadCell, ...]


def emergence(loss: np.ndarray, steps: np.ndarray, *, rel: float | None = None,
              absolute: float | None = None, held_until: float | None = None) -> float:
    """Emergence step of one run's loss curve (rows in step order), NaN if none.

    Exactly one of `rel` (threshold rel * first finite value) and `absolute` (threshold a).
    `held_until`: the first eval from which the loss stays <= threshold at every eval up to
    and including this step (NaN when it is above the threshold there or never finite).
    """
    if (rel is None) == (absolute is None):
        raise ValueError("give exactly one of rel and absolute")
    loss = np.asarray(loss, float)
    steps = np.asarray(steps, float)
    fin = np.isfinite(loss)
    if not fin.any():
        return np.nan
    thr = absolute if absolute is not None else rel * loss[np.argmax(fin)]
    below = fin & (loss <= thr)
    if held_until is None:
        return float(steps[np.argmax(below)]) if below.any() else np.nan
    upto = np.flatnonzero(steps <= held_until)
    if upto.size == 0 or not below[upto[-1]]:
        return np.nan
    k = upto[-1]
    while k > 0 and below[k - 1]:
        k -= 1
    return float(steps[k])


def _definitions(rel: list[float], absolute: list[float], held: bool):
    defs = [(f"rel={r:g}", {"rel": r}) for r in rel] + [(f"abs={a:g}", {"absolute": a})
                                                         for a in absolute]
    if held:
        defs += [(name + "+held", {**kw, "held": True}) for name, kw in list(defs)]
    return defs


def axiom_leads(trials: pd.DataFrame, curves: pd.DataFrame, *, axioms: list[str] | None = None,
                rel: list[float] | None = None, absolute: list[float] | None = None,
                held: bool = False, by: str = "group") -> AxiomLeads:
    """Lead of each axiom over the grok step per (`by`, arm, threshold definition)."""
    axioms = axioms or ["ident"]
    bad = [a for a in axioms if a not in AXIOM_COLUMNS]
    if bad:
        raise AnalysisError(f"unknown axiom {bad[0]!r}; valid: {', '.join(AXIOM_COLUMNS)}")
    rel = [0.01] if rel is None and not absolute else (rel or [])
    defs = _definitions(rel, absolute or [], held)
    if curves.empty:
        raise AnalysisError("this sweep has no curves (no curves/*.parquet)")
    cols = [AXIOM_COLUMNS[a] for a in axioms]
    require_columns(trials, ["config_hash", "seed", "arm", "grok_step", by])
    require_columns(curves, ["config_hash", "seed", "step", *cols])
    keys = trials[["config_hash", "seed", "arm", "grok_step", by]].drop_duplicates(
        ["config_hash", "seed"])
    cells = []
    for (bv, arm), runs in keys.groupby([by, "arm"], sort=True):
        merged = curves.merge(runs[["config_hash", "seed"]], on=["config_hash", "seed"])
        by_run = {k: v.sort_values("step") for k, v in merged.groupby(["config_hash", "seed"])}
        for a, col in zip(axioms, cols, strict=True):
            if not np.isfinite(pd.to_numeric(merged[col], errors="coerce")).any():
                continue  # this arm has no such loss (e.g. an MLP)
            for name, kw in defs:
                leads, at = [], []
                for r in runs.itertuples():
                    c = by_run.get((r.config_hash, r.seed))
                    g = float(r.grok_step)
                    if c is None or not np.isfinite(g):
                        continue
                    s = emergence(c[col].to_numpy(float), c["step"].to_numpy(float),
                                  rel=kw.get("rel"), absolute=kw.get("absolute"),
                                  held_until=g if kw.get("held") else None)
                    if np.isfinite(s):
                        leads.append(g - s)
                        at.append(s)
                x = np.asarray(leads, float)
                cells.append(LeadCell(
                    by=str(bv), arm=str(arm), axiom=a, definition=name, runs=len(runs),
                    grokked=int(np.isfinite(runs["grok_step"].to_numpy(float)).sum()),
                    n=int(x.size),
                    median=float(np.median(x)) if x.size else np.nan,
                    mean=float(x.mean()) if x.size else np.nan,
                    sd=float(x.std(ddof=1)) if x.size > 1 else np.nan,
                    lo=float(x.min()) if x.size else np.nan,
                    hi=float(x.max()) if x.size else np.nan,
                    positive=int((x > 0).sum()),
                    median_step=float(np.median(at)) if at else np.nan,
                ))
    return AxiomLeads(by=by, cells=tuple(cells))
