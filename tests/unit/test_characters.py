"""Character tables (Burnside-Dixon): orthogonality and independent checks against the table."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from grokray.groups import _build as build_cached
from grokray.groups import get_group
from grokray.groups._characters import character_table

NAMES = [
    "Z2", "Z12", "V4", "S3", "S4", "S5", "A4", "A5", "D4", "D7", "Q8", "Q16", "Dic3", "F20",
    "F21", "Heis3", "PSL(2,7)", "Z2xZ4", "S3xZ3", "Q8xZ3", "PSL(2,11)",
]  # fmt: skip


@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GROKRAY_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("name", NAMES)
def test_orthogonality_and_degrees(name):
    G = get_group(name)
    X = G.characters
    h = np.array(G.class_sizes)
    n, k = G.order, len(h)
    assert X.shape == (k, k) and X.dtype == np.complex128
    # row orthogonality: sum_g chi(g) conj(psi(g)) = n delta
    assert np.allclose((X * h) @ X.conj().T, n * np.eye(k), atol=1e-8)
    # column orthogonality: sum_chi chi(g_i) conj(chi(g_j)) = (n / h_i) delta
    assert np.allclose(X.conj().T @ X, np.diag(n / h), atol=1e-8)
    d = np.array(G.irrep_degrees)
    assert (d**2).sum() == n
    assert np.array_equal(X[:, 0], d.astype(complex))  # first column = degrees
    assert (n % d == 0).all()
    assert np.array_equal(X[0], np.ones(k))  # trivial irrep first
    assert list(d) == sorted(d)


@pytest.mark.parametrize("name", ["S4", "A5", "F21", "Dic3", "Heis3", "PSL(2,7)"])
def test_characters_reproduce_class_mult(name):
    """c_ijl = (h_i h_j / n) sum_chi chi(g_i) chi(g_j) conj(chi(g_l)) / chi(1), the class
    multiplication counted directly from the Cayley table."""
    G = get_group(name)
    X, h, n = G.characters, np.array(G.class_sizes), G.order
    c = np.einsum("xi,xj,xl->ijl", X, X, X.conj() / X[:, :1]) * np.outer(h, h)[..., None] / n
    assert np.allclose(c, G.class_mult, atol=1e-8)


@pytest.mark.parametrize("name", ["Z12", "Z2xZ4", "S4", "F21", "Heis3", "Q8"])
def test_linear_characters_are_homomorphisms(name):
    G = get_group(name)
    T, cls = G.table, G.class_of
    for row in G.characters[np.array(G.irrep_degrees) == 1]:
        chi = torch.from_numpy(row)[cls]  # [n] value per element
        assert torch.allclose(chi[T], chi[:, None] * chi[None, :], atol=1e-9)


@pytest.mark.parametrize("name", ["S3", "Z12", "D4", "F21", "Q16"])
def test_inverse_class_conjugates(name):
    G = get_group(name)
    X = G.characters
    inv_class = G.class_of[G.inverse[torch.as_tensor(G.class_reps)]].numpy()
    assert np.allclose(X[:, inv_class], X.conj(), atol=1e-9)


def test_known_tables():
    S3 = get_group("S3").characters  # classes: e, transpositions, 3-cycles
    assert np.array_equal(S3, np.array([[1, 1, 1], [1, -1, 1], [2, 0, -1]], dtype=complex))
    A4 = get_group("A4")
    w = np.exp(2j * np.pi / 3)
    got = A4.characters
    assert np.allclose(sorted(got[1:3, 1], key=lambda z: z.imag), [w.conjugate(), w])
    assert np.allclose(got[3], [3, 0, 0, -1])
    Z5 = get_group("Z5").characters
    assert np.allclose(
        np.sort_complex(Z5[:, 1]), np.sort_complex(np.exp(2j * np.pi * np.arange(5) / 5))
    )


def test_deterministic_across_rebuilds(monkeypatch):
    monkeypatch.setenv("GROKRAY_CACHE", "off")
    build_cached.cache_clear()
    X1 = get_group("PSL(2,7)").characters
    build_cached.cache_clear()
    X2 = get_group("PSL(2,7)").characters
    assert np.array_equal(X1, X2)


def test_abelian_large_quick():
    """A prime-order cyclic group of moderate size: every class a singleton, all linear."""
    G = get_group("Z211")
    X = G.characters
    assert X.shape == (211, 211)
    assert G.irrep_degrees == [1] * 211
    assert np.allclose(np.abs(X), 1.0)
    assert np.allclose(X @ X.conj().T, 211 * np.eye(211), atol=1e-8)


@pytest.mark.parametrize("name", ["Z12", "Z2xZ4", "Z3xZ3", "V4", "Z2xZ2xZ6", "Z30"])
def test_abelian_exact_method_matches_dixon(name):
    """Abelian groups use the exact extension method; Burnside-Dixon must give the same table."""
    G = get_group(name)
    X_dixon = character_table(
        G.table.numpy(),
        G.inverse.numpy(),
        G.class_of.numpy(),
        G.class_reps,
        np.asarray(G.class_sizes),
    )
    assert np.allclose(G.characters, X_dixon, atol=1e-9)
