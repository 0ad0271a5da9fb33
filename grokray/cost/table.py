"""The stored calibration (`table.json`, written by benchmarks/calibrate_cost.py) and its fit.

Per step kind (work.KINDS), CPU seconds at the reference host's speed:
    step(S) = a + S * (b + c * M)        M: million multiply-adds per seed (work.step_macs)
    setup   = s0 + s1 * pairs / 1e6      once per trial (task, splits, model, first eval)
and per metric, seconds per seed and evaluation per million evaluated pairs. Fitted by
non-negative least squares on relative error over the probes stored beside the coefficients."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

PATH = Path(__file__).with_name("table.json")


@lru_cache(maxsize=4)
def load(path: str | None = None) -> dict[str, Any]:
    """The stored table (coefficients, reference host, command, date, probes)."""
    return json.loads(Path(path or PATH).read_text())


def _nnls(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least squares on relative error (each row weighted by 1 / y)."""
    from scipy.optimize import nnls

    w = 1.0 / np.maximum(y, 1e-9)
    coef, _ = nnls(X * w[:, None], y * w)
    return coef


def fit_kind(probes: list[dict[str, Any]]) -> dict[str, float]:
    """Coefficients of one kind from its probes ({"seeds", "macs_m", "pairs", "step_s",
    "setup_s"} each)."""
    S = np.array([p["seeds"] for p in probes], float)
    M = np.array([p["macs_m"] for p in probes], float)
    step = np.array([p["step_s"] for p in probes], float)
    a, b, c = _nnls(np.column_stack([np.ones_like(S), S, S * M]), step)
    P = np.array([p["pairs"] for p in probes], float) / 1e6
    setup = np.array([max(p["setup_s"], 1e-3) for p in probes], float)
    s0, s1 = _nnls(np.column_stack([np.ones_like(P), P]), setup)
    return {"a": float(a), "b": float(b), "c": float(c), "s0": float(s0), "s1": float(s1)}


def fit(probes: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Coefficients of every kind that has probes."""
    kinds = sorted({p["kind"] for p in probes})
    return {k: fit_kind([p for p in probes if p["kind"] == k]) for k in kinds}
