"""Training data: one-step pairs (x_t, phi_dt(x_t)) cut from reference trajectories.

Train and test initial states come from separate seeded streams of numpy's PCG64 (data_seed and
data_seed + 1): a test orbit is never a training orbit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grokray.hamiltonian.integrate import trajectory
from grokray.hamiltonian.systems import System


@dataclass(frozen=True)
class StepData:
    """One-step pairs for training and held-out initial states for rollouts."""

    x: np.ndarray
    """[N, 2m] states."""
    y: np.ndarray
    """[N, 2m] phi_dt(x)."""
    test_x0: np.ndarray
    """[M, 2m] held-out initial states."""
    dt: float


def make_data(system: System, *, dt: float, n_traj: int, traj_steps: int, n_test: int,
              data_seed: int, substeps: int = 10) -> StepData:
    """n_traj reference trajectories of traj_steps steps -> n_traj * traj_steps pairs."""
    rng = np.random.Generator(np.random.PCG64(data_seed))
    X = trajectory(system, system.sample(rng, n_traj), dt, traj_steps, substeps)  # [T+1, n, 2m]
    x = X[:-1].reshape(-1, X.shape[-1])
    y = X[1:].reshape(-1, X.shape[-1])
    test = system.sample(np.random.Generator(np.random.PCG64(data_seed + 1)), n_test)
    return StepData(x=x, y=y, test_x0=test, dt=dt)
