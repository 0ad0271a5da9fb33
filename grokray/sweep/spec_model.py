"""The sweep spec as a value: `SweepSpec` (a validated sweep: its base config, its grid's axes,
seeds, resources, search) and `Axis` (one axis of the grid). Made by grokray.sweep.spec, which
reads and validates a spec file; pure, no Ray. The grid is counted from its axis lengths and
built only when a run needs its configs (`SweepSpec.trials`)."""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Any

from grokray.config import TrialConfig
from grokray.errors import ConfigError, SpecError
from grokray.reader import join_uri
from grokray.sweep.search import SearchSpec

__all__ = ["Axis", "SweepSpec"]


@dataclass(frozen=True)
class Axis:
    """One axis of a grid: its dotted keys (several for a zip block, whose keys move together)
    and its rows, the keys' values at each position, with the YAML path of each row."""

    keys: tuple[str, ...]
    """the dotted config keys it sets"""
    rows: tuple[tuple[Any, ...], ...]
    """rows[j]: the values of `keys` at position j"""
    where: tuple[tuple[Any, ...], ...]
    """where[j]: the YAML key path of row j (its line in errors)"""

    @property
    def label(self) -> str:
        """Printable name: the keys joined by '+'."""
        return "+".join(self.keys)

    def __len__(self) -> int:
        return len(self.rows)

    def shown(self, row: tuple[Any, ...]) -> Any:
        """A row as a spec writes it: the value itself on a one-key axis."""
        return row if len(row) > 1 else row[0]

    def index(self, key: str) -> int | None:
        """Position of `key` in the rows, or None when this axis does not set it."""
        return self.keys.index(key) if key in self.keys else None


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep."""

    path: str
    """the YAML file it came from"""
    name: str
    """sweep name"""
    out: str
    """output root; the sweep writes to `out/name`"""
    base: TrialConfig
    """the fixed config (steps, eval_every and seeds applied)"""
    axes: tuple[Axis, ...]
    """the grid's axes, one per `axes` key and per zip block; the grid is their product"""
    seeds: list[int]
    """model seeds of every trial"""
    cpu: float = 1.0
    """CPUs per trial"""
    gpu: float = 0.0
    """GPUs per trial (fractional allowed)"""
    concurrency: int | None = None
    """trials at once (None: as many as fit)"""
    retries: int = 2
    """retries of a trial whose worker or node was lost"""
    search: SearchSpec | None = None
    """Optuna search, or None for the grid"""
    description: str = ""
    """free text"""
    capacity_study: bool = False
    """the sweep's subject is FORGE's capacity itself (checks of the faithful block's shape do
    not apply); not part of any trial's identity"""

    @property
    def sweep_dir(self) -> str:
        """`out/name`."""
        return join_uri(self.out, self.name)

    @property
    def n_points(self) -> int:
        """Points of the grid (the product of the axis lengths; a search: num_samples)."""
        if self.search is not None:
            return self.search.num_samples
        return math.prod(len(ax) for ax in self.axes)

    @property
    def swept_keys(self) -> list[str]:
        """The dotted keys that vary between trials (axes, zip blocks or the search space)."""
        if self.search is not None:
            return list(self.search.space)
        return [k for ax in self.axes for k in ax.keys]

    def seed_steps(self) -> int:
        """Seed-steps of the whole grid, from the axis lengths (steps may be an axis)."""
        if self.search is not None:
            return self.n_points * len(self.seeds) * self.base.steps
        total = len(self.seeds)
        for ax in self.axes:
            i = ax.index("steps")
            total *= len(ax) if i is None else sum(int(row[i]) for row in ax.rows)
        return total * (1 if "steps" in self.swept_keys else self.base.steps)

    def points(self) -> Any:
        """The grid's override dicts, lazily, in order (dotted key -> value)."""
        for combo in itertools.product(*(ax.rows for ax in self.axes)):
            ov: dict[str, Any] = {}
            for ax, row in zip(self.axes, combo, strict=True):
                ov.update(zip(ax.keys, row, strict=True))
            yield ov

    def trials(self) -> list[TrialConfig]:
        """The grid's configs, one per distinct identity (built on first use, then kept).

        Two grid points with the same identity (a setting the architecture does not read, say)
        are one trial: the first is kept (`merged` counts the others)."""
        return list(self._built[0])

    @property
    def merged(self) -> int:
        """Grid points that had the identity of an earlier point."""
        return self._built[1]

    @functools.cached_property
    def _built(self) -> tuple[list[TrialConfig], int]:
        if self.search is not None:
            return [], 0
        configs: list[TrialConfig] = []
        seen: set[str] = set()
        for ov in self.points():
            try:
                cfg = self.base.with_overrides(ov) if ov else self.base
            except ConfigError as exc:
                raise SpecError(f"{self.path}: axes: combination {ov}: "
                                f"{_first_line(exc)}") from None
            h = cfg.config_hash()
            if h not in seen:
                seen.add(h)
                configs.append(cfg)
        return configs, self.n_points - len(configs)


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0]
