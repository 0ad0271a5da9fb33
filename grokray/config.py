"""Typed trial configuration: `TrialConfig` and its sections.

YAML is only a serialization: `TrialConfig.from_dict(yaml.safe_load(f))`. Every key is checked;
an unknown key raises `ConfigError` naming the valid ones. Values are coerced by the field's type
(so `"1e-3"` from YAML or `--set optim.lr=1e-3` becomes a float), which also makes the canonical
JSON, and so `config_hash()`, independent of how a number was written.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin

import yaml

from grokray import families as registry
from grokray import fields, yamlsafe
from grokray.errors import ConfigError
from grokray.fields import at_least, choice, positive
from grokray.tasks import canonical_names

# ----------------------------------------------------------------------------------- sections

ACTIVATIONS = ("relu", "gelu", "tanh", "silu", "quadratic", "identity")
"""the valid hidden-layer activation names (config choices); grokray.models.activations holds
the function of each"""


@dataclass
class ModelConfig:
    """Shape fields shared by the neural models (a shared section: MLP, FORGE, transformer)."""

    d: int | Literal["auto"] = positive("auto")
    """embedding dimension (MLP: per operand; FORGE: the fiber dimension). `auto` (the default)
    is resolved when the config is built, and the number is what is hashed and stored: FORGE
    (and the MLP matched to it) max(32, the dimension of the group's smallest faithful real
    Wedderburn sum), every other model 32 (grokray.models.forge.auto_shape)"""
    hidden: int = positive(128)
    """MLP hidden width h (ignored when `matched_budget` is on)"""
    rank: int | Literal["auto"] = positive("auto")
    """FORGE DAD rank R (capacity R*d). `auto` (the default), resolved like `d`: FORGE (and the
    MLP matched to it) max(256, 3.7 x the real-rank bound of that Wedderburn sum, up to a
    multiple of 8), every other model 256: F21 and Heis3, whose faithful irreps are complex of
    degree 3 (M_3(C), multiplication rank <= 69), grok in 10/10 seeds each at R 256, in 9/10 and
    8/10 at R 128 and stay at val acc 0.2-0.5 at R 64 (docs/reproduction.md)"""
    act: str = choice("relu", ACTIVATIONS)
    """MLP hidden activation: relu, gelu, tanh, silu, quadratic, identity"""
    matched_budget: bool = False
    """MLP only: choose h so the parameter count matches the FORGE model of this same config"""
    init_scale: float = 1.0
    """multiplier on every initial weight (MLP, FORGE, transformer)"""


@dataclass
class OptimConfig:
    """Optimizer and learning-rate schedule."""

    name: str = choice("adamw", ("adamw", "sgd"))
    """adamw or sgd"""
    lr: float = 1e-3
    """peak learning rate"""
    beta1: float = 0.9
    """AdamW beta1"""
    beta2: float = 0.98
    """AdamW beta2"""
    eps: float = 1e-8
    """AdamW epsilon"""
    weight_decay: float = 1.0
    """decoupled weight decay (AdamW) or L2 (SGD); a family may split it (FORGE: `forge.wd_*`)"""
    momentum: float = 0.0
    """SGD momentum"""
    warmup_steps: int = 0
    """linear lr warmup from 0 over this many steps"""
    lr_schedule: str = choice("constant", ("constant", "cosine", "linear"))
    """after warmup: constant, cosine (to 0 at `steps`), or linear (to 0 at `steps`)"""
    batch_size: int | None = positive(None)
    """mini-batch size; None: full batch when the train set has at most `max_full_batch` pairs"""
    max_full_batch: int = positive(131072)
    """above this train-set size, and when batch_size is None, mini-batches of this size"""


@dataclass
class GrokfastConfig:
    """Grokfast gradient filters (ironjr/grokfast), applied per seed between backward and step."""

    filter: str = choice("none", ("none", "ema", "ma"))
    """none, ema, or ma"""
    alpha: float = 0.98
    """EMA momentum a in mu <- a*mu + (1-a)*g"""
    lamb: float | None = None
    """amplification lam in g <- g + lam*filtered; None: 2.0 for ema, 5.0 for ma"""
    window: int = positive(100)
    """MA window w (number of past gradients)"""
    warmup: bool = True
    """MA: amplify only once the window is full (the reference behaviour)"""


@dataclass
class MetricsConfig:
    """Grokking detection and mechanism-metric cadence."""

    grok_threshold: float = 0.99
    """grok step: first eval with val acc >= this"""
    memorize_threshold: float = 0.99
    """memorization step: first eval with train acc >= this"""
    patience: int = at_least(5, 0)
    """a seed stops after grokking and holding it for this many evals; 0: never stop early"""
    cheap: list[str] = field(default_factory=list)
    """metrics computed at every eval (names from grokray.metrics)"""
    costly: list[str] = field(default_factory=list)
    """metrics computed every `costly_every` evals"""
    costly_every: int = positive(10)
    """cadence of the costly metrics, in evals"""
    eval_max_pairs: int = positive(262144)
    """evaluate on all pairs up to this many; above, on a fixed per-seed sample of this many
    train and val pairs each"""


@dataclass
class SnapshotConfig:
    """What a trial keeps of its parameters (grokray/snapshots.py). Not part of a trial's
    identity: no number depends on it. `snapshots: off` in YAML (or `snapshots.keep=false`)
    keeps none."""

    keep: bool = True
    """take snapshots (the driver writes them to OUT/<sweep>/snapshots/)"""
    per_decade: int = positive(4)
    """log-spaced snapshot steps per decade of steps (at the first eval at or after each of
    round(10^(k/per_decade))), besides step 0, the memorization step, the grok step and the end"""
    tensors: list[str] = field(default_factory=list)
    """parameter groups to keep (`E`, `W1a`, the transformer's `W_Q`); empty: every parameter"""
    max_mb: float = positive(2.0)
    """size budget per trial (all seeds): above it the log-spaced steps are thinned, keeping
    step 0, memorization, grok and the end. 2 MB: the CPU ledger's ~100 gradient-trained
    trials keep at most ~200 MB (docs/snapshots.md)"""


@dataclass
class ContinuedFromConfig:
    """Where a continued run picks up (grokray/sweep/continuing.py). Set by `grokray sweep` when it
    continues runs censored at a smaller `steps` from their end snapshots; not part of a trial's
    identity, nor of the trials table's config columns (its rows record `continued_from` and
    `continued_from_step` instead). Empty `config_hash`: the run trains from step 0."""

    config_hash: str | None = None
    """identity of the smaller-budget config the seeds continue from (None: none)"""
    step: int = 0
    """the step they continue from (that config's budget)"""
    out: str | None = None
    """the sweep dir (local path or URI) holding its rows, curves and snapshots"""
    files: list[str] = field(default_factory=list)
    """its trials files (base names) holding the rows of these seeds"""
    copied: list[int] = field(default_factory=list)
    """seeds that finished (grokked and held) before that budget: their rows are the larger
    budget's as they are, copied under the new identity without training"""


SHARED_SECTIONS: dict[str, type] = {
    "model": ModelConfig,
    "optim": OptimConfig,
    "grokfast": GrokfastConfig,
    "metrics": MetricsConfig,
    "snapshots": SnapshotConfig,
    "continued_from": ContinuedFromConfig,
}
"""the sections every family may read; each family's own section is declared beside its model
and registered with it (grokray.families)"""


class _Sections(Mapping):
    """Section key -> dataclass: the shared sections, then every registered family's section."""

    def _all(self) -> dict[str, type]:
        return {**SHARED_SECTIONS, **registry.sections()}

    def __getitem__(self, key: str) -> type:
        return self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


SECTIONS: Mapping[str, type] = _Sections()
"""every config section (shared and per family), read live from the registry"""

AUTO = "auto"
"""the value of a `model` shape field resolved from the group and arch when the config is built"""

MODEL_AUTO: dict[str, int] = {"d": 32, "rank": 256}
"""what `auto` means for a family without its own rule (`Family.auto`), and the floor of
FORGE's rule (grokray.models.forge.auto_shape)"""

# fields that change no number: excluded from config_hash (seeds are the row identity instead)
NON_IDENTITY = ("seeds", "label", "checkpoint_every")

SCHEDULE_READS: dict[str, tuple[str, ...]] = {
    "fixed": ("eval_every",),
    "log": ("eval_schedule", "evals_per_decade"),
}
"""the eval-schedule fields a config's identity covers, by `eval_schedule`: a fixed schedule's
identity is what it was before `log` existed (eval_every alone); a log schedule reads no
eval_every"""
_SCHEDULE_FIELDS = ("eval_every", "eval_schedule", "evals_per_decade")


def _family_sections() -> dict[str, Any]:
    return {k: cls() for k, cls in registry.sections().items()}


@dataclass
class TrialConfig:
    """One trial: a task, a model, an optimizer, and S seeds trained together.

    Common fields, the shared sections (model, optim, grokfast, metrics) as fields, and every
    registered family's own section in `families`, read as an attribute (`cfg.forge`).
    """

    group: str = "S4"
    """group name (grokray.groups grammar: S4, D8, Z97, Z2xZ4, A5, ...)"""
    op: str = "group"
    """group (composition) or, on Z_p, a modular op: add, sub, mul, div, ..."""
    arch: str = "mlp"
    """model family: mlp, forge, transformer, rfm, or any registered one"""
    steps: int = positive(15000)
    """step budget (optimizer steps; RFM: iterations come from rfm.iters)"""
    eval_every: int = positive(100)
    """evaluate every this many steps (eval_schedule fixed)"""
    eval_schedule: str = choice("fixed", ("fixed", "log"))
    """fixed: evaluate at step 0, every `eval_every` steps and at the last step; log: at step
    0, at geometric steps (`evals_per_decade` per decade, as openai/grok does) and at the last
    step. `patience` and `costly_every` count evals under either (grokray/evals.py)"""
    evals_per_decade: int = positive(20)
    """eval_schedule log: evals per decade of steps (20: consecutive evals 12% apart)"""
    train_frac: float = 0.5
    """fraction of all pairs used for training"""
    seeds: list[int] = field(default_factory=lambda: [0])
    """model seeds, trained together"""
    data_seed: int | None = None
    """split seed; None: each seed's split uses the seed itself"""
    device: str = "auto"
    """auto, cpu, cuda, cuda:N"""
    dtype: str = choice("float32", ("float32", "float64"))
    """float32 or float64"""
    label: str | None = None
    """arm label for analysis (default: arch, plus +grokfast); does not change numbers"""
    checkpoint_every: float = at_least(600.0, 0.0)
    """seconds of trial time between a sweep trial's checkpoints (grokray/checkpoint/: what a
    trial cut short is restored from); 0: none. Not part of the trial's identity: it changes no
    number"""
    model: ModelConfig = field(default_factory=ModelConfig)
    """shared neural-model shape"""
    optim: OptimConfig = field(default_factory=OptimConfig)
    """optimizer"""
    grokfast: GrokfastConfig = field(default_factory=GrokfastConfig)
    """Grokfast filter"""
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    """detection thresholds and metric cadence"""
    snapshots: SnapshotConfig = field(default_factory=SnapshotConfig)
    """which parameters a trial keeps, and when (not part of its identity)"""
    continued_from: ContinuedFromConfig = field(default_factory=ContinuedFromConfig)
    """where a continued run picks up (set by the sweep plan; not part of its identity)"""
    families: dict[str, Any] = field(default_factory=_family_sections)
    """each registered family's own section by key (forge, transformer, rfm, ...)"""

    def __getattr__(self, name: str) -> Any:
        sections = self.__dict__.get("families")
        if sections is not None and name in sections:
            return sections[name]
        raise AttributeError(f"'TrialConfig' object has no attribute {name!r}")

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> TrialConfig:
        """Build from a nested dict (dotted keys also accepted); unknown keys raise ConfigError."""
        d = dict(d or {})
        nested: dict[str, Any] = {}
        dotted: dict[str, Any] = {}
        for k, v in d.items():
            (dotted if "." in str(k) else nested)[k] = v
        cfg = _build_trial(nested)
        return cfg.with_overrides(dotted) if dotted else cfg

    def to_dict(self) -> dict[str, Any]:
        """Nested plain dict, every section at the top (round-trips through from_dict)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "families":
                out.update({k: dataclasses.asdict(sec) for k, sec in v.items()})
            elif dataclasses.is_dataclass(v):
                out[f.name] = dataclasses.asdict(v)
            else:
                out[f.name] = list(v) if isinstance(v, list) else v
        return out

    def with_overrides(self, overrides: dict[str, Any]) -> TrialConfig:
        """New config with dotted-key overrides, e.g. {"model.rank": 32, "group": "S4"}."""
        d = self.to_dict()
        for name in self._auto:  # still `auto` unless set below: resolved for the new config
            d["model"][name] = AUTO
        sections = dict(SECTIONS)
        for key, value in overrides.items():
            value = _snapshots_off(key, value)
            parts = str(key).split(".")
            if len(parts) == 1:
                if parts[0] in sections and not isinstance(value, dict):
                    raise ConfigError(f"'{key}' is a section; set its fields as {key}.<field>")
                target, leaf = d, parts[0]
                valid = list(_common_types()) + list(sections)
            elif len(parts) == 2 and parts[0] in sections:
                target, leaf = d[parts[0]], parts[1]
                valid = list(_field_types(sections[parts[0]]))
            else:
                raise _unknown_key(key)
            if leaf not in valid:
                raise _unknown_key(key)
            if isinstance(value, dict) and leaf in sections and target is d:
                target[leaf] = {**target[leaf], **value}
            else:
                target[leaf] = value
        return TrialConfig.from_dict(d)

    # ------------------------------------------------------------------ identity

    def canonical(self) -> dict[str, Any]:
        """The effective config: the common fields without the non-identity ones (seeds,
        label), the eval-schedule fields its schedule reads (`SCHEDULE_READS`), and only the
        sections and fields its family reads (`Family.reads`: an MLP's identity does not see
        forge.*, rfm.* or model.rank). Group and op are already canonical (`S4`, `add`)."""
        full = self.to_dict()
        reads = SCHEDULE_READS[self.eval_schedule]
        d = {k: v for k, v in full.items() if k not in SECTIONS and k not in NON_IDENTITY
             and (k not in _SCHEDULE_FIELDS or k in reads)}
        for entry in registry.get_family(self.arch).reads(self):
            section, _, name = entry.partition(".")
            if name:
                d.setdefault(section, {})[name] = full[section][name]
            else:
                d[section] = full[section]
        return d

    def canonical_json(self) -> str:
        """Canonical JSON of `canonical()`: sorted keys, no whitespace (the trials table's
        config_json)."""
        return json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))

    def config_hash(self) -> str:
        """16 hex chars of SHA-256 of the canonical JSON; the row identity is (hash, seed).

        One effective config, one hash, however it is spelled (schema v2; v1 hashed every
        section and the group/op as written: see docs/sweeps.md)."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:16]

    def flat(self) -> dict[str, Any]:
        """Every field flattened: top-level as is, sections prefixed (`model_rank`).

        `seeds` is left out (the trials table has one row per seed); lists become
        comma-joined strings so every value is a Parquet scalar.
        """
        out: dict[str, Any] = {}
        for k, v in self.to_dict().items():
            if k in ("seeds", "continued_from"):  # the rows' continued_from columns say it
                continue
            if isinstance(v, dict):
                for kk, vv in v.items():
                    out[f"{k}_{kk}"] = _scalar(vv)
            else:
                out[k] = _scalar(v)
        return out

    @property
    def arm(self) -> str:
        """Arm name for analysis: `label`, else arch plus `+grokfast` when a filter is on."""
        if self.label:
            return self.label
        return self.arch + ("+grokfast" if self.grokfast.filter != "none" else "")

    def seed_data_seed(self, seed: int) -> int:
        """The split seed used for model seed `seed`."""
        return int(seed if self.data_seed is None else self.data_seed)

    def __post_init__(self) -> None:
        self.group, self.op = canonical_names(self.group, self.op)
        _check_arch(self)
        self._auto = _resolve_auto(self)
        _validate(self)

    @property
    def auto_fields(self) -> tuple[str, ...]:
        """The `model` fields that were `auto` and are resolved for this group and arch
        (`("d", "rank")` at the defaults); `with_overrides` resolves them again."""
        return self._auto


def valid_keys() -> list[str]:
    """All dotted keys a config accepts."""
    keys = list(_common_types())
    for s, cls in SECTIONS.items():
        keys += [f"{s}.{k}" for k in _field_types(cls)]
    return keys


def text_keys() -> frozenset[str]:
    """The dotted keys whose field holds text (`str`, or `str | None`): where a value YAML 1.1
    read as a boolean or number (an unquoted `off`, `yes`, `1.0`) is reported, not turned into
    the text "False" (yamlsafe.Lines.typed). Asked once per typed value of a spec (an axis of
    20,000 numbers asks 40,000 times), so it is kept per set of sections (the registry's
    families as they are now)."""
    return _text_keys(tuple({**SHARED_SECTIONS, **registry.sections()}.items()))


@functools.cache
def _text_keys(sections: tuple[tuple[str, type], ...]) -> frozenset[str]:
    def text(tp: Any) -> bool:
        return tp is str or (get_origin(tp) in (Union, types.UnionType)
                             and {a for a in get_args(tp) if a is not type(None)} == {str})

    keys = [k for k, t in _common_types().items() if text(t)]
    for s, cls in sections:
        keys += [f"{s}.{k}" for k, t in _field_types(cls).items() if text(t)]
    return frozenset(keys)


def text_field(path: tuple[Any, ...]) -> str | None:
    """The dotted config key a YAML path of a config fills when that field holds text."""
    key = ".".join(map(str, path))
    return key if key in text_keys() else None


def misread_problems(lines: yamlsafe.Lines, field_of: Any = text_field) -> list[str]:  # noqa: ANN401
    """One line per text field whose value YAML read as a boolean or number (an unquoted
    `off`): `field_of(path)` names the text field a YAML path fills, None for any other."""
    out = []
    for path in lines.typed:
        field = field_of(path)
        if field is not None:
            out.append(lines.misread(path, field))
    return out


RUN_CONFIG = yamlsafe.Kind("run config", "config", "sweeps/run/mlp_z97.yaml", 3, ConfigError)


def load_yaml(path: str) -> TrialConfig:
    """Read a single-trial YAML file into a TrialConfig; the file is bounded and checked like a
    sweep spec (grokray.yamlsafe), and a key given twice is an error."""
    data, lines = yamlsafe.read(path, RUN_CONFIG)
    if lines.dupes:
        raise ConfigError("\n".join(lines.dupe_problems()))
    misread = misread_problems(lines)
    if misread:
        raise ConfigError("\n".join(misread))
    if data is None:
        return TrialConfig()
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a run config is a mapping of config keys (see "
                          f"{RUN_CONFIG.example}); got {type(data).__name__}")
    return TrialConfig.from_dict(data)


# ----------------------------------------------------------------------------------- validation


def get_key(cfg: TrialConfig, key: str) -> Any:
    """The value of a dotted key (`"model.rank"`) in a config."""
    obj: Any = cfg
    for p in key.split("."):
        obj = getattr(obj, p)
    return obj


def _check_arch(cfg: TrialConfig) -> None:
    fams = registry.families()
    if cfg.arch not in fams:
        raise ConfigError(f"bad value {cfg.arch!r} for arch; valid: {', '.join(fams)}")


def _resolve_auto(cfg: TrialConfig) -> tuple[str, ...]:
    """Replace each `auto` field of `model` by its number for this config (the family's
    `Family.auto`, else `MODEL_AUTO`); returns the names of the fields that were `auto`."""
    names = tuple(k for k in MODEL_AUTO if getattr(cfg.model, k) == AUTO)
    if names:
        fam = registry.get_family(cfg.arch)
        values = {**MODEL_AUTO, **(fam.auto(cfg) if fam.auto is not None else {})}
        for k in names:
            setattr(cfg.model, k, int(values[k]))
    return names


def _validate(cfg: TrialConfig) -> None:
    fields.check(cfg)
    for key in SHARED_SECTIONS:
        fields.check(getattr(cfg, key), f"{key}.")
    for key, sec in cfg.families.items():
        fields.check(sec, f"{key}.")
    if not 0.0 < cfg.train_frac < 1.0:
        raise ConfigError(f"train_frac must be in (0, 1), got {cfg.train_frac}")
    if cfg.eval_schedule == "log" and registry.get_family(cfg.arch).model is None:
        raise ConfigError(f"eval_schedule log is for the gradient-trained families; arch "
                          f"{cfg.arch} evaluates on its own schedule: use eval_schedule fixed")
    if not cfg.seeds:
        raise ConfigError("seeds must list at least one seed")
    if len(set(cfg.seeds)) != len(cfg.seeds):
        raise ConfigError(f"seeds must be distinct, got {cfg.seeds}")
    if not (cfg.device == "auto" or cfg.device == "cpu" or cfg.device.startswith("cuda")):
        raise ConfigError(f"bad value {cfg.device!r} for device; valid: auto, cpu, cuda, cuda:N")


# ----------------------------------------------------------------------------------- coercion


def _field_types(cls: type) -> dict[str, Any]:
    return dict(_hints(cls))


@functools.cache
def _hints(cls: type) -> tuple[tuple[str, Any], ...]:
    """(field name, resolved type) of a dataclass, in field order: typing.get_type_hints
    evaluates every annotation string (milliseconds), and a class's fields do not change."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


def _common_types() -> dict[str, Any]:
    """The common (top-level, non-section) fields of TrialConfig and their types."""
    skip = set(SHARED_SECTIONS) | {"families"}
    return {k: t for k, t in _field_types(TrialConfig).items() if k not in skip}


def _build_trial(d: dict[str, Any]) -> TrialConfig:
    common, sections = _common_types(), dict(SECTIONS)
    kwargs: dict[str, Any] = {}
    families = _family_sections()
    for k, v in d.items():
        v = _snapshots_off(k, v)
        if k in sections:
            sec = _build(sections[k], v or {}, f"{k}.")
            if k in SHARED_SECTIONS:
                kwargs[k] = sec
            else:
                families[k] = sec
        elif k in common:
            kwargs[k] = _coerce(v, common[k], k)
        else:
            raise _unknown_key(k)
    return TrialConfig(**kwargs, families=families)


def _snapshots_off(key: str, value: Any) -> Any:
    """`snapshots: off` (YAML's false, or the word) as the section `{keep: false}`."""
    off = value is False or (isinstance(value, str) and value.lower() in ("off", "false"))
    return {"keep": False} if key == "snapshots" and off else value


def _build(cls: type, d: dict[str, Any], prefix: str) -> Any:
    if not isinstance(d, dict):
        raise ConfigError(f"section '{prefix.rstrip('.')}' must be a mapping, got {d!r}")
    types_ = _field_types(cls)
    kwargs: dict[str, Any] = {}
    for k, v in d.items():
        if k not in types_:
            raise _unknown_key(f"{prefix}{k}")
        kwargs[k] = _coerce(v, types_[k], f"{prefix}{k}")
    return cls(**kwargs)


def _coerce(value: Any, tp: Any, key: str) -> Any:
    """Convert `value` to type `tp` (parsing strings), or raise ConfigError."""
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null", "~")):
            if type(None) in get_args(tp):
                return None
        lits = [x for a in args if get_origin(a) is Literal for x in get_args(a)]
        if isinstance(value, str) and value.strip().lower() in lits:
            return value.strip().lower()
        if lits:
            try:
                return _coerce(value, args[0], key)
            except ConfigError:
                name = getattr(args[0], "__name__", str(args[0]))
                raise ConfigError(f"bad value {value!r} for {key}: expected {name} or "
                                  + " or ".join(repr(x) for x in lits)) from None
        return _coerce(value, args[0], key)
    if origin is Literal:
        if value not in get_args(tp):
            raise ConfigError(f"bad value {value!r} for {key}; valid: {get_args(tp)}")
        return value
    if origin is list:
        (inner,) = get_args(tp)
        if isinstance(value, str):
            s = value.strip()
            value = yaml.safe_load(s) if s.startswith("[") else [x for x in s.split(",") if x]
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, list):
            value = [value]
        return [_coerce(x, inner, key) for x in value]
    try:
        if tp is bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "yes", "on", "1"):
                return True
            if isinstance(value, str) and value.lower() in ("false", "no", "off", "0"):
                return False
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
            raise ValueError
        if tp is int:
            if isinstance(value, bool):
                raise ValueError
            if isinstance(value, str):
                value = float(value.replace("_", "")) if any(c in value for c in ".eE") \
                    else int(value.replace("_", ""))
            if isinstance(value, float):
                if not value.is_integer():
                    raise ValueError
                value = int(value)
            return int(value)
        if tp is float:
            if isinstance(value, bool):
                raise ValueError
            x = float(value.replace("_", "") if isinstance(value, str) else value)
            if math.isnan(x):
                raise ValueError
            return x
        if tp is str:
            if isinstance(value, (dict, list)):
                raise ValueError
            return str(value)
    except (TypeError, ValueError):
        name = getattr(tp, "__name__", str(tp))
        raise ConfigError(f"bad value {value!r} for {key}: expected {name}") from None
    raise ConfigError(f"unsupported type {tp} for {key}")


def _scalar(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return v


def _unknown_key(key: str) -> ConfigError:
    """One line: the bad key, the nearest valid ones, then every valid key."""
    import difflib

    valid = valid_keys()
    leaf = key.rsplit(".", 1)[-1]
    near = [k for k in valid if k.rsplit(".", 1)[-1] == leaf]  # right field, wrong section
    near += [k for k in difflib.get_close_matches(key, valid, n=3, cutoff=0.8) if k not in near]
    hint = f" (did you mean {', '.join(repr(k) for k in near)}?)" if near else ""
    return ConfigError(f"unknown config key '{key}'{hint}; valid: {', '.join(valid)}")
