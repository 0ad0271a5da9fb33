"""Axiom emergence (FORGE): when each algebra loss is first satisfied, and its lead over grokking.

For one seed and one algebra loss L (curve columns `loss_assoc`, `loss_ident`, `loss_inv`):

    emergence step = the first evaluation step with L(step) <= rel * L0,

where L0 is the loss at the seed's first evaluation with a finite value (the trainer evaluates at
step 0, so L0 is the loss at initialization) and `rel` is the relative threshold (default 0.01).
The lead is `grok_step - emergence step`: positive when the axiom holds before generalization.
Either is NaN when it does not exist (never below the threshold, or the seed never grokked).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from grokray.schema import AXIOM_COLUMNS

__all__ = ["AXIOM_COLUMNS", "DEFAULT_REL", "first_below", "axiom_emergence"]


DEFAULT_REL = 0.01
"""default threshold, relative to the initial loss"""


def first_below(loss: np.ndarray, steps: np.ndarray, rel: float = DEFAULT_REL) -> np.ndarray:
    """First step with loss <= rel * (first finite loss). loss [T, ...], steps [T] -> [...] float.

    Rows must be in step order. NaN where the loss never gets there (or is never finite).
    """
    loss = np.asarray(loss, dtype=np.float64)
    steps = np.asarray(steps, dtype=np.float64)
    finite = np.isfinite(loss)  # [T, ...]
    has = finite.any(axis=0)
    first = np.argmax(finite, axis=0)  # index of the first finite value
    L0 = np.take_along_axis(loss, first[None], axis=0)[0]  # [...]
    below = finite & (loss <= rel * L0[None])
    hit = below.any(axis=0) & has
    idx = np.argmax(below, axis=0)
    return np.where(hit, steps[idx], np.nan)


def axiom_emergence(
    curves: pd.DataFrame,
    grok_steps: Mapping[int, int | None],
    rel: float = DEFAULT_REL,
) -> dict[int, dict[str, float]]:
    """Per seed: `<axiom>_step` and `<axiom>_lead` for each algebra-loss column present.

    curves: one row per (seed, eval step) with columns `seed`, `step` and any of `loss_assoc`,
    `loss_ident`, `loss_inv`. grok_steps: seed -> grok step (None if it never grokked).
    Seeds without any algebra-loss column get an empty dict.
    """
    present = {a: c for a, c in AXIOM_COLUMNS.items() if c in curves.columns}
    out: dict[int, dict[str, float]] = {}
    for seed, df in curves.sort_values(["seed", "step"]).groupby("seed", sort=True):
        seed = int(seed)
        row: dict[str, float] = {}
        if present:
            losses = df[list(present.values())].to_numpy(dtype=np.float64)  # [T, A]
            at = first_below(losses, df["step"].to_numpy(), rel)  # [A]
            g = grok_steps.get(seed)
            grok = np.nan if g is None else float(g)
            for a, step in zip(present, at, strict=True):
                row[f"{a}_step"] = float(step)
                row[f"{a}_lead"] = float(grok - step)
        out[seed] = row
    return out
