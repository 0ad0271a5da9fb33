"""Cayley tables of the group families, built vectorized (no Python loop over |G|^2 pairs).

Every builder returns `(table, labels)`: `table` an int64 array [n, n] with
`table[a, b] = index of a*b`, and one label per element. The identity is always index 0.
Permutations compose right to left: `(a*b)(x) = a(b(x))`.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

Table = tuple[np.ndarray, tuple[str, ...]]


def cyclic(n: int) -> Table:
    """Z_n: integers mod n under addition."""
    x = np.arange(n)
    T = (x[:, None] + x[None, :]) % n  # [n, n]
    return T, tuple(str(i) for i in range(n))


def dihedral(n: int) -> Table:
    """D_n of order 2n: r^k s^e, with s r s = r^-1. Index e*n + k."""
    k = np.tile(np.arange(n), 2)  # [2n] rotation exponent
    e = np.repeat(np.arange(2), n)  # [2n] reflection bit
    # r^k1 s^e1 r^k2 s^e2 = r^(k1 + (-1)^e1 k2) s^(e1 + e2)
    sign = 1 - 2 * e[:, None]
    K = (k[:, None] + sign * k[None, :]) % n
    E = e[:, None] ^ e[None, :]
    labels = tuple(_word(("r", ki), ("s", ei)) for ki, ei in zip(k, e, strict=True))
    return E * n + K, labels


def dicyclic(m: int) -> Table:
    """Dic_m of order 4m: a^k x^e with a^(2m) = 1, x^2 = a^m, x a x^-1 = a^-1. Index e*2m + k."""
    n = 2 * m
    k = np.tile(np.arange(n), 2)
    e = np.repeat(np.arange(2), n)
    sign = 1 - 2 * e[:, None]
    both = e[:, None] & e[None, :]  # x a^k2 x = a^-k2 x^2 = a^(m - k2)
    K = (k[:, None] + sign * k[None, :] + m * both) % n
    E = e[:, None] ^ e[None, :]
    labels = tuple(_word(("a", ki), ("x", ei)) for ki, ei in zip(k, e, strict=True))
    return E * n + K, labels


def heisenberg(p: int) -> Table:
    """Upper unitriangular 3x3 matrices mod p, [[1,a,c],[0,1,b],[0,0,1]]: order p^3."""
    idx = np.arange(p**3)
    a, b, c = idx // (p * p), (idx // p) % p, idx % p
    A = (a[:, None] + a[None, :]) % p
    B = (b[:, None] + b[None, :]) % p
    C = (c[:, None] + c[None, :] + a[:, None] * b[None, :]) % p
    labels = tuple(f"({ai},{bi},{ci})" for ai, bi, ci in zip(a, b, c, strict=True))
    return (A * p + B) * p + C, labels


def frobenius(p: int, q: int) -> Table:
    """Z_p semidirect Z_q (q | p-1), y acting on x by multiplication by u^y, u of order q."""
    u = pow(primitive_root(p), (p - 1) // q, p)
    upow = np.array([pow(u, j, p) for j in range(q)])  # [q]
    idx = np.arange(p * q)
    y, x = idx // p, idx % p
    # (x1, y1)(x2, y2) = (x1 + u^y1 x2, y1 + y2)
    X = (x[:, None] + upow[y][:, None] * x[None, :]) % p
    Y = (y[:, None] + y[None, :]) % q
    labels = tuple(f"({xi},{yi})" for xi, yi in zip(x, y, strict=True))
    return Y * p + X, labels


def symmetric(n: int) -> Table:
    """S_n: all permutations of n points, in lexicographic order (identity first)."""
    P = np.array(list(itertools.permutations(range(n))), dtype=np.int64).reshape(-1, n)
    cycle = np.roll(np.arange(n), -1)  # (0 1 ... n-1)
    swap = np.arange(n)
    swap[[0, 1]] = swap[[1, 0]]  # (0 1)
    return _perm_table(P, np.stack([swap, cycle]))


def alternating(n: int) -> Table:
    """A_n: the even permutations of n points, in lexicographic order."""
    P = np.array(list(itertools.permutations(range(n))), dtype=np.int64).reshape(-1, n)
    inversions = (P[:, :, None] > P[:, None, :]) & np.triu(np.ones((n, n), bool), 1)
    P = P[inversions.sum(axis=(1, 2)) % 2 == 0]
    three = np.arange(n)
    three[:3] = [1, 2, 0]  # (0 1 2)
    cycle = np.arange(n)  # (0 1 ... n-1) for odd n, (1 2 ... n-1) for even n: both even
    start = n % 2 == 0
    cycle[start:] = np.roll(cycle[start:], -1)
    return _perm_table(P, np.stack([three, cycle]))


def psl2(p: int) -> Table:
    """PSL(2, p) for a prime p: 2x2 matrices of determinant 1 mod p, modulo +-I."""
    v = np.arange(p**4)
    M = np.stack([v // p**3, (v // p**2) % p, (v // p) % p, v % p], axis=1)  # [p^4, 4] a,b,c,d
    M = M[(M[:, 0] * M[:, 3] - M[:, 1] * M[:, 2]) % p == 1]
    M = M[_mat_code(M, p) <= _mat_code((-M) % p, p)]  # keep the smaller code of M, -M
    code = _mat_code(M, p)
    ident = _mat_code(np.array([[1, 0, 0, 1]]), p)[0]
    order = np.argsort(np.where(code == ident, -1, code), kind="stable")  # identity first
    M, code = M[order], code[order]
    sort = np.argsort(code)
    gens = np.array([[1, 1, 0, 1], [0, p - 1, 1, 0]])  # [[1,1],[0,1]] and [[0,-1],[1,0]]
    L = np.empty((len(gens), len(M)), dtype=np.int64)
    for s, (a, b, c, d) in enumerate(gens):
        prod = np.stack(  # gen @ M for every M: [n, 4]
            [a * M[:, 0] + b * M[:, 2], a * M[:, 1] + b * M[:, 3],
             c * M[:, 0] + d * M[:, 2], c * M[:, 1] + d * M[:, 3]],
            axis=1,
        ) % p  # fmt: skip
        key = np.minimum(_mat_code(prod, p), _mat_code((-prod) % p, p))
        L[s] = sort[np.searchsorted(code, key, sorter=sort)]
    T = table_from_left_mult(L)
    labels = tuple(f"[[{a},{b}],[{c},{d}]]" for a, b, c, d in M)
    return T, labels


def direct_product(*factors: Table) -> Table:
    """G1 x G2 x ...: index of (g1, g2) is g1 * |G2| + g2 (identity stays 0)."""
    T, labels = factors[0]
    for T2, labels2 in factors[1:]:
        n1, n2 = len(T), len(T2)
        T = (T[:, None, :, None] * n2 + T2[None, :, None, :]).reshape(n1 * n2, n1 * n2)
        labels = tuple(f"{_strip(l1)},{_strip(l2)}" for l1 in labels for l2 in labels2)
    if len(factors) > 1:
        labels = tuple(f"({label})" for label in labels)
    return T, labels


def primitive_root(p: int) -> int:
    """The smallest generator of the multiplicative group mod a prime p."""
    if p == 2:
        return 1
    factors = [f for f in range(2, p) if (p - 1) % f == 0 and is_prime(f)]
    for g in range(2, p):
        if all(pow(g, (p - 1) // f, p) != 1 for f in factors):
            return g
    raise ValueError(f"{p} is not prime")


def is_prime(n: int) -> bool:
    return n >= 2 and all(n % f for f in range(2, math.isqrt(n) + 1))


def table_from_left_mult(L: np.ndarray) -> np.ndarray:
    """Cayley table from left multiplication by generators: L [g, n], L[s, x] = gen_s * x.

    Breadth-first over the Cayley graph from the identity (index 0): the row of s*a is L_s
    applied to the row of a, since (s a) b = s (a b). One gather per BFS layer and generator,
    each from a small array, instead of composing |G|^2 pairs.
    """
    g, n = L.shape
    T = np.empty((n, n), dtype=np.int64)
    T[0] = np.arange(n)
    seen = np.zeros(n, dtype=bool)
    seen[0] = True
    frontier = np.array([0])
    while len(frontier):
        layer = []
        for s in range(g):
            new, first = np.unique(L[s, frontier], return_index=True)
            keep = ~seen[new]
            new, parent = new[keep], frontier[first[keep]]
            seen[new] = True
            T[new] = L[s][T[parent]]
            layer.append(new)
        frontier = np.concatenate(layer)
    if not seen.all():
        raise RuntimeError("the generators do not generate the group")
    return T


def _perm_table(P: np.ndarray, gens: np.ndarray) -> Table:
    """Cayley table of the permutations P [n, m] (a group), generated by gens [g, m]."""
    n, m = P.shape
    weights = m ** np.arange(m - 1, -1, -1)  # [m] base-m code of a permutation
    lookup = np.full(m**m, -1, dtype=np.int64)
    lookup[P @ weights] = np.arange(n)
    # (s*x)(i) = s(x(i)): L[s, x] = index of gens[s][P[x]]
    L = lookup[gens[:, P] @ weights]  # [g, n]
    labels = tuple("(" + " ".join(str(x) for x in row) + ")" for row in P)
    return table_from_left_mult(L), labels


def _mat_code(M: np.ndarray, p: int) -> np.ndarray:
    return ((M[..., 0] * p + M[..., 1]) * p + M[..., 2]) * p + M[..., 3]


def _word(*parts: tuple[str, int]) -> str:
    out = "".join(s if k == 1 else f"{s}{k}" for s, k in parts if k)
    return out or "e"


def _strip(label: str) -> str:
    return label[1:-1] if label.startswith("(") and label.endswith(")") and "," in label else label
