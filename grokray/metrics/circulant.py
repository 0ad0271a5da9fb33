"""Circulant deviation of a p x p block, with the discrete-log reordering for mul and div.

The RFM paper (section 3 of papers.md) measures how close the off-diagonal block C of a learned
feature matrix M = [[A, C], [C^T, A]] (in R^{2p x 2p}) is to a circulant matrix:

    D(C) = (1 / |C|_F^2) * sum_{j=0}^{p-1} Var_i( C[i, (i + j) mod p] )

the variance taken over each wrapped diagonal. D = 0 exactly for a circulant matrix.

For mul and div the zero residue is dropped and rows and columns are put in discrete-log order
(index k <-> g^k for a primitive root g), which turns multiplication mod p into addition mod p-1.
For sub and div the columns are also reflected (b -> -b, or -log b): the feature matrix of a-b
depends on a+b' where b' = -b, i.e. it is a Hankel matrix in the original order.
"""

from __future__ import annotations

from functools import lru_cache

import torch

CIRCULANT_OPS = ("add", "sub", "mul", "div")


def circulant_deviation(C: torch.Tensor) -> float:
    """D(C) of a square block [q, q]: summed wrapped-diagonal variances over |C|_F^2."""
    q = C.shape[0]
    if C.ndim != 2 or C.shape[1] != q:
        raise ValueError(f"circulant_deviation needs a square matrix, got {tuple(C.shape)}")
    C = C.double()
    norm2 = float((C * C).sum())
    if norm2 == 0.0:
        return float("nan")  # undefined for a zero block (e.g. the off-diagonal of M_0 = I)
    return float(_wrapped_diagonals(C).var(dim=1, unbiased=False).sum()) / norm2


def _wrapped_diagonals(C: torch.Tensor) -> torch.Tensor:
    """[q diagonals, q entries]: row j holds C[i, (i + j) mod q] for i = 0..q-1."""
    q = C.shape[0]
    i = torch.arange(q)
    return C[i[None, :], (i[None, :] + i[:, None]) % q]


def is_prime(p: int) -> bool:
    """Trial division; p is small (a modulus)."""
    if p < 2:
        return False
    k = 2
    while k * k <= p:
        if p % k == 0:
            return False
        k += 1
    return True


@lru_cache(maxsize=64)
def primitive_root(p: int) -> int:
    """Smallest generator of the multiplicative group of Z_p (p prime)."""
    if not is_prime(p):
        raise ValueError(f"primitive_root needs a prime, got {p}")
    if p == 2:
        return 1
    phi = p - 1
    factors = [q for q in range(2, phi + 1) if phi % q == 0 and is_prime(q)]
    for g in range(2, p):
        if all(pow(g, phi // q, p) != 1 for q in factors):
            return g
    raise AssertionError("unreachable: every prime has a primitive root")


@lru_cache(maxsize=64)
def _dlog_order(p: int) -> tuple[int, ...]:
    g = primitive_root(p)
    return tuple(pow(g, k, p) for k in range(p - 1))


def dlog_order(p: int) -> torch.Tensor:
    """LongTensor [p-1]: entry k is g^k mod p, the residue sitting at position k in log order."""
    return torch.tensor(_dlog_order(p), dtype=torch.long)


def op_block(C: torch.Tensor, op: str) -> torch.Tensor:
    """The block C [p, p] reordered so that the op's feature structure is circulant.

    add: as is; sub: columns reflected (b -> -b); mul: residue 0 dropped, discrete-log order
    ([p-1, p-1]); div: discrete-log order with columns reflected (log b -> -log b).
    """
    p = C.shape[0]
    if op == "add":
        return C
    if op == "sub":
        return C[:, (-torch.arange(p)) % p]
    if op in ("mul", "div"):
        order = dlog_order(p)
        B = C[order][:, order]
        if op == "div":
            q = p - 1
            B = B[:, (-torch.arange(q)) % q]
        return B
    raise ValueError(f"no circulant structure known for op {op!r}; valid: {CIRCULANT_OPS}")


def has_circulant_structure(op: str, p: int) -> bool:
    """True when `op_block` applies: add/sub on any Z_p, mul/div when p is prime."""
    return op in ("add", "sub") or (op in ("mul", "div") and is_prime(p))


def feature_circulant_deviation(M: torch.Tensor, op: str) -> float:
    """D of the off-diagonal block M[:p, p:] of a feature matrix M [2p, 2p], reordered for op."""
    p = M.shape[0] // 2
    if M.shape != (2 * p, 2 * p):
        raise ValueError(f"feature matrix must be [2p, 2p], got {tuple(M.shape)}")
    return circulant_deviation(op_block(M[:p, p:], op))


def circulant_profile(C: torch.Tensor) -> torch.Tensor:
    """Mean of each wrapped diagonal [q]: the generating vector of the nearest circulant."""
    return _wrapped_diagonals(C.double()).mean(dim=1)
