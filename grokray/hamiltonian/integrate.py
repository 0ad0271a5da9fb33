"""Symplectic integrators for separable H = |p|^2 / 2 + V(q) (numpy, float64, vectorized).

`leapfrog` is Stormer-Verlet (kick-drift-kick, order 2); `yoshida4` composes three leapfrog steps
with Yoshida's (1990) coefficients w1 = 1 / (2 - 2^(1/3)), w0 = -2^(1/3) w1 (order 4). Both are
symplectic and time-reversible, so the energy error stays bounded (no secular drift).
`flow(system, x, t, substeps)` is the reference flow map phi_t: `substeps` Yoshida steps.
"""

from __future__ import annotations

import numpy as np

from grokray.hamiltonian.systems import System

_W1 = 1.0 / (2.0 - 2.0 ** (1.0 / 3.0))
_W0 = -(2.0 ** (1.0 / 3.0)) * _W1


def leapfrog(system: System, x: np.ndarray, h: float) -> np.ndarray:
    """One Stormer-Verlet step of size h: [..., 2m] -> [..., 2m]."""
    m = system.dof
    q, p = x[..., :m], x[..., m:]
    p = p - 0.5 * h * system.dV(q)
    q = q + h * p
    p = p - 0.5 * h * system.dV(q)
    return np.concatenate([q, p], -1)


def yoshida4(system: System, x: np.ndarray, h: float) -> np.ndarray:
    """One 4th-order Yoshida step of size h (three leapfrog steps w1 h, w0 h, w1 h)."""
    for w in (_W1, _W0, _W1):
        x = leapfrog(system, x, w * h)
    return x


def flow(system: System, x: np.ndarray, t: float, substeps: int = 10) -> np.ndarray:
    """phi_t(x) by `substeps` Yoshida steps of t / substeps."""
    h = t / substeps
    for _ in range(substeps):
        x = yoshida4(system, x, h)
    return x


def trajectory(system: System, x0: np.ndarray, dt: float, steps: int,
               substeps: int = 10) -> np.ndarray:
    """States at 0, dt, ..., steps*dt: [steps + 1, ..., 2m]."""
    out = [x0]
    for _ in range(steps):
        out.append(flow(system, out[-1], dt, substeps))
    return np.stack(out)
