"""Complex character tables by the Burnside-Dixon method, without the k^3 tensor.

The class matrices (A_j)[i, l] = c[j, i, l] share the right eigenvectors w_chi with
w_chi[l] = h_l chi(g_l) / chi(1). Scaled by sqrt(h), B_j = diag(h)^-1/2 A_j diag(h)^1/2 is a
normal matrix whose eigenvectors form a unitary matrix (column orthogonality). So for a random
real combination B = sum_j r_j B_j, the Hermitian matrix K = (B + B^H)/2 + t (B - B^H)/(2i) has
the same eigenvectors, and `numpy.linalg.eigh` finds them stably. Any eigenvalue cluster left
(eigenvalues that agree by chance) is split with further random combinations restricted to it.
Each eigenvector v gives chi(1) = |v_0| sqrt(n) and chi(g_l) = chi(1) (v_l / v_0) / sqrt(h_l).
"""

from __future__ import annotations

import numpy as np

from grokray.groups._classes import class_matrix_combination

# fixed seed: the method's randomness never changes the result, and this keeps it reproducible
_SEED = 20240229
_SNAP = 1e-9  # real and imaginary parts this close to an integer are snapped to it


def character_table(
    T: np.ndarray, inverse: np.ndarray, class_of: np.ndarray, reps: np.ndarray, sizes: np.ndarray
) -> np.ndarray:
    """Character table X [k irreps, k classes] (complex128): trivial first, then by degree."""
    n, k = len(T), len(reps)
    rng = np.random.default_rng(_SEED)
    sqrt_h = np.sqrt(sizes.astype(float))
    blocks: list[np.ndarray | None] = [None]  # orthonormal bases of unsplit eigenspaces
    done: list[np.ndarray] = []
    for _ in range(20):
        M = class_matrix_combination(T, inverse, class_of, reps, rng.uniform(-1.0, 1.0, k))
        B = M * sqrt_h[None, :] / sqrt_h[:, None]  # [k, k] normal
        K = (B + B.T) / 2 + rng.uniform(0.5, 1.5) * (B - B.T) / 2j  # Hermitian (B is real)
        scale = max(1.0, float(np.abs(K).max()))
        todo = []
        for V in blocks:
            if V is None:  # the whole space
                evals, W = np.linalg.eigh(K)
            else:
                evals, U = np.linalg.eigh(V.conj().T @ K @ V)
                W = V @ U
            cut = np.flatnonzero(np.diff(evals) > 1e-8 * scale) + 1
            for part in np.split(np.arange(len(evals)), cut):
                (done if len(part) == 1 else todo).append(W[:, part])
        blocks = todo
        if not blocks:
            break
    else:
        raise RuntimeError("Burnside-Dixon did not separate the irreducible characters")
    V = np.concatenate(done, axis=1).T  # [k irreps, k classes] rows are eigenvectors
    v0 = V[:, :1]
    degrees = np.abs(v0[:, 0]) * np.sqrt(n)
    X = degrees[:, None] * (V / v0) / sqrt_h[None, :]
    X = _snap(X)
    X = X[_row_order(X)]
    check_orthogonality(X, sizes)
    return X


def abelian_character_table(T: np.ndarray) -> np.ndarray:
    """Characters of an abelian group (classes = elements), exactly, in O(n^2).

    Grows a subgroup H one element g at a time: if m is the least power with g^m in H, every
    character of H extends to <H, g> in m ways, chi(g) = any m-th root of chi(g^m). Values are
    kept as integers a with chi(x) = exp(2 pi i a / e), e the exponent of G, so no eigenproblem
    (the Dixon route would diagonalize an n x n matrix) and no rounding until the end.
    """
    n = len(T)
    order = _element_orders(T)
    e = int(np.lcm.reduce(order))
    H = np.array([0])  # elements of H; position in H of element x is pos[x] (or -1)
    pos = np.full(n, -1)
    pos[0] = 0
    A = np.zeros((1, 1), dtype=np.int64)  # [chars of H, |H|]: chi = exp(2 pi i A / e)
    while len(H) < n:
        g = int(np.argmin(pos >= 0))  # smallest element outside H (deterministic)
        m, x = 1, g
        while pos[x] < 0:
            x, m = int(T[x, g]), m + 1
        powers = [0]  # g^0 .. g^(m-1)
        for _ in range(m - 1):
            powers.append(int(T[powers[-1], g]))
        H_new = T[H[None, :], np.array(powers)[:, None]].ravel()  # [m * |H|]: h g^i, i-major
        # chi(g) = exp(2 pi i a_g / e) with m a_g = A[:, pos[g^m]] (mod e): m choices
        a_g = A[:, pos[x]][:, None] // m + np.arange(m)[None, :] * (e // m)  # [c, m]
        i = np.arange(m)
        A = (A[:, None, None, :] + i[None, None, :, None] * a_g[:, :, None, None]) % e
        A = A.reshape(len(A) * m, m * len(H))  # [c * m, m * |H|]
        H = H_new
        pos[H] = np.arange(len(H))
    X = np.exp(2j * np.pi * A[:, pos] / e)  # [n chars, n elements]
    X = _snap(X)
    X = X[_row_order(X)]
    check_orthogonality(X, np.ones(n, dtype=np.int64))
    return X


def _element_orders(T: np.ndarray) -> np.ndarray:
    n = len(T)
    order = np.zeros(n, dtype=np.int64)
    x, g = np.arange(n), np.arange(n)
    for k in range(1, n + 1):  # x = g^k for every g at once
        order[(order == 0) & (x == 0)] = k
        if (order > 0).all():
            break
        x = T[x, g]
    return order


def degrees_of(X: np.ndarray) -> list[int]:
    """Irrep degrees: the identity column, as integers."""
    return [int(round(d)) for d in X[:, 0].real]


def check_orthogonality(X: np.ndarray, sizes: np.ndarray, atol: float = 1e-6) -> None:
    """Raise if row or column orthogonality, or sum of squared degrees = n, fails."""
    n, k = int(sizes.sum()), len(sizes)
    # large tables: check a fixed sample of rows and columns against all (O(64 k^2), not k^3)
    pick = np.arange(k) if k <= 256 else np.random.default_rng(0).choice(k, 64, replace=False)
    rows = (X[pick] * sizes[None, :]) @ X.conj().T  # [p, k] = n I[pick]
    cols = X[:, pick].conj().T @ X  # [p, k] = diag(n / h)[pick]
    d = X[:, 0].real
    ok = (
        np.allclose(rows, n * np.eye(k)[pick], atol=atol * n)
        and np.allclose(cols, np.diag(n / sizes)[pick], atol=atol * n)
        and np.allclose(d, np.round(d), atol=atol)
        and int(np.round(d) @ np.round(d)) == n
    )
    if not ok:
        raise RuntimeError("character table failed the orthogonality check")


def _snap(X: np.ndarray) -> np.ndarray:
    re, im = X.real, X.imag
    re = np.where(np.abs(re - np.round(re)) < _SNAP, np.round(re), re)
    im = np.where(np.abs(im - np.round(im)) < _SNAP, np.round(im), im)
    return (re + 0.0) + 1j * (im + 0.0)  # + 0.0 turns -0.0 into 0.0


def _row_order(X: np.ndarray) -> np.ndarray:
    """Trivial first, then by degree; ties broken by values (larger real, then imag, first)."""
    R, I = np.round(X.real, 6), np.round(X.imag, 6)
    keys = np.empty((len(X), 2 * X.shape[1]))
    keys[:, 0::2], keys[:, 1::2] = -R, -I
    # np.lexsort sorts by the last key first: degree is the primary key
    return np.lexsort(tuple(keys.T[::-1]) + (np.round(X[:, 0].real),))
