"""Config-field metadata: choices and bounds declared on the field itself, checked in one place.

A section is a plain dataclass with a docstring per field. A field with a fixed set of values or
a bound says so in its metadata:

    decode: str = choice("tied_dist", ("tied", "tied_dist", "separate"))
    rank: int = positive(64)
    patience: int = at_least(5, 0)

`check(obj, prefix)` validates every field of a section (and the top-level config) against that
metadata, raising one `ConfigError` line naming the key and what is valid. Torch-free.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from grokray.errors import ConfigError


def choice(default: Any, choices: Sequence[Any]) -> Any:
    """A field whose value must be one of `choices`."""
    return dataclasses.field(default=default, metadata={"choices": tuple(choices)})


def positive(default: Any) -> Any:
    """A number that must be > 0 (None allowed when the default is None)."""
    return dataclasses.field(default=default, metadata={"gt": 0})


def at_least(default: Any, lo: float) -> Any:
    """A number that must be >= lo (None allowed when the default is None)."""
    return dataclasses.field(default=default, metadata={"ge": lo})


def check(obj: Any, prefix: str = "") -> None:
    """Raise ConfigError for the first field of dataclass `obj` outside its choices or bounds."""
    for f in dataclasses.fields(obj):
        v, key, meta = getattr(obj, f.name), f"{prefix}{f.name}", f.metadata
        if "choices" in meta and v not in meta["choices"]:
            raise ConfigError(f"bad value {v!r} for {key}; valid: "
                              + ", ".join(str(c) for c in meta["choices"]))
        if v is None:
            continue
        if "gt" in meta and not v > meta["gt"]:
            raise ConfigError(f"{key} must be > {meta['gt']}"
                              + (" or null" if f.default is None else "") + f", got {v}")
        if "ge" in meta and not v >= meta["ge"]:
            raise ConfigError(f"{key} must be >= {meta['ge']}, got {v}")
