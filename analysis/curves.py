"""Grok curves: metrics (val and train accuracy by default) against step, median and band per arm.

Each run is one (config_hash, seed) curve. At each eval step, the median and the 25th/75th
percentiles across the arm's runs that have that step. The first step where the median reaches
`threshold` is reported for accuracy metrics only (a name containing "acc"): a loss has no
accuracy threshold. `--metric norms` draws the weight norms (total and per parameter group).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from grokray.schema import WEIGHT_NORM, WEIGHT_NORM_PREFIX
from grokray_analysis.errors import AnalysisError
from grokray_analysis.load import require_arms, require_columns


def is_accuracy(metric: str) -> bool:
    """True for an accuracy metric (the crossing threshold applies)."""
    return "acc" in metric


@dataclass(frozen=True)
class CurveBand:
    """The median curve of one arm on one metric and its interquartile band."""

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
    """First step where the median reaches `threshold` (NaN if never, or not an accuracy)."""
    metric: str = "val_acc"
    """The curve column."""


@dataclass(frozen=True)
class CurveSummary:
    """Bands of every arm and metric."""

    metric: str
    """The first (main) curve column, e.g. val_acc."""
    threshold: float
    """Level used for `cross_step` (accuracy metrics only)."""
    bands: tuple[CurveBand, ...]
    """One band per (arm, metric), arms in order, the metrics of an arm together."""
    metrics: tuple[str, ...] = ()
    """Every metric drawn (the first is `metric`)."""


def curve_bands(
    curves: pd.DataFrame,
    *,
    metric: str | tuple[str, ...] | list[str] = "val_acc",
    arms: list[str] | None = None,
    threshold: float = 0.99,
) -> CurveSummary:
    """Median and interquartile band of each metric per arm and step."""
    metrics = (metric,) if isinstance(metric, str) else tuple(metric)
    if curves.empty:
        raise AnalysisError("this sweep has no curves (no curves/*.parquet)")
    require_columns(curves, ["arm", "step", *metrics])
    if arms:
        require_arms(curves, arms)
    else:
        arms = sorted(curves["arm"].astype(str).unique())
    bands = []
    for arm in arms:
        df = curves[curves["arm"] == arm]
        n_runs = int(df[["config_hash", "seed"]].drop_duplicates().shape[0])
        for m in metrics:
            v = pd.to_numeric(df[m], errors="coerce").astype(float)
            q = v.groupby(df["step"]).quantile([0.25, 0.5, 0.75]).unstack()  # [steps, 3]
            med = q[0.5].to_numpy()
            hit = np.flatnonzero(med >= threshold) if is_accuracy(m) else np.array([], int)
            bands.append(
                CurveBand(
                    arm=arm,
                    n_runs=n_runs,
                    step=tuple(q.index.astype(float)),
                    median=tuple(med),
                    lo=tuple(q[0.25].to_numpy()),
                    hi=tuple(q[0.75].to_numpy()),
                    cross_step=float(q.index[hit[0]]) if len(hit) else float("nan"),
                    metric=m,
                )
            )
    return CurveSummary(metric=metrics[0], threshold=threshold, bands=tuple(bands),
                        metrics=metrics)


NORMS = "norms"
"""`--metric norms`: the weight-norm columns (`weight_norm`, then each `weight_norm_<group>`)"""


def expand_metrics(names: list[str] | tuple[str, ...], curves: pd.DataFrame) -> tuple[str, ...]:
    """The curve columns `names` asks for, `norms` replaced by the weight-norm columns."""
    out: list[str] = []
    for name in names:
        if name != NORMS:
            out.append(name)
            continue
        cols = [c for c in curves.columns if c == WEIGHT_NORM or c.startswith(WEIGHT_NORM_PREFIX)]
        if not cols:
            raise AnalysisError("these curves have no weight_norm columns (written before "
                                "grokray recorded weight norms); run the sweep again with "
                                "--force to record them")
        out += sorted(cols, key=lambda c: (c != WEIGHT_NORM, c))
    return tuple(dict.fromkeys(out))


def default_metrics(curves: pd.DataFrame) -> tuple[str, ...]:
    """val_acc, with train_acc overlaid when the curves have it (the grokking picture)."""
    return ("val_acc", "train_acc") if "train_acc" in curves.columns else ("val_acc",)


def select_curves(
    curves: pd.DataFrame, trials: pd.DataFrame, where: dict[str, str]
) -> pd.DataFrame:
    """The curves of the selected trials: same (config_hash, seed), so `--where seed=N` keeps
    only seed N's curves (config_hash alone is shared by every seed of a config)."""
    if not where or curves.empty:
        return curves
    keys = trials[["config_hash", "seed"]].drop_duplicates()
    return curves.merge(keys, on=["config_hash", "seed"], how="inner")
