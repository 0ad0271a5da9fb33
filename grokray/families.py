"""The model-family registry: arch name -> `Family` (its model, how it trains, and its config
section). A leaf (it imports only grokray.errors; its built-in families by name, on first use),
so the config, the trial runner and every family can read it.

A family is declared beside its model, at the end of its own file:

    FAMILY = Family("forge", model=Forge, train="gradient", pack=True, section="forge",
                    config=ForgeConfig)

`train` names a training protocol (`TRAINING`; grokray.trial resolves it to its trainer, so a
model file never imports one) or is a function of the family's own (RFM's kernel fit,
grokray/rfm/family.py; the Hamiltonian step maps, grokray/hamiltonian/family.py).

A family is registered by one line in `BUILTIN` (arch name -> module, imported on first use),
or at run time by `register(FAMILY)` (e.g. a family defined in a test or a notebook). The
config reads each registered family's section (`forge.lambda_alg`), and a trial's identity
covers only the sections its family reads (`Family.reads`): common fields, the shared sections
it names, its own.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grokray.errors import ConfigError

BUILTIN: dict[str, str] = {
    "mlp": "grokray.models.mlp",
    "forge": "grokray.models.forge",
    "transformer": "grokray.models.transformer",
    "rfm": "grokray.rfm.family",
    "hamiltonian": "grokray.hamiltonian.family",
}
"""arch name -> module that defines `FAMILY` (one line per built-in family)"""

TRAINING = ("gradient",)
"""the training protocols a family may name (`Family.train`): `gradient`, the seed-batched
gradient trainer (grokray.trainer) of a `model` (grokray.models.protocol.Model)"""

SHARED = ("model", "optim", "grokfast", "metrics")
"""the shared config sections (declared in grokray.config); a family names those it reads,
whole (`optim`) or field by field (`model.d`)"""


@dataclass(frozen=True)
class Family:
    """One model family: how its trials train, and which config it reads."""

    name: str
    """the arch name (`arch: forge`)"""
    train: str | Callable[[Any], None] = "gradient"
    """how a trial trains: a training protocol of `TRAINING` (`gradient`: the gradient trainer
    of `model`), or a function of its own, fn(run: grokray.trialrun.TrialRun), recording each
    seed's outcome and curve rows in `run`"""
    model: type | None = None
    """the seed-batched model class (grokray.models.protocol.Model) for gradient training"""
    pack: bool = False
    """whether several trials of one shape train as one stack of members (grokray.pack; the
    gradient protocol's packs); False: the family's trials run one at a time"""
    section: str | None = None
    """the key of its own config section (`forge`), or None"""
    config: type | None = None
    """the dataclass of that section (a docstring per field; choices/bounds as field metadata)"""
    shared: tuple[str, ...] = SHARED
    """the shared sections (`optim`) or fields (`model.d`) its trials read"""
    extra: Callable[[Any], tuple[str, ...]] | None = None
    """further sections or fields a config of this family reads, by config (e.g. the MLP's
    matched budget reads `model.rank` and `forge`); None: none"""

    section_reads: Callable[[Any], tuple[str, ...]] | None = None
    """which fields of its own section a config's identity covers, fn(cfg) -> ("forge.f", ...)
    (a field added later may enter only when set, so older configs keep their hash); None: the
    whole section"""

    auto: Callable[[Any], dict[str, int]] | None = None
    """what the `auto` shape fields of `model` (`d`, `rank`) become for a config of this family,
    fn(cfg) -> {"d": ..., "rank": ...}; None: grokray.config.MODEL_AUTO (32, 256)"""

    def reads(self, cfg: Any) -> tuple[str, ...]:
        """Every section or `section.field` a trial of this family reads (its identity covers
        exactly these)."""
        more = self.extra(cfg) if self.extra is not None else ()
        return tuple(dict.fromkeys((*self.shared, *self.own_reads(cfg), *more)))

    def own_reads(self, cfg: Any) -> tuple[str, ...]:
        """What of its own section a config reads: `section_reads`, else the whole section."""
        if self.section is None:
            return ()
        return self.section_reads(cfg) if self.section_reads is not None else (self.section,)


_FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add (or replace) a family; its section becomes a config section. Returns it."""
    if family.section is not None and family.config is None:
        raise ValueError(f"family {family.name!r}: section {family.section!r} needs its config")
    if isinstance(family.train, str) and family.train not in TRAINING:
        raise ValueError(f"family {family.name!r}: unknown training protocol "
                         f"{family.train!r}; valid: {', '.join(TRAINING)}, or a function")
    if family.train == "gradient" and family.model is None:
        raise ValueError(f"family {family.name!r}: gradient training needs its `model`")
    if family.pack and not isinstance(family.train, str):
        raise ValueError(f"family {family.name!r}: only a training protocol packs trials")
    _FAMILIES[family.name] = family
    return family


def _load_builtins() -> None:
    for name, module in BUILTIN.items():
        if name not in _FAMILIES:
            register(importlib.import_module(module).FAMILY)


def families() -> dict[str, Family]:
    """Every registered family, the built-ins first."""
    _load_builtins()
    return dict(_FAMILIES)


def get_family(arch: str) -> Family:
    """The family registered under `arch`; ConfigError listing the valid names otherwise."""
    if arch not in _FAMILIES:
        _load_builtins()
    if arch not in _FAMILIES:
        raise ConfigError(f"unknown arch {arch!r}; valid: {', '.join(families())}")
    return _FAMILIES[arch]


def sections() -> dict[str, type]:
    """Family section key -> its dataclass, for every registered family that has one."""
    return {f.section: f.config for f in families().values() if f.section and f.config}
