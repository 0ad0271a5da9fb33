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
cheapest faithful sum (fewest rank, then dimension) bounds what an exact
FORGE needs: d >= its dimension and R >= its real rank, so R*d >= rank * dimension.
R_R(d) is `MATMUL_RANKS` with d = 4 at 49 (Strassen 1969 squared: AlphaEvolve's 48 is complex).
"""

from __future__ import annotations

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
    key = {tuple(np.round(row, 6)): j for j, row in enumerate(X)}
    out, seen = [], set()
    for i, chi in enumerate(X):
        if i in seen:
            continue
        d = int(round(chi[0].real))
        nu = int(round(float(np.sum(chi[sq_class]).real) / n))
        kernel = frozenset(int(c) for c in range(X.shape[1]) if abs(chi[c] - chi[0]) < 1e-8)
        if nu == 0:  # pair chi with its complex conjugate
            conj = key[tuple(np.round(np.conj(chi), 6))]
            seen.add(conj)
            name, dim, rank = f"M_{d}(C)", 2 * d * d, 3 * real_matmul_rank(d)
        elif nu == 1:
            name, dim, rank = f"M_{d}(R)", d * d, real_matmul_rank(d)
        else:
            name, dim, rank = f"M_{d // 2}(H)", d * d, 8 * real_matmul_rank(d // 2)
        seen.add(i)
        out.append({"name": name, "dim": dim, "rank": rank, "kernel": kernel})
    return out


def smallest_faithful(G, max_parts: int | None = None) -> dict | None:
    """{"components": [...names], "dim": D, "rank": R, "capacity": R * D}, or None when no sum
    of at most `max_parts` components (None: any number) is faithful.

    The cheapest by (rank, dim), by depth-first branch and bound over the components sorted by
    (rank, dim): a branch stops once its rank and dimension reach the best found, and a component
    that does not shrink the kernel met so far is never added (it cannot be in a cheapest sum)."""
    classes = frozenset(range(len(G.class_sizes)))
    comps = sorted((c for c in components(G) if c["kernel"] != classes),
                   key=lambda c: (c["rank"], c["dim"]))
    limit = max_parts or len(comps)
    best: list = [None]  # ((rank, dim), chosen components)

    def walk(start: int, kernel: frozenset, rank: int, dim: int, chosen: tuple) -> None:
        if kernel == frozenset({0}):
            if best[0] is None or (rank, dim) < best[0][0]:
                best[0] = ((rank, dim), chosen)
            return
        if len(chosen) == limit:
            return
        for i in range(start, len(comps)):
            c = comps[i]
            key = (rank + c["rank"], dim + c["dim"])
            if best[0] is not None and key >= best[0][0]:
                if rank + c["rank"] >= best[0][0][0]:
                    break  # sorted by rank: every later component costs at least as much
                continue
            meet = kernel & c["kernel"]
            if meet != kernel:
                walk(i + 1, meet, *key, (*chosen, c))

    walk(0, classes, 0, 0, ())
    if best[0] is None:
        return None
    (rank, dim), sub = best[0]
    return {"components": [c["name"] for c in sub], "dim": dim, "rank": rank,
            "capacity": rank * dim}
