"""Trial configs for tests: `tiny_cfg(**over)` is a tiny float64 CPU config (S3, 40 steps, two
seeds, small models); `config(base, **over)` is a test file's own base fields with a test's
overrides; `defaults(base, **over)` starts from TrialConfig's defaults. Dotted fields go through
a dict: `tiny_cfg(arch="forge", **{"optim.lr": 0.1})`."""

from __future__ import annotations

from grokray.config import TrialConfig

TINY = {"group": "S3", "steps": 40, "eval_every": 10, "seeds": [0, 1], "dtype": "float64",
        "device": "cpu", "model.d": 8, "model.hidden": 16, "model.rank": 8,
        "forge.inv_hidden": 8, "optim.lr": 1e-2}
"""a config that trains in well under a second, every architecture's width small"""


def config(base: dict, **over) -> TrialConfig:
    """`TrialConfig.from_dict` of `base` updated by `over` (the unset fields: TrialConfig's
    defaults)."""
    return TrialConfig.from_dict({**base, **over})


def tiny_cfg(**over) -> TrialConfig:
    """`TINY` updated by `over`."""
    return config(TINY, **over)


def defaults(base: dict | None = None, **over) -> TrialConfig:
    """TrialConfig's defaults with `base`, then `over`, applied (`with_overrides`)."""
    return TrialConfig().with_overrides({**(base or {}), **over})
