"""Long rollouts of a learned step map and the drift of the conserved quantities.

drift(I) = mean over test orbits of max_{t <= N} |I(x_t) - I(x_0)| / |I(x_0)|, computed from the
true invariant functions of the system on the model's states. An orbit whose state becomes
non-finite has drift inf (a censored measurement, counted in `blowups`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from grokray.hamiltonian.systems import System


@torch.no_grad()
def rollout(step: Callable[[torch.Tensor], torch.Tensor], x0: np.ndarray, steps: int,
            dtype=torch.float32) -> np.ndarray:
    """States [steps + 1, M, 2m] (float64) of iterating `step` from x0 [M, 2m]."""
    x = torch.as_tensor(x0, dtype=dtype)
    out = [x]
    for _ in range(steps):
        x = step(x)
        out.append(x)
    return torch.stack(out).double().numpy()


def drift(system: System, X: np.ndarray) -> dict[str, float]:
    """{invariant: drift} and {"blowups": orbits that went non-finite} for states [T, M, 2m]."""
    with np.errstate(all="ignore"):
        inv = system.invariants(X)
        out: dict[str, float] = {}
        bad = ~np.isfinite(X).all(axis=(0, 2))  # [M]
        for name, v in inv.items():  # v [T, M]
            rel = np.abs(v - v[:1]) / np.abs(v[:1])
            per = np.where(bad, np.inf, np.nanmax(np.where(np.isfinite(rel), rel, np.inf), 0))
            out[name] = float(np.mean(per))
    out["blowups"] = float(bad.sum())
    return out
