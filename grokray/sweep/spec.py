"""Sweep spec: a YAML file -> a validated `SweepSpec` -> `list[TrialConfig]`. Pure: no Ray.

```yaml
name: smoke                 # the sweep's name: results go to OUT/<name>/
out: results                # output root (a local path or a pyarrow URL such as s3://bucket/x)
config:                     # the fixed config: TrialConfig keys, nested or dotted
  train_frac: 0.5
  model: {d: 32}
axes:                       # dotted config keys -> lists; the full product of all axes
  group: [Z5, S3]
  arch: [mlp, forge]
zip:                        # optional: lists that move together (each block is one axis)
  - {model.d: [16, 32], model.rank: [8, 16]}
seeds: 2                    # a count (seeds 0..n-1) or a list of distinct seeds
steps: 300                  # step budget (sets config steps)
eval_every: 50              # eval cadence (sets config eval_every)
resources: {cpu: 1, gpu: 0} # per trial; fractional gpu allowed
concurrency: 2              # trials at once (null: as many as the resources allow)
retries: 2                  # re-runs of a trial whose worker process or node was lost
search:                     # optional Optuna search (Ray Tune's OptunaSearch), no axes then
  space: {optim.lr: {loguniform: [1.0e-4, 1.0e-2]}, model.rank: {choice: [16, 32, 64]}}
  metric: final_val_acc     # final_val_acc | grok_rate (max), grok_step | final_val_loss (min)
  mode: max
  num_samples: 20
```

Every problem is reported before anything runs, one line each:
`FILE:LINE: KEY: what is wrong; what is valid` (`SpecError`, exit code 2).
"""

from __future__ import annotations

import difflib
import itertools
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from grokray.config import SECTIONS, TrialConfig, valid_keys
from grokray.errors import ConfigError, GrokrayError, SpecError

TOP_KEYS = {
    "name": "the sweep's name (letters, digits, _ . -)",
    "description": "free text",
    "out": "output root directory or URL",
    "config": "fixed config: mapping of TrialConfig keys",
    "axes": "mapping of dotted config key -> non-empty list",
    "zip": "list of mappings of dotted key -> lists of equal length",
    "seeds": "a count >= 1 or a list of distinct ints",
    "steps": "step budget, int > 0",
    "eval_every": "eval cadence in steps, int > 0",
    "resources": "mapping with cpu (> 0) and gpu (>= 0)",
    "concurrency": "int >= 1 or null",
    "retries": "int >= 0",
    "search": "mapping with space, metric, mode, num_samples",
}
RESOURCE_KEYS = ("cpu", "gpu")
SEARCH_KEYS = ("space", "metric", "mode", "num_samples", "seed")
# search metric -> its natural mode (the trial-level summaries the backend reports)
SEARCH_METRICS = {
    "final_val_acc": "max", "grok_rate": "max", "grok_step": "min", "final_val_loss": "min",
}
DISTRIBUTIONS = {
    "uniform": "[low, high]", "loguniform": "[low, high], low > 0", "randint": "[low, high)",
    "choice": "[value, ...]", "quniform": "[low, high, q]",
}
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class SearchSpec:
    """An Optuna search through Ray Tune's OptunaSearch."""

    space: dict[str, tuple[str, list[Any]]]
    """dotted config key -> (distribution, its arguments)"""
    metric: str
    """trial-level metric, one of SEARCH_METRICS"""
    mode: str
    """min or max"""
    num_samples: int
    """total number of configs to sample (already finished ones count)"""
    seed: int | None = None
    """sampler seed"""


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
    axes: list[tuple[str, ...]]
    """one entry per axis: its dotted key(s); a zip block has several"""
    values: list[list[tuple[Any, ...]]]
    """values[i]: the list of value tuples of axis i"""
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
    configs: list[TrialConfig] = field(default_factory=list, repr=False)
    """the expanded trials (empty for a search)"""

    @property
    def sweep_dir(self) -> str:
        """`out/name`."""
        return self.out.rstrip("/") + "/" + self.name

    def trials(self) -> list[TrialConfig]:
        """The expanded trial configs, one per point of the grid (each with all seeds)."""
        return list(self.configs)


# ----------------------------------------------------------------------------- YAML with lines


class _Lines:
    """YAML key paths -> line numbers (1-based), from the composed node tree."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.lines: dict[tuple[Any, ...], int] = {}
        self.dupes: list[tuple[tuple[Any, ...], int]] = []
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is not None:
            self._walk(node, ())

    def _walk(self, node: yaml.Node, prefix: tuple[Any, ...]) -> None:
        self.lines.setdefault(prefix, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for k, v in node.value:
                key = k.value
                if key in seen:
                    self.dupes.append((prefix + (key,), k.start_mark.line + 1))
                seen.add(key)
                self.lines[prefix + (key,)] = k.start_mark.line + 1
                self._walk(v, prefix + (key,))
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                self._walk(v, prefix + (i,))

    def at(self, *key: Any) -> str:
        """`file:line` of the deepest known prefix of `key`."""
        for n in range(len(key), -1, -1):
            if key[:n] in self.lines:
                return f"{self.path}:{self.lines[key[:n]]}"
        return self.path


class _Problems:
    """Collects one-line problems; `raise_if_any` raises them as one SpecError."""

    def __init__(self, lines: _Lines):
        self.lines = lines
        self.items: list[str] = []

    def add(self, key: tuple[Any, ...], msg: str) -> None:
        name = ".".join(str(k) for k in key) if key else "(top level)"
        self.items.append(f"{self.lines.at(*key)}: {name}: {msg}")

    def raise_if_any(self) -> None:
        if self.items:
            raise SpecError("\n".join(self.items))


def _close(word: str, options: list[str]) -> str:
    match = difflib.get_close_matches(word, options, n=1)
    return f"did you mean '{match[0]}'? " if match else ""


# ----------------------------------------------------------------------------- entry points


def load_spec(path: str | os.PathLike) -> SweepSpec:
    """Read and validate a sweep YAML file (raises SpecError listing every problem)."""
    path = os.fspath(path)
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        raise SpecError(f"{path}: sweep spec not found") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror}") from None
    return parse_spec(text, path)


def parse_spec(text: str, path: str = "<spec>") -> SweepSpec:
    """Validate a sweep spec given as YAML text."""
    try:
        lines = _Lines(path, text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else path
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{where}: not valid YAML: {problem}") from None
    p = _Problems(lines)
    for key, line in lines.dupes:
        p.items.append(f"{path}:{line}: {'.'.join(map(str, key))}: duplicate key")
    if not isinstance(data, dict):
        p.add((), f"a sweep spec is a mapping with keys {', '.join(TOP_KEYS)}")
        p.raise_if_any()
    for k in data:
        if k not in TOP_KEYS:
            p.add((k,), f"unknown key; {_close(str(k), list(TOP_KEYS))}valid: "
                        f"{', '.join(TOP_KEYS)}")
    name = data.get("name")
    if name is None:
        p.add(("name",), "missing; every sweep needs a name (letters, digits, _ . -)")
    elif not isinstance(name, str) or not _NAME.match(name):
        p.add(("name",), f"bad name {name!r}; use letters, digits, _ . -")
    out = data.get("out", "results")
    if not isinstance(out, str) or not out:
        p.add(("out",), f"expected a path or URL string, got {out!r}")
    desc = data.get("description", "")
    seeds = _seeds(data.get("seeds", 1), p)
    steps = _posint(data, "steps", p)
    eval_every = _posint(data, "eval_every", p)
    cpu, gpu = _resources(data.get("resources", {}), p)
    concurrency = data.get("concurrency")
    if concurrency is not None and (not _is_int(concurrency) or concurrency < 1):
        p.add(("concurrency",), f"expected an int >= 1 or null, got {concurrency!r}")
    retries = data.get("retries", 2)
    if not _is_int(retries) or retries < 0:
        p.add(("retries",), f"expected an int >= 0, got {retries!r}")
    base = _base_config(data.get("config", {}), p)
    axes, values = _axes(data.get("axes"), data.get("zip"), p)
    search = _search(data.get("search"), p)
    if search is not None and axes:
        p.add(("search",), "a search samples configs itself; move the axes into search.space "
                           "(as choice) or into config")
    p.raise_if_any()

    overrides: dict[str, Any] = {"seeds": seeds}
    if steps is not None:
        if "steps" in _flat_keys(data.get("config") or {}):
            p.add(("steps",), "set both here and in config; set it once")
        overrides["steps"] = steps
    if eval_every is not None:
        if "eval_every" in _flat_keys(data.get("config") or {}):
            p.add(("eval_every",), "set both here and in config; set it once")
        overrides["eval_every"] = eval_every
    p.raise_if_any()
    try:
        base = base.with_overrides(overrides)
    except ConfigError as exc:
        p.add(("config",), str(exc))
        p.raise_if_any()
    _check_names(base, axes, p)
    _check_axis_values(base, axes, values, p)
    if search is not None:
        _check_search_space(base, search, p)
    p.raise_if_any()
    configs = [] if search is not None else _expand(base, axes, values, p)
    p.raise_if_any()
    return SweepSpec(
        path=path, name=name, out=out, base=base, axes=axes, values=values, seeds=seeds,
        cpu=cpu, gpu=gpu, concurrency=concurrency, retries=retries, search=search,
        description=str(desc or ""), configs=configs,
    )


# ----------------------------------------------------------------------------- pieces


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _posint(data: dict, key: str, p: _Problems) -> int | None:
    v = data.get(key)
    if v is None:
        return None
    if not _is_int(v) or v <= 0:
        p.add((key,), f"expected an int > 0, got {v!r}")
        return None
    return v


def _seeds(v: Any, p: _Problems) -> list[int]:
    if _is_int(v):
        if v < 1:
            p.add(("seeds",), f"a seed count must be >= 1, got {v}")
            return [0]
        return list(range(v))
    if isinstance(v, list) and v and all(_is_int(s) and s >= 0 for s in v):
        if len(set(v)) != len(v):
            p.add(("seeds",), f"seeds must be distinct, got {v}")
        return list(v)
    p.add(("seeds",), f"expected a count >= 1 or a non-empty list of ints >= 0, got {v!r}")
    return [0]


def _resources(v: Any, p: _Problems) -> tuple[float, float]:
    if v is None:
        return 1.0, 0.0
    if not isinstance(v, dict):
        p.add(("resources",), f"expected a mapping with cpu and gpu, got {v!r}")
        return 1.0, 0.0
    for k in v:
        if k not in RESOURCE_KEYS:
            p.add(("resources", k), f"unknown key; valid: {', '.join(RESOURCE_KEYS)}")
    cpu, gpu = v.get("cpu", 1), v.get("gpu", 0)
    if not _is_num(cpu) or cpu <= 0:
        p.add(("resources", "cpu"), f"expected a number > 0, got {cpu!r}")
        cpu = 1
    if not _is_num(gpu) or gpu < 0:
        p.add(("resources", "gpu"), f"expected a number >= 0 (fractions allowed), got {gpu!r}")
        gpu = 0
    elif gpu > 1 and not float(gpu).is_integer():
        p.add(("resources", "gpu"), f"a fraction of a GPU must be <= 1, got {gpu}")
    return float(cpu), float(gpu)


def _flat_keys(d: Any, prefix: str = "") -> list[str]:
    """Dotted keys of a (possibly nested) config mapping."""
    if not isinstance(d, dict):
        return []
    out = []
    for k, v in d.items():
        k = str(k)
        if not prefix and k in SECTIONS and isinstance(v, dict):
            out += _flat_keys(v, k + ".")
        else:
            out.append(prefix + k)
    return out


def _key_problem(key: str) -> str | None:
    """Why a dotted config key is not valid, or None."""
    keys = valid_keys()
    if key in keys:
        return None
    if key in SECTIONS:
        return f"'{key}' is a section; set its fields as {key}.<field>"
    head = key.split(".")[0]
    pool = [k for k in keys if k.startswith(head + ".")] if head in SECTIONS else \
        [k for k in keys if "." not in k] + list(SECTIONS)
    return f"unknown config key; {_close(key, keys)}valid: {', '.join(pool)}"


def _base_config(v: Any, p: _Problems) -> TrialConfig:
    if v is None:
        v = {}
    if not isinstance(v, dict):
        p.add(("config",), f"expected a mapping of config keys, got {v!r}")
        return TrialConfig()
    entries: list[tuple[str, tuple, Any]] = []  # (dotted key, YAML key path, value)
    for k, val in v.items():
        k = str(k)
        if k in SECTIONS and isinstance(val, dict):
            entries += [(f"{k}.{kk}", ("config", k, kk), vv) for kk, vv in val.items()]
        else:
            entries.append((k, ("config", k), val))
    ok: dict[str, Any] = {}
    for key, yaml_key, value in entries:
        if key == "seeds":
            p.add(yaml_key, "set seeds at the top level of the spec, not in config")
            continue
        why = _key_problem(key)
        if why:
            p.add(yaml_key, why)
            continue
        try:
            TrialConfig().with_overrides({key: value})
        except ConfigError as exc:
            p.add(yaml_key, _strip_key(str(exc)))
            continue
        ok[key] = value
    try:
        return TrialConfig().with_overrides(ok)
    except ConfigError as exc:
        p.add(("config",), str(exc))
        return TrialConfig()


def _strip_key(msg: str) -> str:
    return msg.splitlines()[0]


def _axes(
    axes: Any, zips: Any, p: _Problems
) -> tuple[list[tuple[str, ...]], list[list[tuple[Any, ...]]]]:
    keys: list[tuple[str, ...]] = []
    values: list[list[tuple[Any, ...]]] = []
    seen: set[str] = set()
    if axes is not None:
        if not isinstance(axes, dict) or not axes:
            p.add(("axes",), "expected a non-empty mapping of dotted config key -> list "
                             "(leave it out for a single config)")
        else:
            for k, vals in axes.items():
                k = str(k)
                if _axis_ok(("axes", k), k, vals, p, seen):
                    keys.append((k,))
                    values.append([(x,) for x in vals])
    if zips is not None:
        if isinstance(zips, dict):
            zips = [zips]
        if not isinstance(zips, list) or not zips:
            p.add(("zip",), "expected a list of mappings, each dotted key -> list "
                            "(all lists of one mapping the same length)")
            return keys, values
        for i, block in enumerate(zips):
            if not isinstance(block, dict) or not block:
                p.add(("zip", i), "expected a mapping of dotted config key -> list")
                continue
            good = [str(k) for k, vals in block.items()
                    if _axis_ok(("zip", i, k), str(k), vals, p, seen, unique=False)]
            if len(good) != len(block):
                continue
            lengths = {len(block[k]) for k in block}
            if len(lengths) != 1:
                sizes = ", ".join(f"{k}: {len(block[k])}" for k in block)
                p.add(("zip", i), f"lists of a zip block must have equal lengths; got {sizes}")
                continue
            tuples = [tuple(t) for t in zip(*(block[k] for k in block), strict=True)]
            if len({repr(t) for t in tuples}) != len(tuples):
                p.add(("zip", i), "duplicate rows: two positions of this block give the same "
                                  "values")
                continue
            keys.append(tuple(good))
            values.append(tuples)
    return keys, values


def _axis_ok(ykey: tuple, key: str, vals: Any, p: _Problems, seen: set[str],
             unique: bool = True) -> bool:
    why = _key_problem(key)
    if why:
        p.add(ykey, why)
        return False
    if key == "seeds":
        p.add(ykey, "seeds is not an axis; use the top-level seeds key")
        return False
    if key in seen:
        p.add(ykey, "this key is already an axis; each key may vary in one axis only")
        return False
    if not isinstance(vals, list):
        p.add(ykey, f"expected a list of values, got {vals!r}")
        return False
    if not vals:
        p.add(ykey, "empty axis; give at least one value")
        return False
    hashable = [repr(x) for x in vals]
    if unique and len(set(hashable)) != len(hashable):
        p.add(ykey, f"duplicate values in {vals!r}")
        return False
    seen.add(key)
    return True


def _search(v: Any, p: _Problems) -> SearchSpec | None:
    if v is None:
        return None
    if not isinstance(v, dict):
        p.add(("search",), f"expected a mapping with keys {', '.join(SEARCH_KEYS)}")
        return None
    for k in v:
        if k not in SEARCH_KEYS:
            p.add(("search", k), f"unknown key; valid: {', '.join(SEARCH_KEYS)}")
    space_in = v.get("space")
    space: dict[str, tuple[str, list[Any]]] = {}
    if not isinstance(space_in, dict) or not space_in:
        p.add(("search", "space"), "expected a non-empty mapping of dotted config key -> "
                                   f"{{distribution: args}}; distributions: "
                                   f"{', '.join(DISTRIBUTIONS)}")
    else:
        for k, dist in space_in.items():
            k = str(k)
            why = _key_problem(k)
            if why:
                p.add(("search", "space", k), why)
                continue
            if not isinstance(dist, dict) or len(dist) != 1:
                p.add(("search", "space", k), "expected one {distribution: args}; "
                      + ", ".join(f"{d}: {a}" for d, a in DISTRIBUTIONS.items()))
                continue
            (dname, args), = dist.items()
            bad = _dist_problem(str(dname), args)
            if bad:
                p.add(("search", "space", k, dname), bad)
                continue
            space[k] = (str(dname), list(args))
    metric = v.get("metric")
    if metric not in SEARCH_METRICS:
        p.add(("search", "metric"), f"unknown metric {metric!r}; valid: "
                                    f"{', '.join(SEARCH_METRICS)}")
    mode = v.get("mode", SEARCH_METRICS.get(metric, "max"))
    if mode not in ("min", "max"):
        p.add(("search", "mode"), f"expected min or max, got {mode!r}")
    n = v.get("num_samples")
    if not _is_int(n) or n < 1:
        p.add(("search", "num_samples"), f"expected an int >= 1, got {n!r}")
    seed = v.get("seed")
    if seed is not None and not _is_int(seed):
        p.add(("search", "seed"), f"expected an int, got {seed!r}")
    return SearchSpec(space=space, metric=str(metric), mode=str(mode),
                      num_samples=n if _is_int(n) else 1, seed=seed)


def _dist_problem(dname: str, args: Any) -> str | None:
    if dname not in DISTRIBUTIONS:
        return f"unknown distribution; valid: {', '.join(DISTRIBUTIONS)}"
    if not isinstance(args, list) or not args:
        return f"expected a list {DISTRIBUTIONS[dname]}"
    if dname == "choice":
        return None
    want = 3 if dname == "quniform" else 2
    if len(args) != want or not all(_is_num(a) for a in args):
        return f"expected {DISTRIBUTIONS[dname]} (numbers), got {args!r}"
    if args[0] >= args[1]:
        return f"low must be < high, got {args!r}"
    if dname == "loguniform" and args[0] <= 0:
        return f"loguniform needs low > 0, got {args!r}"
    if dname == "randint" and not all(_is_int(a) for a in args):
        return f"randint needs ints, got {args!r}"
    return None


# ----------------------------------------------------------------------------- semantic checks


def _check_names(cfg: TrialConfig, axes: list[tuple[str, ...]], p: _Problems) -> None:
    """Unknown group or unavailable architecture in the fixed config (unless an axis sets it)."""
    varied = {k for keys in axes for k in keys}
    for key, why in (("group", group_problem(cfg.group)), ("arch", arch_problem(cfg.arch))):
        if why and key not in varied:
            p.add(("config", key), why)


def group_problem(name: str) -> str | None:
    """Why `name` is not a group name the groups library accepts, or None (name grammar only)."""
    try:
        from grokray.groups import parse
    except ImportError:  # pragma: no cover - the groups library is part of grokray
        return None
    try:
        parse(name)
    except GrokrayError as exc:
        return str(exc).splitlines()[0]
    return None


def arch_problem(arch: str) -> str | None:
    """Why `arch` is not a registered model family (grokray.models.registry), or None."""
    from grokray.models.registry import families

    have = families()
    if arch in have:
        return None
    return f"architecture {arch!r} is not available in this build; available: {', '.join(have)}"


def _check_axis_values(base: TrialConfig, axes: list[tuple[str, ...]],
                       values: list[list[tuple[Any, ...]]], p: _Problems) -> None:
    """Each axis value on its own: type coercion, choices, groups and archs."""
    for keys, vals in zip(axes, values, strict=False):
        for tup in vals:
            ov = dict(zip(keys, tup, strict=False))
            ykey = ("axes", keys[0]) if len(keys) == 1 else ("zip",)
            try:
                cfg = base.with_overrides(ov)
            except ConfigError as exc:
                p.add(ykey, f"value {tup if len(tup) > 1 else tup[0]!r}: {_strip_key(str(exc))}")
                continue
            for k in ("group", "arch"):
                if k in keys:
                    why = group_problem(cfg.group) if k == "group" else arch_problem(cfg.arch)
                    if why:
                        p.add(ykey, why)


def _check_search_space(base: TrialConfig, search: SearchSpec, p: _Problems) -> None:
    for k, (dname, args) in search.space.items():
        probe = args if dname == "choice" else args[:2]
        for v in probe:
            try:
                base.with_overrides({k: v})
            except ConfigError as exc:
                p.add(("search", "space", k), _strip_key(str(exc)))
                break


def _expand(base: TrialConfig, axes: list[tuple[str, ...]],
            values: list[list[tuple[Any, ...]]], p: _Problems) -> list[TrialConfig]:
    configs: list[TrialConfig] = []
    seen: dict[str, dict[str, Any]] = {}
    for combo in itertools.product(*values) if axes else [()]:
        ov: dict[str, Any] = {}
        for keys, tup in zip(axes, combo, strict=False):
            ov.update(zip(keys, tup, strict=False))
        try:
            cfg = base.with_overrides(ov) if ov else base
        except ConfigError as exc:
            p.add(("axes",), f"combination {ov}: {_strip_key(str(exc))}")
            continue
        h = cfg.config_hash()
        if h in seen:
            p.add(("axes",), f"combinations {seen[h]} and {ov} give the same config "
                             "(an axis value equal to the default of a field that has no effect?)")
            continue
        seen[h] = ov
        configs.append(cfg)
    return configs


def axis_label(keys: tuple[str, ...]) -> str:
    """Printable name of an axis (a zip block's keys joined by '+')."""
    return "+".join(keys)
