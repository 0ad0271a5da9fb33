"""Schedules: the learning rate lr(t) and the FORGE algebra-loss weight lambda_alg(t).

Plain functions of the step t (0-based: the value used by the t-th optimizer step).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from grokray.config import OptimConfig


def lr_at(step: int, optim: OptimConfig, total_steps: int) -> float:
    """Learning rate of step `step`: linear warmup over `warmup_steps`, then the schedule.

    constant: lr. cosine: lr * (1 + cos(pi * u)) / 2 and linear: lr * (1 - u), with u the
    fraction of the post-warmup budget spent (u in [0, 1]).
    """
    w = optim.warmup_steps
    if w > 0 and step < w:
        return optim.lr * (step + 1) / w
    if optim.lr_schedule == "constant":
        return optim.lr
    span = max(1, total_steps - w)
    u = min(1.0, max(0.0, (step - w) / span))
    if optim.lr_schedule == "cosine":
        return optim.lr * 0.5 * (1.0 + math.cos(math.pi * u))
    if optim.lr_schedule == "linear":
        return optim.lr * (1.0 - u)
    raise ValueError(f"unknown lr schedule {optim.lr_schedule!r}")


def lambda_alg(step: int, forge: Any, total_steps: int) -> float:
    """Weight of the algebra losses at step `step` (structure first, task later).

    With T = forge.lambda_steps when set (a fixed step, whatever the budget), else
    lambda_end * total_steps (a share of the budget), and lam0 = forge.lambda_alg:
    linear: lam0 * max(0, 1 - t/T); cosine: lam0 * (1 + cos(pi * min(1, t/T))) / 2;
    step: lam0 while t < T, then 0; constant: lam0; off: 0.
    """
    lam0, kind = forge.lambda_alg, forge.lambda_schedule
    if kind == "off":
        return 0.0
    if kind == "constant":
        return lam0
    fixed = getattr(forge, "lambda_steps", None)
    T = max(1e-12, fixed if fixed is not None else forge.lambda_end * total_steps)
    u = step / T
    if kind == "linear":
        return lam0 * max(0.0, 1.0 - u)
    if kind == "cosine":
        return lam0 * 0.5 * (1.0 + math.cos(math.pi * min(1.0, u)))
    if kind == "step":
        return lam0 if u < 1.0 else 0.0
    raise ValueError(f"unknown lambda schedule {kind!r}")
