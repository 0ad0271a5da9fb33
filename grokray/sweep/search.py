"""Optuna search over a sweep's config: the distributions, the search spec, and its Tune setup.

```yaml
search:
  space: {optim.lr: {loguniform: [1.0e-4, 1.0e-2]}, model.rank: {choice: [16, 32, 64]}}
  metric: final_val_acc     # final_val_acc | grok_rate (max), grok_step | final_val_loss (min)
  mode: max
  num_samples: 20
  seed: 0
```

Each distribution is an object that checks its own arguments (`parse_distribution` raises
`ValueError` with one line saying what is valid) and turns itself into a Ray Tune sampler
(`to_tune`, imports Ray Tune lazily). `tune_setup` builds the Tune param space and search
algorithm of a search; only `grokray.sweep.executors.tune` calls it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from grokray.config import get_key
from grokray.yamlsafe import is_int, is_number

# search metric -> its natural mode (the trial-level summaries a Tune trial reports)
SEARCH_METRICS = {
    "final_val_acc": "max", "grok_rate": "max", "grok_step": "min", "final_val_loss": "min",
}
SEARCH_KEYS = ("space", "metric", "mode", "num_samples", "seed")
MAX_CHOICES = 10_000


@dataclass(frozen=True)
class Uniform:
    """Uniform on [low, high)."""

    low: float
    high: float
    usage: ClassVar[str] = "[low, high], numbers, low < high"

    @classmethod
    def parse(cls, args: list[Any]) -> Uniform:
        low, high = _bounds(args, cls.usage)
        return cls(float(low), float(high))

    def to_tune(self) -> Any:
        # lazy: Ray only where a Ray session runs (--local, dry runs load none)
        from ray import tune

        return tune.uniform(self.low, self.high)

    def probes(self) -> list[Any]:
        """Values that must be valid config values (the ends of the range)."""
        return [self.low, self.high]

    def __str__(self) -> str:
        return f"uniform[{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class LogUniform(Uniform):
    """Log-uniform on [low, high), low > 0."""

    usage: ClassVar[str] = "[low, high], numbers, 0 < low < high"

    @classmethod
    def parse(cls, args: list[Any]) -> LogUniform:
        low, high = _bounds(args, cls.usage)
        if low <= 0:
            raise ValueError(f"loguniform needs low > 0, got {args!r}; expected {cls.usage}")
        return cls(float(low), float(high))

    def to_tune(self) -> Any:
        # lazy: Ray only where a Ray session runs (--local, dry runs load none)
        from ray import tune

        return tune.loguniform(self.low, self.high)

    def __str__(self) -> str:
        return f"loguniform[{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class RandInt:
    """Integers in [low, high)."""

    low: int
    high: int
    usage: ClassVar[str] = "[low, high), ints, low < high"

    @classmethod
    def parse(cls, args: list[Any]) -> RandInt:
        low, high = _bounds(args, cls.usage)
        if not (is_int(low) and is_int(high)):
            raise ValueError(f"randint needs ints, got {args!r}; expected {cls.usage}")
        return cls(low, high)

    def to_tune(self) -> Any:
        # lazy: Ray only where a Ray session runs (--local, dry runs load none)
        from ray import tune

        return tune.randint(self.low, self.high)

    def probes(self) -> list[Any]:
        return [self.low, self.high - 1]

    def __str__(self) -> str:
        return f"randint[{self.low}, {self.high})"


@dataclass(frozen=True)
class QUniform:
    """Uniform on [low, high] rounded to multiples of q."""

    low: float
    high: float
    q: float
    usage: ClassVar[str] = "[low, high, q], numbers, low < high, q > 0"

    @classmethod
    def parse(cls, args: list[Any]) -> QUniform:
        if not isinstance(args, list) or len(args) != 3 or not all(is_number(a) for a in args):
            raise ValueError(f"expected {cls.usage}, got {args!r}")
        low, high, q = args
        if low >= high:
            raise ValueError(f"low must be < high, got {args!r}")
        if q <= 0:
            raise ValueError(f"q must be > 0, got {args!r}")
        return cls(float(low), float(high), float(q))

    def to_tune(self) -> Any:
        # lazy: Ray only where a Ray session runs (--local, dry runs load none)
        from ray import tune

        return tune.quniform(self.low, self.high, self.q)

    def probes(self) -> list[Any]:
        return [self.low, self.high]

    def __str__(self) -> str:
        return f"quniform[{self.low:g}, {self.high:g}, q={self.q:g}]"


@dataclass(frozen=True)
class Choice:
    """One of a list of distinct values."""

    values: tuple[Any, ...]
    usage: ClassVar[str] = "[value, ...], distinct scalars"

    @classmethod
    def parse(cls, args: list[Any]) -> Choice:
        if not isinstance(args, list) or not args:
            raise ValueError(f"expected a non-empty list {cls.usage}, got {args!r}")
        if len(args) > MAX_CHOICES:
            raise ValueError(f"{len(args)} choices; at most {MAX_CHOICES}")
        if any(isinstance(a, (dict, list)) for a in args):
            raise ValueError(f"choices must be scalars, got {args!r}")
        if len({repr(a) for a in args}) != len(args):
            raise ValueError(f"duplicate choices in {args!r}")
        return cls(tuple(args))

    def to_tune(self) -> Any:
        # lazy: Ray only where a Ray session runs (--local, dry runs load none)
        from ray import tune

        return tune.choice(list(self.values))

    def probes(self) -> list[Any]:
        return list(self.values)

    def __str__(self) -> str:
        return "choice" + str(list(self.values))


DISTRIBUTIONS: dict[str, type] = {
    "uniform": Uniform, "loguniform": LogUniform, "randint": RandInt, "choice": Choice,
    "quniform": QUniform,
}
Distribution = Uniform | LogUniform | RandInt | QUniform | Choice


def _bounds(args: Any, usage: str) -> tuple[Any, Any]:
    if not isinstance(args, list) or len(args) != 2 or not all(is_number(a) for a in args):
        raise ValueError(f"expected {usage}, got {args!r}")
    if args[0] >= args[1]:
        raise ValueError(f"low must be < high, got {args!r}")
    return args[0], args[1]


def parse_distribution(value: Any) -> Distribution:
    """`{name: args}` -> a distribution; ValueError (one line, what is valid) otherwise."""
    usage = "; ".join(f"{n}: {c.usage}" for n, c in DISTRIBUTIONS.items())
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError(f"expected one {{distribution: args}}, got {value!r}; valid: {usage}")
    (name, args), = value.items()
    cls = DISTRIBUTIONS.get(str(name))
    if cls is None:
        raise ValueError(f"unknown distribution {name!r}; valid: {', '.join(DISTRIBUTIONS)}")
    return cls.parse(args)


@dataclass(frozen=True)
class SearchSpec:
    """An Optuna search through Ray Tune's OptunaSearch."""

    space: dict[str, Distribution]
    """dotted config key -> its distribution"""
    metric: str
    """trial-level metric, one of SEARCH_METRICS"""
    mode: str
    """min or max"""
    num_samples: int
    """total number of configs to sample (already finished ones count)"""
    seed: int | None = None
    """sampler seed"""

    def describe(self) -> str:
        """One line: what is searched and how."""
        return (f"optuna, {self.metric} ({self.mode}), {self.num_samples} samples over "
                + ", ".join(f"{k} ~ {d}" for k, d in self.space.items()))


@dataclass(frozen=True)
class SearchRun:
    """What one run of a search does: sample `num_samples` new configs around `base`."""

    spec: SearchSpec
    """the search"""
    base: Any
    """the fixed TrialConfig the samples override"""
    prior: Sequence[tuple[Any, float]] = ()
    """finished (config, metric) pairs that warm-start the sampler"""
    num_samples: int = 0
    """new configs to sample"""


def safe_key(key: str) -> str:
    """Search-space parameter name for a dotted config key (Tune splits nested keys on '/')."""
    return key.replace(".", "__")


def unsafe_key(name: str) -> str:
    """Inverse of `safe_key`."""
    return name.replace("__", ".")


def tune_setup(run: SearchRun, concurrency: int | None, **tune_config: Any) -> tuple[dict, Any]:
    """(param_space, TuneConfig) of a search: OptunaSearch warm-started with the prior."""
    # lazy: Ray only where a Ray session runs (--local, dry runs load none)
    import optuna
    from ray import tune
    from ray.tune.search.optuna import OptunaSearch


    optuna.logging.set_verbosity(optuna.logging.WARNING)
    spec = run.spec
    points, rewards = [], []
    for cfg, value in run.prior:
        if value is None or value != value:  # NaN: nothing ran
            continue
        points.append({safe_key(k): get_key(cfg, k) for k in spec.space})
        rewards.append(value)
    # a resumed search must not replay the same random start-up samples
    seed = None if spec.seed is None else spec.seed + len(run.prior)
    searcher = OptunaSearch(
        metric=spec.metric, mode=spec.mode, seed=seed,
        points_to_evaluate=points or None, evaluated_rewards=rewards or None,
    )
    param_space = {"config": run.base.to_dict(),
                   **{safe_key(k): d.to_tune() for k, d in spec.space.items()}}
    # OptunaSearch reads metric/mode from itself; Tune must not set them twice
    return param_space, tune.TuneConfig(search_alg=searcher, num_samples=run.num_samples,
                                        max_concurrent_trials=concurrency, **tune_config)
