"""Finite groups: `get_group(name) -> Group`, the families, the name grammar and characters.

    G = get_group("S4")   # case-insensitive, aliases ("C12", "Dic3", "psl2_7"), products "Z2xZ4"

Tables are built vectorized, cached in memory (lru_cache) and, for order >= 256, on disk
(see `grokray.groups._cache`). Classes and characters are computed on first use.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from grokray.groups import _cache
from grokray.groups._names import EXAMPLES, FAMILIES, GRAMMAR, Family, Spec, parse

if TYPE_CHECKING:
    from grokray.groups._group import Group


def __getattr__(name: str) -> Any:
    """`Group` is imported on first use: parsing and checking names needs no torch."""
    if name == "Group":
        from grokray.groups._group import Group

        return Group
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "EXAMPLES", "FAMILIES", "GRAMMAR", "SCALING_GROUPS", "Family", "Group", "Spec", "get_group",
    "parse",
]  # fmt: skip

# 20 groups from order 6 to 2520 (abelian, dihedral, dicyclic, Frobenius, nilpotent, symmetric,
# alternating, simple), for scaling-law sweeps such as FORGE's grok step vs |G|
SCALING_GROUPS: tuple[str, ...] = (
    "S3", "D4", "Q8", "A4", "Dic3", "D6", "S3xZ3", "F21", "S4", "Heis3",
    "A5", "Z97", "S5", "Heis5", "PSL(2,7)", "A6", "PSL(2,11)", "S6", "Z1009", "A7",
)  # fmt: skip


def get_group(name: str | Group, max_order: int | None = None) -> Group:
    """The group called `name`; raises GroupError (grammar, nearest names) on bad input.

    max_order: refuse groups above this order (default $GROKRAY_MAX_GROUP_ORDER or 10000).
    """
    if not isinstance(name, str):  # a Group already
        return name
    return _build(parse(name, cap=max_order).name)


@lru_cache(maxsize=8)
def _build(canonical: str) -> Group:
    import torch

    from grokray.groups._group import Group

    spec = parse(canonical, cap=10**12)  # the cap was checked on the name the user gave
    big = spec.order >= _cache.DISK_MIN_ORDER
    cached = _cache.load(canonical, "table") if big else None
    if cached is not None:
        return Group(
            name=canonical,
            table=torch.from_numpy(cached["table"]).long(),  # int16/int32 on disk
            labels=tuple(cached["labels"].tolist()),
            inverse=torch.from_numpy(cached["inverse"].astype(np.int64)),
            is_abelian=bool(cached["is_abelian"]),
        )
    T, labels = spec.build()
    G = Group.from_table(canonical, T, labels)
    if big:
        dtype = np.int16 if spec.order <= np.iinfo(np.int16).max else np.int32
        _cache.save(
            canonical,
            "table",
            table=T.astype(dtype),
            labels=np.array(labels),
            inverse=G.inverse.numpy(),
            is_abelian=np.array(G.is_abelian),
        )
    return G
