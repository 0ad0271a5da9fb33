"""Class-multiplication (Wedderburn) recovery from a predicted multiplication table.

The class sums C_i = sum_{x in C_i} x span the centre of the group algebra, and
C_i C_j = sum_l c[i, j, l] C_l, where c[i, j, l] = #{(x, y) in C_i x C_j : x*y = z} for any
z in C_l. From a predicted table T (T[x, y] = predicted index of x*y) we form the product of class
sums with T and project it orthogonally onto the span of the class sums; its coefficient on C_l is

    c_hat[i, j, l] = #{(x, y) in C_i x C_j : T[x, y] in C_l} / |C_l|.

For the true table this is exactly c[i, j, l]. A coefficient is *recovered* when c_hat equals the
true one exactly (compared as integers: count == c * |C_l|). All k^3 coefficients are counted.
One histogram over the n^2 pairs per seed: cheap at every evaluation, even for A7 and Z_1009.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

__all__ = ["WedderburnRecovery", "class_pair_counts", "class_mult_from_table", "recovery"]

_DENSE_MAX = 1 << 22  # up to this many coefficients (k^3), compare with a dense histogram


@dataclass(frozen=True)
class WedderburnRecovery:
    """How many class multiplication coefficients a predicted table gets exactly right."""

    matched: Tensor
    """long [...]: coefficients equal to the true ones"""
    total: int
    """number of coefficients, k^3"""
    matched_nonzero: Tensor
    """long [...]: of the true non-zero coefficients, how many are recovered"""
    total_nonzero: int
    """number of true non-zero coefficients"""

    @property
    def frac(self) -> Tensor:
        """matched / total, float [...]"""
        return self.matched.to(torch.float64) / self.total


def _codes(table: Tensor, class_of: Tensor, k: int) -> Tensor:
    """Code (i*k + j)*k + l of each pair (classes of x, y, table[x, y]). [b, n, n] -> [b, n^2]."""
    ij = (class_of[:, None] * k + class_of[None, :]) * k  # [n, n]
    return (ij[None] + class_of[table]).reshape(table.shape[0], -1)


def class_pair_counts(table: Tensor, class_of: Tensor, k: int) -> Tensor:
    """N[..., i, j, l] = #{(x, y) in C_i x C_j : table[..., x, y] in C_l}.

    table [..., n, n] -> [..., k, k, k]; dense k^3: for groups with few classes (not Z_1009).
    """
    table = torch.as_tensor(table, dtype=torch.long)
    class_of = torch.as_tensor(class_of, dtype=torch.long, device=table.device)
    n = class_of.shape[0]
    lead = table.shape[:-2]
    T = table.reshape(-1, n, n)  # [B, n, n]
    N = torch.stack([
        torch.bincount(c, minlength=k**3) for c in _codes(T, class_of, k)
    ])  # [B, k^3]
    return N.reshape(*lead, k, k, k)


def class_mult_from_table(table: Tensor, group: Any) -> Tensor:
    """c_hat[..., i, j, l] (float64) of a predicted table; the true table gives group.class_mult.

    Dense k^3 output: for groups with few classes.
    """
    class_of = torch.as_tensor(group.class_of, dtype=torch.long)
    k = len(group.class_sizes)
    N = class_pair_counts(table, class_of, k).to(torch.float64)
    sizes = torch.as_tensor(group.class_sizes, dtype=torch.float64, device=N.device)
    return N / sizes


@dataclass(frozen=True)
class _Truth:
    """Per-group precomputation for `recovery`."""

    base: Tensor
    """long [n, n]: (class(x) * k + class(y)) * k"""
    class_of: Tensor
    """long [n]"""
    codes: Tensor
    """long [u]: the distinct codes of the true table, sorted"""
    counts: Tensor
    """long [u]: how many pairs have each code (= c[i, j, l] * |C_l|)"""


_TRUTH: dict[tuple[str, int, int, str], _Truth] = {}


def _truth(group: Any, device: torch.device) -> _Truth:
    key = (str(group.name), int(group.order), id(group), str(device))
    if key not in _TRUTH:
        table = torch.as_tensor(group.table, dtype=torch.long, device=device)
        class_of = torch.as_tensor(group.class_of, dtype=torch.long, device=device)
        k = len(group.class_sizes)
        base = (class_of[:, None] * k + class_of[None, :]) * k  # [n, n]
        codes, counts = torch.unique((base + class_of[table]).reshape(-1), return_counts=True)
        _TRUTH[key] = _Truth(base=base, class_of=class_of, codes=codes, counts=counts)
    return _TRUTH[key]


def recovery(table: Tensor, group: Any) -> WedderburnRecovery:
    """Count the class multiplication coefficients a predicted table [..., n, n] recovers.

    The true counts come from the group's own table, so no k^3 tensor is needed where k is
    large: on abelian groups (every class a singleton, c[i, j, l] = [l = i*j]) each wrong cell
    breaks exactly two coefficients; with many classes only the codes that occur are compared.
    """
    table = torch.as_tensor(table, dtype=torch.long)
    device = table.device
    n = int(group.order)
    k = len(group.class_sizes)
    truth = _truth(group, device)
    lead = table.shape[:-2]
    T = table.reshape(-1, n, n)
    nnz = int(truth.codes.shape[0])
    if k == n:  # abelian: classes are singletons
        true_table = torch.as_tensor(group.table, dtype=torch.long, device=device)
        wrong = (T != true_table).flatten(1).sum(1)  # [B]
        matched, matched_nz = k**3 - 2 * wrong, nnz - wrong
    else:
        ct_dense = None
        if k**3 <= _DENSE_MAX:
            ct_dense = torch.zeros(k**3, dtype=torch.long, device=device)
            ct_dense[truth.codes] = truth.counts
        bad_all, bad_nz = [], []
        for b in range(T.shape[0]):  # one seed at a time bounds memory (A7: 6.35M pairs)
            pred = (truth.base + truth.class_of[T[b]]).reshape(-1)  # [n^2]
            if ct_dense is not None:
                ct = ct_dense
                cp = torch.bincount(pred, minlength=k**3)
            else:  # compare only the codes present in either table
                p_uniq, p_count = torch.unique(pred, return_counts=True)
                both = torch.cat([p_uniq, truth.codes])
                _, inv = torch.unique(both, return_inverse=True)
                cp = torch.zeros(int(inv.max()) + 1, dtype=torch.long, device=device)
                ct = torch.zeros_like(cp)
                cp[inv[: p_uniq.shape[0]]] = p_count
                ct[inv[p_uniq.shape[0] :]] = truth.counts
            bad = cp != ct
            bad_all.append(bad.sum())
            bad_nz.append((bad & (ct > 0)).sum())
        matched = k**3 - torch.stack(bad_all)
        matched_nz = nnz - torch.stack(bad_nz)
    return WedderburnRecovery(
        matched=matched.to("cpu", torch.long).reshape(lead),
        total=k**3,
        matched_nonzero=matched_nz.to("cpu", torch.long).reshape(lead),
        total_nonzero=nnz,
    )
