"""Grok curves: a metric (val acc by default) against step, median and band per arm.

Each run is one (config_hash, seed) curve. At each eval step, the median and the 25th/75th
percentiles across the arm's runs that have that step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.errors import AnalysisError
from analysis.load import require_arms, require_columns


@dataclass(frozen=True)
class CurveBand:
    """The median curve of one arm and its interquartile band."""

    arm: str
    """The arm."""
    n_runs: int
    """Curves (config, seed) in this arm."""
    step: tuple[float, ...]
    """Eval steps, sorted."""
    median: tuple[float, ...]
    """Median of the metric across runs at each step."""
    lo: tuple[float, ...]
    """25th percentile."""
    hi: tuple[float, ...]
    """75th percentile."""
    cross_step: float
    """First step where the median reaches `threshold` (NaN if never)."""


@dataclass(frozen=True)
class CurveSummary:
    """Bands of every arm."""

    metric: str
    """The curve column (e.g. val_acc)."""
    threshold: float
    """Level used for `cross_step`."""
    bands: tuple[CurveBand, ...]
    """One band per arm."""


def curve_bands(
    curves: pd.DataFrame,
    *,
    metric: str = "val_acc",
    arms: list[str] | None = None,
    threshold: float = 0.99,
) -> CurveSummary:
    """Median and interquartile band of `metric` per arm and step."""
    if curves.empty:
        raise AnalysisError("this sweep has no curves (no curves/*.parquet)")
    require_columns(curves, ["arm", "step", metric])
    if arms:
        require_arms(curves, arms)
    else:
        arms = sorted(curves["arm"].astype(str).unique())
    bands = []
    for arm in arms:
        df = curves[curves["arm"] == arm]
        v = pd.to_numeric(df[metric], errors="coerce").astype(float)
        q = v.groupby(df["step"]).quantile([0.25, 0.5, 0.75]).unstack()  # [steps, 3]
        med = q[0.5].to_numpy()
        hit = np.flatnonzero(med >= threshold)
        bands.append(
            CurveBand(
                arm=arm,
                n_runs=int(df[["config_hash", "seed"]].drop_duplicates().shape[0]),
                step=tuple(q.index.astype(float)),
                median=tuple(med),
                lo=tuple(q[0.25].to_numpy()),
                hi=tuple(q[0.75].to_numpy()),
                cross_step=float(q.index[hit[0]]) if len(hit) else float("nan"),
            )
        )
    return CurveSummary(metric=metric, threshold=threshold, bands=tuple(bands))
