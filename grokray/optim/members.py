"""Per-member hyperparameters on a stacked axis: the runs of consecutive members that share them.

A trial's leading axis holds members (config, seed); a config's seeds are consecutive, so the
members that share a learning rate, a decay or a filter setting form a few runs. An optimizer
or a filter updates each run as one slice `[s0:s1]` of every stacked tensor, with that run's
scalars: each member gets exactly the elementwise arithmetic it would get alone.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def runs(keys: Sequence[K]) -> list[tuple[int, int, K]]:
    """(start, stop, key) of each maximal run of equal consecutive keys, in order."""
    out: list[tuple[int, int, K]] = []
    for i, k in enumerate(keys):
        if out and out[-1][2] == k:
            out[-1] = (out[-1][0], i + 1, k)
        else:
            out.append((i, i + 1, k))
    return out


def per_member(value: K | Sequence[K], n: int) -> list[K]:
    """`value` for each of n members: a list as given (length n), anything else repeated."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{len(value)} per-member values for {n} members")
        return list(value)
    return [value] * n  # type: ignore[list-item]
