"""Typed trial configuration: `TrialConfig` and its sections.

YAML is only a serialization: `TrialConfig.from_dict(yaml.safe_load(f))`. Every key is checked;
an unknown key raises `ConfigError` naming the valid ones. Values are coerced by the field's type
(so `"1e-3"` from YAML or `--set optim.lr=1e-3` becomes a float), which also makes the canonical
JSON, and so `config_hash()`, independent of how a number was written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin

import yaml

from grokray.errors import ConfigError

# ----------------------------------------------------------------------------------- sections


@dataclass
class ModelConfig:
    """Shape fields shared by the neural models (MLP, FORGE)."""

    d: int = 32
    """embedding dimension (MLP: per operand; FORGE: the fiber dimension)"""
    hidden: int = 128
    """MLP hidden width h (ignored when `matched_budget` is on)"""
    rank: int = 64
    """FORGE DAD rank R (capacity R*d)"""
    act: str = "relu"
    """MLP hidden activation: relu, gelu, tanh, silu, quadratic, identity"""
    matched_budget: bool = False
    """MLP only: choose h so the parameter count matches the FORGE model of this same config"""
    init_scale: float = 1.0
    """multiplier on every initial weight"""


@dataclass
class OptimConfig:
    """Optimizer and learning-rate schedule."""

    name: str = "adamw"
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
    """decoupled weight decay (AdamW) or L2 (SGD); FORGE may split it (see `forge`)"""
    momentum: float = 0.0
    """SGD momentum"""
    warmup_steps: int = 0
    """linear lr warmup from 0 over this many steps"""
    lr_schedule: str = "constant"
    """after warmup: constant, cosine (to 0 at `steps`), or linear (to 0 at `steps`)"""
    batch_size: int | None = None
    """mini-batch size; None: full batch when the train set has at most `max_full_batch` pairs"""
    max_full_batch: int = 131072
    """above this train-set size, and when batch_size is None, mini-batches of this size"""


@dataclass
class ForgeConfig:
    """FORGE (fiber embedding + DAD) specifics; shape (d, rank) lives in `model`.

    Defaults tuned with grokray on the non-abelian ablation (S3, D4, A4, train 0.5, d 32, R 64,
    AdamW lr 1e-3, wd 1): nearest-embedding decoding (`tied_dist`) and a small algebra weight
    (0.03, linear decay to 0 at half the budget) grokked 18/18 seeds within 1,000 steps; `tied`
    dot-product decoding or lambda_alg >= 1 left val acc at 0.2-0.7, and lambda off at 0/6 (S3).
    """

    decode: str = "tied_dist"
    """tied (logits = mu(x, y) . E^T), tied_dist (logits = -|mu(x, y) - E_c|^2, up to a
    class-independent term), or separate (a learned unembedding D [|G|, d] and bias)"""
    inv_hidden: int = 64
    """hidden width of the inverse map g_phi: R^d -> R^d (one hidden layer)"""
    lambda_alg: float = 0.03
    """initial weight of the algebra losses (tuned: see the ForgeConfig docstring)"""
    lambda_schedule: str = "linear"
    """lambda_alg(t): linear (decay to 0 at `lambda_end`), constant, cosine, step, off"""
    lambda_end: float = 0.5
    """fraction of `steps` at which linear/cosine reach 0 and step drops to 0"""
    alg_full_max: int = 64
    """L_assoc exactly over all |G|^3 triples while |G| <= this (O(|G|^2 R^2)); sampled above"""
    alg_samples: int = 1024
    """triples sampled per step above alg_full_max; elements sampled for L_ident/L_inv when
    |G| exceeds this"""
    w_assoc: float = 1.0
    """relative weight of L_assoc"""
    w_ident: float = 1.0
    """relative weight of L_ident"""
    w_inv: float = 1.0
    """relative weight of L_inv"""
    wd_embed: float | None = None
    """weight decay on E (and the unembedding, identity e); None: optim.weight_decay"""
    wd_dad: float | None = None
    """weight decay on U, V, W; None: optim.weight_decay"""
    wd_other: float | None = None
    """weight decay on g_phi; None: optim.weight_decay"""


@dataclass
class GrokfastConfig:
    """Grokfast gradient filters (ironjr/grokfast), applied per seed between backward and step."""

    filter: str = "none"
    """none, ema, or ma"""
    alpha: float = 0.98
    """EMA momentum a in mu <- a*mu + (1-a)*g"""
    lamb: float | None = None
    """amplification lam in g <- g + lam*filtered; None: 2.0 for ema, 5.0 for ma"""
    window: int = 100
    """MA window w (number of past gradients)"""
    warmup: bool = True
    """MA: amplify only once the window is full (the reference behaviour)"""


@dataclass
class TransformerConfig:
    """Decoder-only transformer over the tokens `a b =` (grokray/models/transformer.py)."""

    n_layers: int = 1
    """number of blocks"""
    d_model: int = 128
    """residual stream width"""
    n_heads: int = 4
    """attention heads"""
    d_head: int | None = None
    """width of each head; None: d_model // n_heads (d_model must then be divisible)"""
    d_mlp: int = 512
    """MLP hidden width"""
    act: str = "relu"
    """MLP activation: relu, gelu, tanh, silu, quadratic, identity"""
    norm: str = "layernorm"
    """none, layernorm, rmsnorm (pre-norm blocks and a final norm), spherical (every
    residual-stream vector L2-normalized to unit norm), spherical_bounded (spherical, plus
    unit-norm unembedding rows and logits = scale * cosine similarity)"""
    attention: str = "standard"
    """standard (causal softmax) or uniform (scores ignored: position t averages positions <= t)"""
    logit_scale: float = 5.0
    """spherical_bounded: logits = scale * cosine similarity (the initial value when learned);
    5 groks on Z59 at CPU scale where 10 did not within 1,500 steps (tests/acceptance)"""
    learn_scale: bool = False
    """spherical_bounded: learn the logit scale (a parameter per seed)"""
    norm_eps: float = 1e-5
    """epsilon of layernorm / rmsnorm / the L2 normalizations"""


@dataclass
class RFMConfig:
    """Recursive Feature Machine (refined by the RFM work, issue 7). One step = one iteration."""

    kernel: str = "gaussian"
    """gaussian, laplace, or quadratic"""
    bandwidth: float = 2.5
    """kernel bandwidth L"""
    ridge: float = 0.0
    """ridge regularization of the kernel solve"""
    iters: int = 25
    """RFM iterations"""
    power: float = 0.5
    """M <- AGOP^power"""
    centering: bool = True
    """center the Jacobians over the train points before the AGOP (the reference code does)"""
    baseline: str = "none"
    """none or random_circulant (a fixed random block-circulant M, no learning)"""


@dataclass
class MetricsConfig:
    """Grokking detection and mechanism-metric cadence (issue 8)."""

    grok_threshold: float = 0.99
    """grok step: first eval with val acc >= this"""
    memorize_threshold: float = 0.99
    """memorization step: first eval with train acc >= this"""
    patience: int = 5
    """a seed stops after grokking and holding it for this many evals; 0: never stop early"""
    cheap: list[str] = field(default_factory=list)
    """metrics computed at every eval (names from grokray.metrics)"""
    costly: list[str] = field(default_factory=list)
    """metrics computed every `costly_every` evals"""
    costly_every: int = 10
    """cadence of the costly metrics, in evals"""
    eval_max_pairs: int = 262144
    """evaluate on all pairs up to this many; above, on a fixed per-seed sample of this many
    train and val pairs each"""


SECTIONS: dict[str, type] = {
    "model": ModelConfig,
    "optim": OptimConfig,
    "forge": ForgeConfig,
    "grokfast": GrokfastConfig,
    "transformer": TransformerConfig,
    "rfm": RFMConfig,
    "metrics": MetricsConfig,
}

# fields that change no number: excluded from config_hash (seeds are the row identity instead)
NON_IDENTITY = ("seeds", "label")


@dataclass
class TrialConfig:
    """One trial: a task, a model, an optimizer, and S seeds trained together."""

    group: str = "S4"
    """group name (grokray.groups grammar: S4, D8, Z97, Z2xZ4, A5, ...)"""
    op: str = "group"
    """group (composition) or, on Z_p, a modular op: add, sub, mul, div, ..."""
    arch: str = "mlp"
    """model family: mlp, forge, transformer, rfm"""
    steps: int = 15000
    """step budget (optimizer steps; RFM: iterations come from rfm.iters)"""
    eval_every: int = 100
    """evaluate every this many steps"""
    train_frac: float = 0.5
    """fraction of all pairs used for training"""
    seeds: list[int] = field(default_factory=lambda: [0])
    """model seeds, trained together"""
    data_seed: int | None = None
    """split seed; None: each seed's split uses the seed itself"""
    device: str = "auto"
    """auto, cpu, cuda, cuda:N"""
    dtype: str = "float32"
    """float32 or float64"""
    label: str | None = None
    """arm label for analysis (default: arch, plus +grokfast); does not change numbers"""
    model: ModelConfig = field(default_factory=ModelConfig)
    """shared neural-model shape"""
    optim: OptimConfig = field(default_factory=OptimConfig)
    """optimizer"""
    forge: ForgeConfig = field(default_factory=ForgeConfig)
    """FORGE specifics"""
    grokfast: GrokfastConfig = field(default_factory=GrokfastConfig)
    """Grokfast filter"""
    transformer: TransformerConfig = field(default_factory=TransformerConfig)
    """transformer specifics"""
    rfm: RFMConfig = field(default_factory=RFMConfig)
    """RFM specifics"""
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    """detection thresholds and metric cadence"""

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> TrialConfig:
        """Build from a nested dict (dotted keys also accepted); unknown keys raise ConfigError."""
        d = dict(d or {})
        nested: dict[str, Any] = {}
        dotted: dict[str, Any] = {}
        for k, v in d.items():
            (dotted if "." in str(k) else nested)[k] = v
        cfg = _build(cls, nested, "")
        return cfg.with_overrides(dotted) if dotted else cfg

    def to_dict(self) -> dict[str, Any]:
        """Nested plain dict (round-trips through from_dict)."""
        return dataclasses.asdict(self)

    def with_overrides(self, overrides: dict[str, Any]) -> TrialConfig:
        """New config with dotted-key overrides, e.g. {"model.rank": 32, "group": "S4"}."""
        d = self.to_dict()
        for key, value in overrides.items():
            parts = str(key).split(".")
            if len(parts) == 1:
                if parts[0] in SECTIONS and not isinstance(value, dict):
                    raise ConfigError(f"'{key}' is a section; set its fields as {key}.<field>")
                target, leaf, owner = d, parts[0], TrialConfig
            elif len(parts) == 2 and parts[0] in SECTIONS:
                target, leaf, owner = d[parts[0]], parts[1], SECTIONS[parts[0]]
            else:
                raise _unknown_key(key)
            if leaf not in _field_types(owner):
                raise _unknown_key(key)
            if isinstance(value, dict) and leaf in SECTIONS:
                target[leaf] = {**target[leaf], **value}
            else:
                target[leaf] = value
        return TrialConfig.from_dict(d)

    # ------------------------------------------------------------------ identity

    def canonical(self) -> dict[str, Any]:
        """The config as a dict without the non-identity fields (seeds, label)."""
        d = self.to_dict()
        for k in NON_IDENTITY:
            d.pop(k, None)
        return d

    def canonical_json(self) -> str:
        """Canonical JSON: sorted keys, no whitespace, seeds and label excluded."""
        return json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))

    def config_hash(self) -> str:
        """16 hex chars of SHA-256 of the canonical JSON; the row identity is (hash, seed)."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:16]

    def flat(self) -> dict[str, Any]:
        """Every field flattened: top-level as is, sections prefixed (`model_rank`).

        `seeds` is left out (the trials table has one row per seed); lists become
        comma-joined strings so every value is a Parquet scalar.
        """
        out: dict[str, Any] = {}
        for k, v in self.to_dict().items():
            if k == "seeds":
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
        _validate(self)


def valid_keys() -> list[str]:
    """All dotted keys a config accepts."""
    keys = [k for k in _field_types(TrialConfig) if k not in SECTIONS]
    for s, cls in SECTIONS.items():
        keys += [f"{s}.{k}" for k in _field_types(cls)]
    return keys


def load_yaml(path: str) -> TrialConfig:
    """Read a single-trial YAML file into a TrialConfig."""
    try:
        with open(path) as f:
            d = yaml.safe_load(f) or {}
    except FileNotFoundError as exc:
        raise ConfigError(f"config file not found: {path}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}".splitlines()[0]) from exc
    if not isinstance(d, dict):
        raise ConfigError(f"config file {path} must hold a mapping of config keys")
    return TrialConfig.from_dict(d)


# ----------------------------------------------------------------------------------- validation

ACTIVATIONS = ("relu", "gelu", "tanh", "silu", "quadratic", "identity")
"""Activation names (the keys of grokray.models.mlp.ACTS; config.py stays free of torch)"""

_CHOICES: dict[str, tuple[str, ...]] = {
    "arch": ("mlp", "forge", "transformer", "rfm"),
    "dtype": ("float32", "float64"),
    "model.act": ACTIVATIONS,
    "transformer.act": ACTIVATIONS,
    "optim.name": ("adamw", "sgd"),
    "optim.lr_schedule": ("constant", "cosine", "linear"),
    "forge.decode": ("tied", "tied_dist", "separate"),
    "forge.lambda_schedule": ("linear", "constant", "cosine", "step", "off"),
    "grokfast.filter": ("none", "ema", "ma"),
    "transformer.norm": ("none", "layernorm", "rmsnorm", "spherical", "spherical_bounded"),
    "transformer.attention": ("standard", "uniform"),
    "rfm.kernel": ("gaussian", "laplace", "quadratic"),
    "rfm.baseline": ("none", "random_circulant"),
}
_POSITIVE = ("steps", "eval_every", "model.d", "model.hidden", "model.rank", "forge.inv_hidden",
             "grokfast.window", "transformer.n_layers", "transformer.d_model",
             "transformer.n_heads", "transformer.d_mlp", "rfm.iters", "metrics.costly_every",
             "optim.max_full_batch", "metrics.eval_max_pairs")


def get_key(cfg: TrialConfig, key: str) -> Any:
    """The value of a dotted key (`"model.rank"`) in a config."""
    obj: Any = cfg
    for p in key.split("."):
        obj = getattr(obj, p)
    return obj


def _validate(cfg: TrialConfig) -> None:
    for key, choices in _CHOICES.items():
        v = get_key(cfg, key)
        if v not in choices:
            raise ConfigError(f"bad value {v!r} for {key}; valid: {', '.join(choices)}")
    for key in _POSITIVE:
        if get_key(cfg, key) <= 0:
            raise ConfigError(f"{key} must be > 0, got {get_key(cfg, key)}")
    if not 0.0 < cfg.train_frac < 1.0:
        raise ConfigError(f"train_frac must be in (0, 1), got {cfg.train_frac}")
    if not cfg.seeds:
        raise ConfigError("seeds must list at least one seed")
    if len(set(cfg.seeds)) != len(cfg.seeds):
        raise ConfigError(f"seeds must be distinct, got {cfg.seeds}")
    if cfg.optim.batch_size is not None and cfg.optim.batch_size <= 0:
        raise ConfigError(f"optim.batch_size must be > 0 or null, got {cfg.optim.batch_size}")
    if not (cfg.device == "auto" or cfg.device == "cpu" or cfg.device.startswith("cuda")):
        raise ConfigError(f"bad value {cfg.device!r} for device; valid: auto, cpu, cuda, cuda:N")
    if cfg.metrics.patience < 0:
        raise ConfigError(f"metrics.patience must be >= 0, got {cfg.metrics.patience}")


# ----------------------------------------------------------------------------------- coercion


def _field_types(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def _build(cls: type, d: dict[str, Any], prefix: str) -> Any:
    if not isinstance(d, dict):
        raise ConfigError(f"section '{prefix.rstrip('.')}' must be a mapping, got {d!r}")
    types_ = _field_types(cls)
    kwargs: dict[str, Any] = {}
    for k, v in d.items():
        if k not in types_:
            raise _unknown_key(f"{prefix}{k}")
        if k in SECTIONS and cls is TrialConfig:
            kwargs[k] = _build(SECTIONS[k], v or {}, f"{k}.")
        else:
            kwargs[k] = _coerce(v, types_[k], f"{prefix}{k}")
    return cls(**kwargs)


def _coerce(value: Any, tp: Any, key: str) -> Any:
    """Convert `value` to type `tp` (parsing strings), or raise ConfigError."""
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null", "~")):
            return None
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
