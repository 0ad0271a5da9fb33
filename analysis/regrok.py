"""The grok step under another definition, read from the curves a sweep already wrote.

A run's grok step is the first eval with val acc >= `metrics.grok_threshold` (0.99 by default)
on its eval grid. Two choices of that definition can move a power law's slope without any new
training, and both can be read from the stored curves:

- the threshold: the first curve step with val acc >= `threshold` (a run whose curve never
  reaches it is censored at its last curve step, its budget when it ran to the end);
- the eval grid: a sweep evaluated every `grid` steps would have read the first grid step at or
  after the run's grok step (the crossing of a fine grid rounded up to the coarse one; a run
  holds its accuracy for `metrics.patience` evals after grokking before it stops, and the read
  assumes it still holds at the coarse step). `grid` must be a multiple of the sweep's eval
  interval.

`redefine(trials, curves, threshold=..., grid=...)` returns the trials table with `grok_step`,
`grok_step_lo` and `status` replaced, so every analysis (the power law included) runs on it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from grokray_analysis.errors import AnalysisError
from grokray_analysis.load import require_columns


def redefine(trials: pd.DataFrame, curves: pd.DataFrame, *, threshold: float | None = None,
             grid: int | None = None) -> pd.DataFrame:
    """`trials` with the grok step read at `threshold` (default: as stored) on an eval grid of
    `grid` steps (default: the sweep's own)."""
    require_columns(trials, ["config_hash", "seed", "status", "grok_step"])
    out = trials.copy()
    timed = out["status"].isin(("grokked", "not_grokked"))
    if threshold is not None:
        if curves.empty:
            raise AnalysisError("this sweep has no curves (no curves/*.parquet)")
        require_columns(curves, ["config_hash", "seed", "step", "val_acc"])
        c = curves.sort_values("step")
        hit = c[c["val_acc"] >= threshold].groupby(["config_hash", "seed"])["step"].min()
        last = c.groupby(["config_hash", "seed"])["step"].max()
        key = pd.MultiIndex.from_frame(out[["config_hash", "seed"]])
        g = hit.reindex(key).to_numpy(float)
        end = last.reindex(key).to_numpy(float)
        ok = timed.to_numpy() & np.isfinite(g)
        out["grok_step"] = np.where(ok, g, np.nan)
        out["grok_step_lo"] = np.nan
        out.loc[timed.to_numpy() & ~ok, "status"] = "not_grokked"
        out.loc[ok, "status"] = "grokked"
        if "steps_run" in out:
            out["steps_run"] = np.where(np.isfinite(end), np.maximum(end, out["steps_run"]),
                                        out["steps_run"])
    if grid is not None:
        if grid <= 0:
            raise AnalysisError(f"grid {grid}: a positive number of steps")
        if "eval_every" in out and (grid % out["eval_every"].astype(int) != 0).any():
            raise AnalysisError(f"grid {grid} is not a multiple of the sweep's eval interval "
                                f"({sorted(set(out['eval_every'].astype(int)))})")
        g = out["grok_step"].to_numpy(float)
        coarse = np.ceil(g / grid) * grid
        if "steps" in out:  # read after the budget: the run did not grok within it
            late = np.isfinite(coarse) & (coarse > out["steps"].to_numpy(float))
            out.loc[late, "status"] = "not_grokked"
            coarse = np.where(late, np.nan, coarse)
        out["grok_step_lo"] = np.where(np.isfinite(coarse), coarse - grid, np.nan)
        out["grok_step"] = coarse
    return out
