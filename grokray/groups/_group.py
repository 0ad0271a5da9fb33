"""The Group dataclass: a Cayley table plus lazily computed classes and characters."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import torch

from grokray.errors import GroupError
from grokray.groups import _cache
from grokray.groups._characters import abelian_character_table, character_table, degrees_of
from grokray.groups._classes import class_matrix_combination, class_mult, conjugacy_classes

# the full class-multiplication tensor is refused above this many entries (k^3)
MAX_CLASS_MULT_ENTRIES = 50_000_000


@dataclass(frozen=True, eq=False)
class Group:
    """A finite group given by its Cayley table. Element 0 is always the identity."""

    name: str
    """Canonical name, e.g. "S4", "Z2xZ4", "PSL(2,7)"."""
    table: torch.Tensor = field(repr=False)
    """LongTensor [n, n]: table[a, b] = index of a*b."""
    labels: tuple[str, ...] = field(repr=False)
    """Element labels (permutation images, r^k s, matrices, ...), one per index."""
    inverse: torch.Tensor = field(repr=False)
    """LongTensor [n]: index of the inverse of each element."""
    is_abelian: bool
    """Whether table is symmetric."""
    identity: int = 0
    """Index of the identity element (always 0)."""

    @classmethod
    def from_table(cls, name: str, T: np.ndarray, labels: tuple[str, ...]) -> Group:
        """Wrap a Cayley table (identity at index 0); computes the inverses and commutativity."""
        n = len(T)
        if T.shape != (n, n) or len(labels) != n or not np.array_equal(T[0], np.arange(n)):
            raise ValueError(f"{name}: not a Cayley table with identity at index 0")
        rows, cols = np.nonzero(T == 0)
        inverse = np.empty(n, dtype=np.int64)
        inverse[rows] = cols
        return cls(
            name=name,
            table=torch.from_numpy(np.ascontiguousarray(T, dtype=np.int64)),
            labels=tuple(labels),
            inverse=torch.from_numpy(inverse),
            is_abelian=bool(np.array_equal(T, T.T)),
        )

    @property
    def order(self) -> int:
        """Number of elements n."""
        return int(self.table.shape[0])

    def __len__(self) -> int:
        return self.order

    def __repr__(self) -> str:
        return f"Group({self.name!r}, order={self.order}, abelian={self.is_abelian})"

    # --- conjugacy classes -------------------------------------------------------------------

    @cached_property
    def _class_of(self) -> np.ndarray:
        cached = self._load("classes")
        if cached is not None:
            return cached["class_of"]
        c = conjugacy_classes(self.table.numpy(), self.inverse.numpy(), self.is_abelian)
        self._save("classes", class_of=c)
        return c

    @cached_property
    def class_of(self) -> torch.Tensor:
        """LongTensor [n]: class index of each element (classes ordered by smallest element)."""
        return torch.from_numpy(self._class_of.astype(np.int64))

    @cached_property
    def classes(self) -> list[torch.Tensor]:
        """Conjugacy classes as LongTensors of element indices; the identity's class first."""
        order = np.argsort(self._class_of, kind="stable")
        bounds = np.cumsum(np.bincount(self._class_of))[:-1]
        return [torch.from_numpy(c) for c in np.split(order, bounds)]

    @cached_property
    def class_sizes(self) -> list[int]:
        """Size of each class, in class order."""
        return np.bincount(self._class_of).tolist()

    @property
    def num_classes(self) -> int:
        """k: the number of conjugacy classes (= number of irreps)."""
        return len(self.class_sizes)

    @cached_property
    def class_reps(self) -> np.ndarray:
        """int64 [k]: smallest element of each class."""
        reps = np.full(self.num_classes, self.order)
        np.minimum.at(reps, self._class_of, np.arange(self.order))
        return reps

    @cached_property
    def class_mult(self) -> np.ndarray:
        """int64 [k, k, k]: C_i C_j = sum_l c[i, j, l] C_l. Built on first use; refused when
        k^3 exceeds MAX_CLASS_MULT_ENTRIES (use class_matrix(j) for one slice)."""
        k = self.num_classes
        if k**3 > MAX_CLASS_MULT_ENTRIES:
            raise GroupError(
                f"{self.name}: the class multiplication tensor has {k}^3 = {k**3:,} entries "
                f"(~{k**3 * 8 / 2**30:.1f} GiB), above {MAX_CLASS_MULT_ENTRIES:,}; "
                "use Group.class_matrix(j) for one class at a time"
            )
        return class_mult(
            self.table.numpy(), self.inverse.numpy(), self._class_of, self.class_reps
        )

    def class_matrix(self, j: int) -> np.ndarray:
        """int64 [k, k]: M[i, l] = c[j, i, l], the matrix of multiplication by class C_j."""
        w = np.zeros(self.num_classes)
        w[j] = 1.0
        M = class_matrix_combination(
            self.table.numpy(), self.inverse.numpy(), self._class_of, self.class_reps, w
        )
        return np.rint(M).astype(np.int64)

    # --- characters --------------------------------------------------------------------------

    @cached_property
    def characters(self) -> np.ndarray:
        """complex128 [k irreps, k classes]: trivial irrep first, then by degree."""
        cached = self._load("characters")
        if cached is not None:
            return cached["X"]
        if self.is_abelian:
            X = abelian_character_table(self.table.numpy())
            self._save("characters", X=X)
            return X
        X = character_table(
            self.table.numpy(),
            self.inverse.numpy(),
            self._class_of,
            self.class_reps,
            np.asarray(self.class_sizes),
        )
        self._save("characters", X=X)
        return X

    @cached_property
    def irrep_degrees(self) -> list[int]:
        """Degree of each irrep, in the row order of `characters`."""
        return degrees_of(self.characters)

    # --- disk cache --------------------------------------------------------------------------

    def _load(self, part: str) -> dict[str, np.ndarray] | None:
        if self.order < _cache.DISK_MIN_ORDER:
            return None
        return _cache.load(self.name, part)

    def _save(self, part: str, **arrays: np.ndarray) -> None:
        if self.order >= _cache.DISK_MIN_ORDER:
            _cache.save(self.name, part, **arrays)
