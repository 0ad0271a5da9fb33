"""Hand-made groups with known character tables, for the metric tests (independent of
grokray.groups, so the metrics are checked against textbook answers)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class ToyGroup:
    name: str
    order: int
    table: torch.Tensor
    identity: int
    inverse: torch.Tensor
    classes: list[torch.Tensor]
    class_of: torch.Tensor
    class_sizes: list[int]
    class_mult: np.ndarray
    characters: np.ndarray
    irrep_degrees: list[int]


def _from_table(name: str, table: np.ndarray, characters: np.ndarray, order_classes=None):
    n = table.shape[0]
    e = int(np.where((table == np.arange(n)[None, :]).all(axis=1))[0][0])
    inv = np.array([int(np.where(table[a] == e)[0][0]) for a in range(n)])
    # conjugacy classes by brute force: g x g^-1
    class_of = -np.ones(n, dtype=int)
    classes: list[list[int]] = []
    for x in range(n):
        if class_of[x] >= 0:
            continue
        members = sorted({int(table[table[g, x], inv[g]]) for g in range(n)})
        class_of[members] = len(classes)
        classes.append(members)
    if order_classes is not None:  # reorder to match a hand-typed character table
        classes = [classes[class_of[r]] for r in order_classes]
        for i, c in enumerate(classes):
            class_of[c] = i
    k = len(classes)
    # class multiplication by definition, with the first element of C_l as representative
    cm = np.zeros((k, k, k), dtype=int)
    for i, j, l in itertools.product(range(k), range(k), range(k)):
        z = classes[l][0]
        cm[i, j, l] = sum(int(table[x, y] == z) for x in classes[i] for y in classes[j])
    return ToyGroup(
        name=name, order=n, table=torch.as_tensor(table), identity=e,
        inverse=torch.as_tensor(inv), classes=[torch.as_tensor(c) for c in classes],
        class_of=torch.as_tensor(class_of), class_sizes=[len(c) for c in classes],
        class_mult=cm, characters=characters,
        irrep_degrees=[int(round(characters[i, 0].real)) for i in range(characters.shape[0])],
    )


def cyclic(n: int, row_perm: np.ndarray | None = None) -> ToyGroup:
    """Z_n with characters chi_j(x) = exp(2 pi i j x / n) (rows optionally shuffled)."""
    x = np.arange(n)
    table = (x[:, None] + x[None, :]) % n
    chars = np.exp(2j * np.pi * np.outer(x, x) / n)
    if row_perm is not None:
        chars = chars[row_perm]
    return _from_table(f"toyZ{n}", table, chars)


def s3() -> ToyGroup:
    """S3 as permutations of (0, 1, 2); classes: identity, transpositions, 3-cycles."""
    perms = list(itertools.permutations(range(3)))
    idx = {p: i for i, p in enumerate(perms)}
    table = np.array([[idx[tuple(p[q[t]] for t in range(3))] for q in perms] for p in perms])
    chars = np.array([[1, 1, 1], [1, -1, 1], [2, 0, -1]], dtype=complex)
    # representatives: identity (0,1,2), transposition (1,0,2), 3-cycle (1,2,0)
    reps = [idx[(0, 1, 2)], idx[(1, 0, 2)], idx[(1, 2, 0)]]
    return _from_table("toyS3", table, chars, order_classes=reps)


def sign_s3(g: ToyGroup) -> torch.Tensor:
    """Sign of each S3 element, [6]."""
    return torch.tensor([1.0, -1.0, 1.0], dtype=torch.float64)[g.class_of]
