"""Three Hamiltonian systems, separable H(q, p) = |p|^2 / 2 + V(q), states x = [q, p].

- harmonic: V = q^2 / 2 (1 degree of freedom); conserved: energy.
- pendulum: V = 1 - cos q (1 dof), initial states below the separatrix (H < 2); energy.
- kepler: two bodies reduced to the relative coordinate in the plane (unit masses and G, the
  reduced problem) V = -1 / |q| (2 dof); conserved: energy and angular momentum
  L = q_x p_y - q_y p_x. Initial orbits near circular (eccentricity <= about 0.45).

Arrays are numpy float64 [..., 2m] (m = dof); every function works on any leading shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from grokray.errors import ConfigError


@dataclass(frozen=True)
class System:
    """A separable Hamiltonian system."""

    name: str
    dof: int
    """m: q and p each have m components."""
    V: Callable[[np.ndarray], np.ndarray]
    """Potential of q [..., m] -> [...]."""
    dV: Callable[[np.ndarray], np.ndarray]
    """Gradient of V: q [..., m] -> [..., m]."""
    sample: Callable[[np.random.Generator, int], np.ndarray]
    """(rng, count) -> initial states [count, 2m]."""
    invariant_names: tuple[str, ...]
    """Conserved quantities measured in rollouts (energy first)."""

    def energy(self, x: np.ndarray) -> np.ndarray:
        q, p = x[..., : self.dof], x[..., self.dof :]
        return 0.5 * (p * p).sum(-1) + self.V(q)

    def invariants(self, x: np.ndarray) -> dict[str, np.ndarray]:
        out = {"energy": self.energy(x)}
        if "angular_momentum" in self.invariant_names:
            out["angular_momentum"] = x[..., 0] * x[..., 3] - x[..., 1] * x[..., 2]
        return out


def _harmonic_sample(rng: np.random.Generator, k: int) -> np.ndarray:
    r = rng.uniform(0.5, 1.5, k)
    a = rng.uniform(0, 2 * np.pi, k)
    return np.stack([r * np.cos(a), r * np.sin(a)], -1)


def _pendulum_sample(rng: np.random.Generator, k: int) -> np.ndarray:
    # H <= (1 - cos 2) + 0.5 = 1.92 < 2: every orbit librates
    return np.stack([rng.uniform(-2.0, 2.0, k), rng.uniform(-1.0, 1.0, k)], -1)


def _kepler_sample(rng: np.random.Generator, k: int) -> np.ndarray:
    r = rng.uniform(0.8, 1.2, k)
    a = rng.uniform(0, 2 * np.pi, k)
    v = np.sqrt(1.0 / r) * rng.uniform(0.8, 1.2, k)  # circular speed +-20%
    q = np.stack([r * np.cos(a), r * np.sin(a)], -1)
    p = np.stack([-v * np.sin(a), v * np.cos(a)], -1)  # counter-clockwise
    return np.concatenate([q, p], -1)


def _kepler_dV(q: np.ndarray) -> np.ndarray:
    r = np.linalg.norm(q, axis=-1, keepdims=True)
    return q / r**3


SYSTEMS: dict[str, System] = {
    "harmonic": System("harmonic", 1, lambda q: 0.5 * (q * q).sum(-1), lambda q: q,
                       _harmonic_sample, ("energy",)),
    "pendulum": System("pendulum", 1, lambda q: 1.0 - np.cos(q[..., 0]), np.sin,
                       _pendulum_sample, ("energy",)),
    "kepler": System("kepler", 2, lambda q: -1.0 / np.linalg.norm(q, axis=-1), _kepler_dV,
                     _kepler_sample, ("energy", "angular_momentum")),
}


def get_system(name: str) -> System:
    """The system called `name`; an unknown name is a ConfigError listing the valid ones."""
    try:
        return SYSTEMS[name]
    except KeyError:
        raise ConfigError(f"unknown Hamiltonian system {name!r}; valid: "
                          f"{', '.join(SYSTEMS)}") from None
