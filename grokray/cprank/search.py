"""Numerical CP decompositions of T_G at decreasing rank (tensorly's ALS with random restarts).

`mult_tensor(table)` builds T_G [n, n, n] from a Cayley table. `cp_als(T, R, seed)` is one ALS
run from a seeded random start (complex Gaussian factors over C, real over R; tensorly's
`parafac`, no line search). `search(T, start, ...)` walks the rank:

  1. try R = start with `restarts` seeds; while no seed reaches the tolerance, raise R by a quarter
     (up to n^2, where a decomposition always exists) or stop at the time limit;
  2. from the smallest success R, try (F + R) // 2 with F the largest failed rank below R (R - 1
     when none failed), keeping whatever succeeds, until a failure sits just below the smallest
     success, or `floor` (a proved lower bound: no need to look below it), or the time limit.

Success: max |T - T_hat| < tol. ALS can also approach a tensor of higher rank by diverging
factors (border rank); each attempt records the largest factor-column norm, so a "success" with
huge factors can be told apart. A failure at R proves nothing: ALS is a local method.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Attempt:
    """One ALS run."""

    rank: int
    seed: int
    residual: float
    """max |T - T_hat| at the end."""
    iterations: int
    seconds: float
    max_factor_norm: float
    """Largest column norm over the three factor matrices (weights folded in)."""
    ok: bool
    """residual < tol."""


@dataclass(frozen=True)
class SearchResult:
    """Every attempt, and the smallest rank reached below the tolerance."""

    field: str
    tol: float
    attempts: tuple[Attempt, ...]
    best_rank: int | None
    """Smallest R with a successful seed (None: none within the budget)."""
    best_seed: int | None
    factors: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    """A [n, R], B [n, R], C [n, R] of the best decomposition: T = sum_r A[:,r] B[:,r] C[:,r]."""
    seconds: float = 0.0
    stopped: str = ""
    """Why the walk ended: "floor", "failed", "time", "trivial"."""


def mult_tensor(table: np.ndarray) -> np.ndarray:
    """T[a, b, c] = 1 when table[a, b] = c: [n, n, n] float64."""
    table = np.asarray(table)
    n = table.shape[0]
    T = np.zeros((n, n, n))
    a, b = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    T[a, b, table] = 1.0
    return T


def reconstruct(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """sum_r A[:, r] (x) B[:, r] (x) C[:, r]."""
    return np.einsum("ar,br,cr->abc", A, B, C)


def cp_als(
    T: np.ndarray, rank: int, seed: int, *, field: str = "C", iters: int = 1000,
    tol: float = 1e-6,
) -> tuple[Attempt, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """One ALS run of rank `rank` from the random start of `seed` (field "C" or "R")."""
    import tensorly as tl
    from tensorly.cp_tensor import CPTensor
    from tensorly.decomposition import parafac
    from threadpoolctl import threadpool_limits

    if field not in ("C", "R"):
        raise ValueError(f"field must be 'C' or 'R', got {field!r}")
    rng = np.random.default_rng(seed)
    n = T.shape[0]
    scale = (n / rank) ** (1 / 3) / np.sqrt(n)  # each term's entries ~ T's mass spread over R

    def draw() -> np.ndarray:
        x = rng.standard_normal((n, rank))
        if field == "C":
            x = (x + 1j * rng.standard_normal((n, rank))) / np.sqrt(2)
        return x * scale

    dtype = complex if field == "C" else float
    init = CPTensor((np.ones(rank, dtype=dtype), [draw(), draw(), draw()]))
    t0 = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):  # tiny GEMMs: threads cost 30x here
        cp, errors = parafac(
            tl.tensor(T.astype(dtype)), rank, init=init, n_iter_max=iters, tol=1e-12,
            normalize_factors=False, return_errors=True,
        )
    w, (A, B, C) = cp
    A = A * w[None, :]
    residual = float(np.abs(reconstruct(A, B, C) - T).max())
    norms = max(float(np.linalg.norm(M, axis=0).max()) for M in (A, B, C))
    attempt = Attempt(
        rank=rank, seed=seed, residual=residual, iterations=len(errors),
        seconds=time.perf_counter() - t0, max_factor_norm=norms, ok=residual < tol,
    )
    return attempt, (A, B, C)


def search(
    T: np.ndarray, start: int, *, floor: int = 1, restarts: int = 4, seed: int = 0,
    field: str = "C", tol: float = 1e-6, iters: int = 1000, time_limit: float = 60.0,
    on_attempt=None,
) -> SearchResult:
    """Smallest rank reached by ALS from `start` (see the module docstring for the walk).

    Seeds are seed, seed+1, ..., seed+restarts-1 at every rank. `on_attempt(attempt)` is called
    after each run (progress printing).
    """
    n = T.shape[0]
    t0 = time.perf_counter()
    attempts: list[Attempt] = []
    best: tuple[int, int, tuple] | None = None
    failed: set[int] = set()  # ranks where every seed was tried and none succeeded

    def try_rank(R: int) -> bool:
        nonlocal best
        if R in failed:
            return False
        for s in range(seed, seed + restarts):
            if time.perf_counter() - t0 > time_limit:
                return False
            att, facs = cp_als(T, R, s, field=field, iters=iters, tol=tol)
            attempts.append(att)
            if on_attempt is not None:
                on_attempt(att)
            if att.ok:
                best = (R, s, facs)
                return True
        failed.add(R)
        return False

    def out_of_time() -> bool:
        return time.perf_counter() - t0 > time_limit

    R, stopped = max(start, floor), ""
    while not try_rank(R):  # phase 1: up until some seed succeeds
        if out_of_time():
            stopped = "time"
            break
        if R >= n * n:
            stopped = "trivial"
            break
        R = min(n * n, max(R + 1, int(R * 1.25)))
    if best is not None:  # phase 2: down while some seed succeeds (bisection above a failure)
        while True:
            R = best[0]
            below = [f for f in failed if f < R]
            cand = (max(below) + R) // 2 if below else R - 1
            if cand < floor or (below and cand == max(below)):
                stopped = "floor" if cand < floor else "failed"
                break
            if not try_rank(cand) and out_of_time():
                stopped = "time"
                break
    return SearchResult(
        field=field, tol=tol, attempts=tuple(attempts),
        best_rank=None if best is None else best[0],
        best_seed=None if best is None else best[1],
        factors=None if best is None else best[2],
        seconds=time.perf_counter() - t0, stopped=stopped,
    )
