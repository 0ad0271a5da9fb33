"""The smallest faithful real Wedderburn sum of a group, and the capacity an exact FORGE needs.

A FORGE model that generalizes exactly is a bilinear product mu on R^d with mu(E_a, E_b) = E_ab:
the span of the embeddings is a quotient of the real group algebra R[G], i.e. a sum of its real
Wedderburn components, and it separates the elements only if that sum is faithful (docs/
reproduction.md, "FORGE across groups"). An irrep chi with Frobenius-Schur indicator
nu = sum_g chi(g^2) / |G| gives the real component
  nu = 1: M_d(R), real dimension d^2, real rank <= R_R(d);
  nu = 0 (chi and its conjugate together): M_d(C), dimension 2 d^2, rank <= 3 R_R(d);
  nu = -1: M_{d/2}(H), dimension d^2, rank <= 8 R_R(d/2);
with kernel {g : chi(g) = chi(1)}. A sum is faithful when the kernels meet in the identity. The
cheapest faithful sum (fewest rank, then dimension; at most 3 components) bounds what an exact
FORGE needs: d >= its dimension and R >= its real rank, so R*d >= rank * dimension.
R_R(d) is `MATMUL_RANKS` with d = 4 at 49 (Strassen 1969 squared: AlphaEvolve's 48 is complex).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from grokray.cprank.bounds import matmul_rank


def real_matmul_rank(d: int) -> int:
    """Rank of d x d matrix multiplication over R used here (4 -> 49; else the cited table)."""
    return 49 if d == 4 else matmul_rank(d).rank


def components(G) -> list[dict]:
    """The real Wedderburn components of R[G]: name, dim, rank bound, kernel (set of classes)."""
    X = np.asarray(G.characters)  # [k irreps, k classes]
    T = G.table.numpy()
    n = G.order
    sq_class = G.class_of.numpy()[T[np.arange(n), np.arange(n)]]  # class of g^2, per g
    out, seen = [], set()
    for i, chi in enumerate(X):
        if i in seen:
            continue
        d = int(round(chi[0].real))
        nu = int(round(float(np.sum(chi[sq_class]).real) / n))
        kernel = frozenset(int(c) for c in range(X.shape[1]) if abs(chi[c] - chi[0]) < 1e-8)
        if nu == 0:  # pair chi with its complex conjugate
            conj = next(j for j in range(len(X)) if j != i and np.allclose(X[j], np.conj(chi)))
            seen.add(conj)
            name, dim, rank = f"M_{d}(C)", 2 * d * d, 3 * real_matmul_rank(d)
        elif nu == 1:
            name, dim, rank = f"M_{d}(R)", d * d, real_matmul_rank(d)
        else:
            name, dim, rank = f"M_{d // 2}(H)", d * d, 8 * real_matmul_rank(d // 2)
        seen.add(i)
        out.append({"name": name, "dim": dim, "rank": rank, "kernel": kernel})
    return out


def smallest_faithful(G, max_parts: int = 3) -> dict | None:
    """{"components": [...names], "dim": D, "rank": R, "capacity": R * D} or None."""
    comps = [c for c in components(G) if c["kernel"] != frozenset(range(len(G.class_sizes)))]
    best = None
    for r in range(1, max_parts + 1):
        for sub in combinations(comps, r):
            ker = frozenset.intersection(*(c["kernel"] for c in sub))
            if ker != frozenset({0}):
                continue
            rank, dim = sum(c["rank"] for c in sub), sum(c["dim"] for c in sub)
            key = (rank, dim)
            if best is None or key < best[0]:
                best = (key, sub)
    if best is None:
        return None
    (rank, dim), sub = best
    return {"components": [c["name"] for c in sub], "dim": dim, "rank": rank,
            "capacity": rank * dim}
