"""Sweep spec files: a YAML file -> a validated `SweepSpec` (the value: grokray.sweep.spec_model)
-> `TrialConfig`s. Pure: no Ray. `load_spec` / `parse_spec` read one; the rest is validation.

```yaml
name: smoke                 # the sweep's name, a plain slug: results go to OUT/<name>/
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
search:                     # optional Optuna search (grokray.sweep.search), no axes then
  space: {optim.lr: {loguniform: [1.0e-4, 1.0e-2]}, model.rank: {choice: [16, 32, 64]}}
  metric: final_val_acc     # final_val_acc | grok_rate (max), grok_step | final_val_loss (min)
  mode: max
  num_samples: 20
capacity_study: false       # true: the sweep studies FORGE's capacity itself (not in identities)
```

Every problem is reported before anything runs, one line each:
`FILE:LINE: KEY: what is wrong; what is valid` (`SpecError`, exit code 2). The file is bounded
before it is parsed (grokray.yamlsafe: size, nesting, aliases and what they expand to), and so
is what it asks for (`LIMITS`: seeds, grid size): a grid is counted from its axis lengths, never
built to be counted, and each axis value is checked on its own (the grid is built only when a
run needs its configs).
"""

from __future__ import annotations

import difflib
import math
import os
import re
from collections import Counter
from typing import Any

from grokray import yamlsafe
from grokray.config import SECTIONS, TrialConfig, get_key, misread_problems, text_field, valid_keys
from grokray.errors import ConfigError, GrokrayError, SpecError
from grokray.families import families
from grokray.groups import parse as parse_group
from grokray.sweep.search import (
    DISTRIBUTIONS,
    SEARCH_KEYS,
    SEARCH_METRICS,
    SearchSpec,
    parse_distribution,
)
from grokray.sweep.spec_model import Axis, SweepSpec
from grokray.sweep.store import OUT_SCHEMES
from grokray.tasks import op_problem
from grokray.yamlsafe import is_int, is_number

__all__ = ["LIMITS", "Axis", "SearchSpec", "SweepSpec", "load_spec", "parse_spec"]

TOP_KEYS = ("name", "description", "out", "config", "axes", "zip", "seeds", "steps",
            "eval_every", "resources", "concurrency", "retries", "search", "capacity_study")
RESOURCE_KEYS = ("cpu", "gpu")
SPEC = yamlsafe.Kind("sweep spec", "spec", "sweeps/smoke.yaml", 4, SpecError)

LIMITS = {
    "seeds": 1024,              # seeds per trial (trained together)
    "seed_value": 2**31 - 1,    # the largest seed
    "trials": 100_000,          # configs in a grid, or samples of a search
    "seed_runs": 1_000_000,     # configs x seeds
    "steps": 10**9,             # steps and eval_every
    "cpu": 1024, "gpu": 64,     # resources per trial
    "concurrency": 100_000,
    "retries": 100,
    "name": 64,                 # characters of the sweep name
}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


# ----------------------------------------------------------------------------- problems


SPEC_TEXT = {("name",): "name", ("description",): "description", ("out",): "out",
             ("search", "metric"): "search.metric", ("search", "mode"): "search.mode"}
"""the spec's own text fields (its config's come from grokray.config.text_keys)"""


def _text_field(path: tuple[Any, ...]) -> str | None:
    """The text field a YAML path of a spec fills (the spec's own, or a config key's through
    config:, an axis, a zip block or a search choice), None for any other."""
    if path in SPEC_TEXT:
        return SPEC_TEXT[path]
    head, rest = path[0], path[1:]
    if head == "config":
        return text_field(rest)
    if head == "axes" and rest:
        key = rest[0]
    elif head == "zip" and len(rest) >= 2:
        key = rest[1]
    elif head == "search" and len(rest) >= 2 and rest[0] == "space":
        key = rest[1]
    else:
        return None
    return text_field((key,))


class _Problems:
    """Collects one-line problems; `raise_if_any` raises them as one SpecError. A text field
    YAML read as a boolean or number (an unquoted `off`) is said so at once, and other problems
    of the same value are not repeated."""

    def __init__(self, lines: yamlsafe.Lines):
        self.lines = lines
        self.items: list[str] = []
        self.misread: set[str] = set()
        """dotted YAML paths of text fields YAML read as a boolean or number"""

    def add_misread(self) -> None:
        """A line for each text field YAML read as a boolean or number (an unquoted `off`)."""
        self.items += misread_problems(self.lines, _text_field)
        self.misread = {".".join(map(str, p)) for p in self.lines.typed
                        if _text_field(p) is not None}

    def add(self, key: tuple[Any, ...], msg: str) -> None:
        """A problem at YAML path `key` (the line of its deepest known part); a trailing list
        index (one value of an axis) gives the line but is not part of the key shown."""
        if ".".join(map(str, key)) in self.misread:
            return  # said at once: YAML read the value as a boolean or number
        shown = key[:-1] if len(key) > 2 and isinstance(key[-1], int) else key
        name = ".".join(str(k) for k in shown) if shown else "(top level)"
        self.items.append(f"{self.lines.at(*key)}: {name}: {_one_line(msg)}")

    def raise_if_any(self) -> None:
        if self.items:
            raise SpecError("\n".join(dict.fromkeys(self.items)))


def _one_line(msg: str) -> str:
    line = " ".join(str(msg).split())
    return line if len(line) <= 600 else line[:597] + "..."


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0]


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 80 else r[:77] + "..."


def _close(word: str, options: list[str]) -> str:
    match = difflib.get_close_matches(word, options, n=1)
    return f"did you mean '{match[0]}'? " if match else ""


# ----------------------------------------------------------------------------- entry points


def load_spec(path: str | os.PathLike) -> SweepSpec:
    """Read and validate a sweep YAML file (raises SpecError listing every problem)."""
    path = os.fspath(path)
    return _validate(*yamlsafe.read(path, SPEC), path)


def parse_spec(text: str | bytes, path: str = "<spec>") -> SweepSpec:
    """Validate a sweep spec given as YAML text."""
    if isinstance(text, bytes):
        text = yamlsafe.decode(text, path, SPEC)
    return _validate(*yamlsafe.load(text, path, SPEC), path)


def _validate(data: Any, lines: yamlsafe.Lines, path: str) -> SweepSpec:
    """The spec from its YAML values, every problem reported at its line."""
    p = _Problems(lines)
    p.items += lines.dupe_problems()
    if not isinstance(data, dict):
        p.add((), f"a sweep spec is a mapping with keys {', '.join(TOP_KEYS)}; got "
                  f"{type(data).__name__ if data is not None else 'an empty file'}")
    p.raise_if_any()
    p.add_misread()
    for k in data:
        if k not in TOP_KEYS:
            p.add((k,), f"unknown key; {_close(str(k), list(TOP_KEYS))}valid: "
                        f"{', '.join(TOP_KEYS)}")
    name = _name(data, p)
    out = _out(data, p)
    desc = data.get("description", "")
    if desc is not None and not isinstance(desc, str):
        p.add(("description",), f"expected free text, got {_short(desc)}")
    seeds = _seeds(data.get("seeds", 1), p)
    steps = _posint(data, "steps", p)
    eval_every = _posint(data, "eval_every", p)
    cpu, gpu = _resources(data.get("resources", {}), p)
    concurrency = data.get("concurrency")
    if concurrency is not None and (not is_int(concurrency) or not
                                    1 <= concurrency <= LIMITS["concurrency"]):
        p.add(("concurrency",), f"expected an int in 1..{LIMITS['concurrency']:,} or null, "
                                f"got {_short(concurrency)}")
    retries = data.get("retries", 2)
    if not is_int(retries) or not 0 <= retries <= LIMITS["retries"]:
        p.add(("retries",), f"expected an int in 0..{LIMITS['retries']}, got {_short(retries)}")
    capacity_study = data.get("capacity_study", False)
    if not isinstance(capacity_study, bool):
        p.add(("capacity_study",), f"expected true or false, got {_short(capacity_study)}")
    base = _base_config(data.get("config", {}), p)
    axes = _axes(data.get("axes"), data.get("zip"), p)
    search = _search(data.get("search"), p)
    if search is not None and axes:
        p.add(("search",), "a search samples configs itself; move the axes into search.space "
                           "(as choice) or into config")
    _check_size(axes, seeds, search, p)
    p.raise_if_any()

    overrides: dict[str, Any] = {"seeds": seeds}
    config = data.get("config")
    config_keys = {k for k, _, _ in _config_entries(config)} if isinstance(config, dict) else ()
    for key, value in (("steps", steps), ("eval_every", eval_every)):
        if value is None:
            continue
        if key in config_keys:
            p.add((key,), "set both here and in config; set it once")
        overrides[key] = value  # an axis on the same key overrides it per trial
    p.raise_if_any()
    try:
        base = base.with_overrides(overrides)
    except ConfigError as exc:
        p.add(("config",), str(exc))
        p.raise_if_any()
    _check_names(base, axes, p)
    _check_axis_values(base, axes, p)
    _check_ops(base, axes, p)
    if search is not None:
        _check_search_space(base, search, p)
    p.raise_if_any()
    return SweepSpec(
        path=path, name=name, out=out, base=base, axes=axes, seeds=seeds, cpu=cpu, gpu=gpu,
        concurrency=concurrency, retries=retries, search=search, description=str(desc or ""),
        capacity_study=capacity_study,
    )


# ----------------------------------------------------------------------------- pieces


def _name(data: dict, p: _Problems) -> str:
    name = data.get("name")
    rule = (f"a slug: letters, digits, _ and -, starting with a letter or digit, at most "
            f"{LIMITS['name']} characters")
    if name is None:
        p.add(("name",), f"missing; every sweep needs a name ({rule})")
        return ""
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > LIMITS["name"]:
        p.add(("name",), f"bad name {_short(name)}; use {rule}")
        return ""
    return name


def _out(data: dict, p: _Problems) -> str:
    out = data.get("out", "results")
    if not isinstance(out, str) or not out.strip():
        p.add(("out",), f"expected a directory path or URL string, got {_short(out)}")
        return "results"
    if "\x00" in out:
        p.add(("out",), "contains a NUL character; give a directory path or URL")
        return "results"
    m = _SCHEME.match(out)
    if m and m.group(1).lower() not in OUT_SCHEMES:
        p.add(("out",), f"unsupported URL scheme '{m.group(1)}'; valid: a local path or "
                        + ", ".join(f"{s}://" for s in OUT_SCHEMES))
    return out


def _check_size(axes: tuple[Axis, ...], seeds: list[int], search: SearchSpec | None,
                p: _Problems) -> None:
    """Grid points and seed-runs within LIMITS, counted from the axis lengths."""
    n = search.num_samples if search is not None else math.prod(len(ax) for ax in axes)
    if n > LIMITS["trials"]:
        key = ("search", "num_samples") if search is not None else (("axes",) if any(
            ax.where[0][0] == "axes" for ax in axes) else ("zip",))
        what = "samples" if search is not None else "configs"
        p.add(key, f"the sweep has {n:,} {what}; at most {LIMITS['trials']:,} per sweep (shrink "
                   "an axis or split the sweep)")
    elif n * len(seeds) > LIMITS["seed_runs"]:
        p.add(("seeds",), f"{n:,} configs x {len(seeds)} seeds = {n * len(seeds):,} seed-runs; "
                          f"at most {LIMITS['seed_runs']:,} per sweep")


def _posint(data: dict, key: str, p: _Problems) -> int | None:
    v = data.get(key)
    if v is None:
        return None
    if not is_int(v) or not 0 < v <= LIMITS["steps"]:
        p.add((key,), f"expected an int in 1..{LIMITS['steps']:,}, got {_short(v)}")
        return None
    return v


def _seeds(v: Any, p: _Problems) -> list[int]:
    most, top = LIMITS["seeds"], LIMITS["seed_value"]
    if is_int(v):
        if not 1 <= v <= most:
            p.add(("seeds",), f"a seed count must be in 1..{most}, got {v}")
            return [0]
        return list(range(v))
    if isinstance(v, list) and v and all(is_int(s) for s in v):
        if len(v) > most:
            p.add(("seeds",), f"{len(v)} seeds; at most {most} per trial")
            return [0]
        if not all(0 <= s <= top for s in v):
            p.add(("seeds",), f"seeds must be ints in 0..{top}, got {_short(v)}")
            return [0]
        if len(set(v)) != len(v):
            p.add(("seeds",), f"seeds must be distinct, got {_short(v)}")
        return list(v)
    p.add(("seeds",), f"expected a count in 1..{most} or a non-empty list of distinct ints in "
                      f"0..{top}, got {_short(v)}")
    return [0]


def _resources(v: Any, p: _Problems) -> tuple[float, float]:
    if v is None:
        return 1.0, 0.0
    if not isinstance(v, dict):
        p.add(("resources",), f"expected a mapping with cpu and gpu, got {_short(v)}")
        return 1.0, 0.0
    for k in v:
        if k not in RESOURCE_KEYS:
            p.add(("resources", k), f"unknown key; valid: {', '.join(RESOURCE_KEYS)}")
    cpu, gpu = v.get("cpu", 1), v.get("gpu", 0)
    if not is_number(cpu) or not 0 < cpu <= LIMITS["cpu"]:
        p.add(("resources", "cpu"), f"expected a number in (0, {LIMITS['cpu']}], got "
                                    f"{_short(cpu)}")
        cpu = 1
    if not is_number(gpu) or not 0 <= gpu <= LIMITS["gpu"]:
        p.add(("resources", "gpu"), f"expected a number in [0, {LIMITS['gpu']}] (fractions "
                                    f"allowed), got {_short(gpu)}")
        gpu = 0
    elif gpu > 1 and not float(gpu).is_integer():
        p.add(("resources", "gpu"), f"a fraction of a GPU must be <= 1, got {gpu}")
    return float(cpu), float(gpu)


def _config_entries(v: dict) -> list[tuple[str, tuple[Any, ...], Any]]:
    """(dotted key, YAML key path, value) of each setting of a config mapping, nested or
    dotted."""
    entries: list[tuple[str, tuple[Any, ...], Any]] = []
    for k, val in v.items():
        k = str(k)
        if k in SECTIONS and isinstance(val, dict):
            entries += [(f"{k}.{kk}", ("config", k, kk), vv) for kk, vv in val.items()]
        else:
            entries.append((k, ("config", k), val))
    return entries


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
    ok: dict[str, Any] = {}
    for key, yaml_key, value in _config_entries(v):
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
            p.add(yaml_key, _first_line(exc))
            continue
        ok[key] = value
    try:
        return TrialConfig().with_overrides(ok)
    except ConfigError as exc:
        p.add(("config",), str(exc))
        return TrialConfig()


def _axes(axes: Any, zips: Any, p: _Problems) -> tuple[Axis, ...]:
    """Every `axes` key and every zip block as an Axis."""
    out: list[Axis] = []
    seen: set[str] = set()
    if axes is not None:
        if not isinstance(axes, dict) or not axes:
            p.add(("axes",), "expected a non-empty mapping of dotted config key -> list "
                             "(leave it out for a single config)")
        else:
            for k, vals in axes.items():
                k = str(k)
                if _axis_ok(("axes", k), k, vals, p, seen):
                    out.append(Axis((k,), tuple((x,) for x in vals),
                                    tuple(("axes", k, j) for j in range(len(vals)))))
    if zips is not None:
        if isinstance(zips, dict):
            zips = [zips]
        if not isinstance(zips, list) or not zips:
            p.add(("zip",), "expected a list of mappings, each dotted key -> list "
                            "(all lists of one mapping the same length)")
            return tuple(out)
        for i, block in enumerate(zips):
            if not isinstance(block, dict) or not block:
                p.add(("zip", i), "expected a mapping of dotted config key -> list, got "
                                  f"{_short(block)}")
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
            rows = tuple(tuple(t) for t in zip(*(block[k] for k in block), strict=True))
            if len({repr(t) for t in rows}) != len(rows):
                p.add(("zip", i), "duplicate rows: two positions of this block give the same "
                                  "values")
                continue
            out.append(Axis(tuple(good), rows,
                            tuple(("zip", i, good[0], j) for j in range(len(rows)))))
    return tuple(out)


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
        p.add(ykey, f"expected a list of values, got {_short(vals)}")
        return False
    if not vals:
        p.add(ykey, "empty axis; give at least one value")
        return False
    hashable = [repr(x) for x in vals]
    if unique and len(set(hashable)) != len(hashable):
        dup = next(x for x, n in Counter(hashable).items() if n > 1)
        p.add(ykey, f"duplicate value {dup}; give each value once")
        return False
    seen.add(key)
    return True


def _search(v: Any, p: _Problems) -> SearchSpec | None:
    if v is None:
        return None
    if not isinstance(v, dict):
        p.add(("search",), f"expected a mapping with keys {', '.join(SEARCH_KEYS)}, got "
                           f"{_short(v)}")
        return None
    for k in v:
        if k not in SEARCH_KEYS:
            p.add(("search", k), f"unknown key; {_close(str(k), list(SEARCH_KEYS))}valid: "
                                 f"{', '.join(SEARCH_KEYS)}")
    space_in = v.get("space")
    space: dict[str, Any] = {}
    if not isinstance(space_in, dict) or not space_in:
        p.add(("search", "space"), "expected a non-empty mapping of dotted config key -> "
                                   f"{{distribution: args}}; distributions: "
                                   f"{', '.join(DISTRIBUTIONS)}")
    else:
        for k, dist in space_in.items():
            k = str(k)
            why = _key_problem(k)
            if why is None and k == "seeds":
                why = "seeds is not searched; use the top-level seeds key"
            if why:
                p.add(("search", "space", k), why)
                continue
            try:
                space[k] = parse_distribution(dist)
            except ValueError as exc:
                sub = (k, next(iter(dist))) if isinstance(dist, dict) and len(dist) == 1 else (k,)
                p.add(("search", "space", *sub), str(exc))
    metric = v.get("metric")
    if not isinstance(metric, str) or metric not in SEARCH_METRICS:
        p.add(("search", "metric"), f"unknown metric {_short(metric)}; valid: "
                                    f"{', '.join(SEARCH_METRICS)}")
        metric = "final_val_acc"
    mode = v.get("mode", SEARCH_METRICS[metric])
    if mode not in ("min", "max"):
        p.add(("search", "mode"), f"expected min or max, got {_short(mode)}")
    n = v.get("num_samples")
    if not is_int(n) or n < 1:
        p.add(("search", "num_samples"), f"expected an int >= 1, got {_short(n)}")
    seed = v.get("seed")
    if seed is not None and (not is_int(seed) or not 0 <= seed <= LIMITS["seed_value"]):
        p.add(("search", "seed"), f"expected an int in 0..{LIMITS['seed_value']}, got "
                                  f"{_short(seed)}")
    return SearchSpec(space=space, metric=str(metric), mode=str(mode),
                      num_samples=n if is_int(n) and n >= 1 else 1,
                      seed=seed if is_int(seed) else None)


# ----------------------------------------------------------------------------- semantic checks


def _check_names(cfg: TrialConfig, axes: tuple[Axis, ...], p: _Problems) -> None:
    """Unknown group or unavailable architecture in the fixed config (unless an axis sets it)."""
    varied = {k for ax in axes for k in ax.keys}
    for key, why in (("group", group_problem(cfg.group)), ("arch", arch_problem(cfg.arch))):
        if why and key not in varied:
            p.add(("config", key), why)


def group_problem(name: str) -> str | None:
    """Why `name` is not a group name the groups library accepts, or None (name grammar only)."""
    try:
        parse_group(name)
    except GrokrayError as exc:
        return _first_line(exc)
    return None


def arch_problem(arch: str) -> str | None:
    """Why `arch` is not a registered model family (grokray.families), or None."""
    have = families()
    if arch in have:
        return None
    return f"architecture {arch!r} is not available in this build; available: {', '.join(have)}"


def _check_axis_values(base: TrialConfig, axes: tuple[Axis, ...], p: _Problems) -> None:
    """Each axis value on its own (coercion, choices, groups, archs), and no two values of one
    axis that are one value spelled twice. Costs the sum of the axis lengths, not their
    product."""
    for ax in axes:
        seen: dict[str, Any] = {}
        for row, ykey in zip(ax.rows, ax.where, strict=True):
            shown = ax.shown(row)
            try:
                cfg = base.with_overrides(dict(zip(ax.keys, row, strict=True)))
            except ConfigError as exc:
                p.add(ykey, f"value {_short(shown)}: {_first_line(exc)}")
                continue
            checks = (("group", group_problem), ("arch", arch_problem))
            whys = [w for k, check in checks if k in ax.keys and (w := check(get_key(cfg, k)))]
            for why in whys:
                p.add(ykey, why)
            if whys:
                continue
            # the values as the config holds them (coerced, canonical names): two spellings of
            # one value are one; a value without effect for *this* base (forge.* on an MLP) is
            # not flagged, since another axis may change what reads it
            sig = repr(tuple(get_key(cfg, k) for k in ax.keys))
            if sig in seen:
                p.add(ykey, f"value {_short(shown)} gives the same config as {_short(seen[sig])} "
                            "(the same value spelled two ways); give it once")
            seen[sig] = shown


def _check_ops(base: TrialConfig, axes: tuple[Axis, ...], p: _Problems) -> None:
    """Every (group, op) the sweep can produce is a task that exists (Z6 has no `div`)."""

    def setting(key: str) -> tuple[Axis | None, list[tuple[str, tuple[Any, ...]]]]:
        """The axis that sets `key` (or None) and its (value, YAML path) per row."""
        for ax in axes:
            i = ax.index(key)
            if i is not None:
                return ax, [(str(row[i]), y) for row, y in zip(ax.rows, ax.where, strict=True)]
        return None, [(getattr(base, key), ("config", key))]

    (gax, groups), (oax, ops) = setting("group"), setting("op")
    if gax is not None and gax is oax:  # one zip block: its rows
        pairs = [(g, o, y) for (g, y), (o, _) in zip(groups, ops, strict=True)]
    else:  # a problem is reported at the op's value, else the group's, else config.op
        pairs = [(g, o, oy if oax is not None else (gy if gax is not None else ("config", "op")))
                 for g, gy in groups for o, oy in ops]
    told: set[str] = set()
    for g, o, ykey in pairs[:100_000]:
        if group_problem(g):
            continue  # reported on its own
        why = op_problem(g, o)
        if why and why not in told:
            told.add(why)
            p.add(ykey, f"group {g} with op {o}: {why}")


def _check_search_space(base: TrialConfig, search: SearchSpec, p: _Problems) -> None:
    """A few probes of each distribution give a valid config and task (see `probes`)."""
    for k, dist in search.space.items():
        for v in dist.probes():
            try:
                cfg = base.with_overrides({k: v})
            except ConfigError as exc:
                p.add(("search", "space", k), f"value {_short(v)}: {_first_line(exc)}")
                break
            why = group_problem(cfg.group) if k == "group" else None
            why = why or (op_problem(cfg.group, cfg.op) if k in ("group", "op") else None)
            if why:
                p.add(("search", "space", k), f"value {_short(v)}: {why}")
                break
