"""The packs of a grid, counted from its axes, not built: what `--dry-run --pack` reports for a
grid too large to build at once.

A pack holds the configs of one `grokray.pack.pack_key` (`packing.pack_groups`). Each axis's
rows fall into classes of rows that give one key: an axis of per-member fields (lr, weight
decay, the Grokfast filter, ...) is one class, a group axis has a class per group order, an
arch axis a class per arch. The grid's configs then fall into one combination of classes per
axis, and the configs of a combination share a key; combinations whose keys are equal pack
together. A class is checked against every combination (each of its rows with the others'
representatives, one axis at a time) and split where a row gives another key there (a group
axis under a metrics axis: metrics keep the group in the key). Cost: a pack_key call per
combination of classes (per shape: as many as grid points only when no axis packs) and per row
beside each combination of the other axes' classes.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from grokray.pack import pack_key
from grokray.sweep.spec_model import SweepSpec


def counted_pack_sizes(spec: SweepSpec, size: int) -> list[int]:
    """The configs of each pack (and 1 for each config alone) that `packing.pack_groups(
    spec.trials(), size)` would give, counted from the axes (grid points, before identities
    merge)."""
    axes = spec.axes

    memo: dict[tuple[tuple[int, int], ...], str | None] = {}

    def key(picks: tuple[tuple[int, int], ...]) -> str | None:
        """pack_key of the base with row j of axis i for each (i, j) in picks."""
        picks = tuple(sorted(picks))
        if picks not in memo:
            ov: dict[str, Any] = {}
            for (i, j) in picks:
                ov.update(zip(axes[i].keys, axes[i].rows[j], strict=True))
            memo[picks] = pack_key(spec.base.with_overrides(ov) if ov else spec.base)
        return memo[picks]

    # classes[i]: lists of row indices of axis i, first with the rows' keys against the base
    classes: list[list[list[int]]] = []
    for i, ax in enumerate(axes):
        by_key: dict[str | None, list[int]] = {}
        for j in range(len(ax)):
            by_key.setdefault(key(((i, j),)), []).append(j)
        classes.append(list(by_key.values()))
    while True:
        split = _split_one(classes, key)
        if split is None:
            break
        i, c, parts = split
        classes[i][c:c + 1] = parts
    members: dict[str | None, int] = {}
    alone = 0
    for combo in itertools.product(*classes):
        k = key(tuple((i, cls[0]) for i, cls in enumerate(combo)))
        n = math.prod(len(cls) for cls in combo)
        if k is None:
            alone += n
        else:
            members[k] = members.get(k, 0) + n
    if size <= 1:
        return [1] * (alone + sum(members.values()))
    sizes = [1] * alone
    for m in members.values():
        sizes += [size] * (m // size) + ([m % size] if m % size else [])
    return sizes


def _split_one(classes: list[list[list[int]]], key: Any
               ) -> tuple[int, int, list[list[int]]] | None:
    """The first class whose rows give different keys beside some combination of the other
    axes' representatives: (axis, class index, its rows split by key); None when none does."""
    for i, mine in enumerate(classes):
        if all(len(cls) == 1 for cls in mine):
            continue  # nothing to split
        others = [cl if a != i else [[]] for a, cl in enumerate(classes)]
        for combo in itertools.product(*others):
            rest = tuple((a, cls[0]) for a, cls in enumerate(combo) if a != i)
            for c, cls in enumerate(mine):
                if len(cls) == 1:
                    continue
                by_key: dict[str | None, list[int]] = {}
                for j in cls:
                    by_key.setdefault(key(rest + ((i, j),)), []).append(j)
                if len(by_key) > 1:
                    return i, c, list(by_key.values())
    return None
