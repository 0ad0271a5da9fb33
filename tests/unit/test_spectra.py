import math

import numpy as np
import pytest
import torch

from grokray.groups import get_group
from grokray.metrics.spectra import (
    effective_modes,
    fourier_mass,
    isotypic_mass,
    isotypic_project,
    isotypic_projectors,
    key_modes,
    n_key_modes,
    spectral_basis,
    top_mode,
)
from tests.helpers.toy_groups import cyclic, s3, sign_s3


def _cosine(n: int, k: int, phase: float = 0.3) -> torch.Tensor:
    x = torch.arange(n, dtype=torch.float64)
    return torch.cos(2 * math.pi * k * x / n + phase)[:, None]  # [n, 1]


@pytest.mark.parametrize("n,k", [(31, 5), (12, 3), (12, 6)])
def test_pure_cosine_has_one_key_frequency_and_one_mode(n, k):
    E = _cosine(n, k)
    for mass in (fourier_mass(E), isotypic_mass(E, cyclic(n))):
        assert mass.shape == (n // 2 + 1,)
        assert torch.allclose(mass.sum(), (E**2).sum())
        assert mass[k] / mass.sum() > 1 - 1e-9
        assert effective_modes(mass).item() == pytest.approx(1.0)
        assert n_key_modes(mass).item() == 1
        assert key_modes(mass).nonzero().flatten().tolist() == [k]
        assert top_mode(mass).item() == k


def test_cos_and_sin_columns_are_still_one_mode():
    n, k = 23, 4
    x = torch.arange(n, dtype=torch.float64)
    E = torch.stack([torch.cos(2 * math.pi * k * x / n), torch.sin(2 * math.pi * k * x / n)], 1)
    assert effective_modes(fourier_mass(E)).item() == pytest.approx(1.0)


def test_r_equal_modes_give_r_and_the_mean_is_left_out():
    n = 29
    E = _cosine(n, 2) + _cosine(n, 7, 1.1) + _cosine(n, 11, 2.0) + 5.0  # + a constant offset
    mass = fourier_mass(E)
    assert effective_modes(mass).item() == pytest.approx(3.0)
    assert effective_modes(mass, include_trivial=True).item() < 3.0  # the offset dominates
    assert n_key_modes(mass, frac=0.9).item() == 3
    assert n_key_modes(mass, frac=0.3).item() == 1
    # unequal: masses 4, 1 -> (5)^2 / 17
    E2 = 2 * _cosine(n, 3) + _cosine(n, 9)
    assert effective_modes(fourier_mass(E2)).item() == pytest.approx(25 / 17)


def test_no_harmonic_mass_is_nan():
    E = torch.ones(7, 3, dtype=torch.float64)
    assert math.isnan(effective_modes(fourier_mass(E)).item())


@pytest.mark.parametrize("n", [9, 16])
def test_isotypic_equals_fourier_on_cyclic_with_shuffled_character_rows(n):
    gen = torch.Generator().manual_seed(0)
    perm = np.random.default_rng(1).permutation(n)
    G = cyclic(n, row_perm=perm)
    E = torch.randn(4, n, 5, generator=gen, dtype=torch.float64)  # [S, n, d]
    iso, four = isotypic_mass(E, G), fourier_mass(E)
    assert iso.shape == four.shape == (4, n // 2 + 1)
    assert torch.allclose(iso, four, rtol=1e-9, atol=1e-9)
    assert torch.allclose(effective_modes(iso), effective_modes(four))
    assert spectral_basis(G).labels[:3] == ("k=0", "k=1", "k=2")


@pytest.mark.parametrize("make", [lambda: cyclic(10), s3])
def test_isotypic_masses_sum_to_total(make):
    G = make()
    E = torch.randn(3, G.order, 7, generator=torch.Generator().manual_seed(2))
    mass = isotypic_mass(E, G)
    assert (mass >= 0).all()
    assert torch.allclose(mass.sum(-1), (E.double() ** 2).sum((-1, -2)), rtol=1e-9)


def test_s3_projectors_are_orthogonal_and_complete():
    G = s3()
    P = isotypic_projectors(G)  # [3, 6, 6]; S3 irreps are all self-dual
    assert P.shape == (3, 6, 6)
    eye = torch.eye(6, dtype=torch.float64)
    assert torch.allclose(P.sum(0), eye)
    for a in range(3):
        assert torch.allclose(P[a] @ P[a], P[a], atol=1e-12)
        assert torch.allclose(P[a], P[a].T)
        for b in range(a + 1, 3):
            assert torch.allclose(P[a] @ P[b], torch.zeros(6, 6, dtype=torch.float64), atol=1e-12)
    # isotypic dimensions d^2: 1, 1, 4
    assert [round(float(torch.trace(p))) for p in P] == [1, 1, 4]
    E = torch.randn(6, 4, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    parts = isotypic_project(E, G)  # [3, 6, 4]
    assert torch.allclose(parts.sum(0), E)
    assert torch.allclose((parts**2).sum((-1, -2)), isotypic_mass(E, G))


def test_s3_sign_embedding_is_all_in_the_sign_irrep():
    G = s3()
    E = sign_s3(G)[:, None]  # [6, 1]
    mass = isotypic_mass(E, G)
    assert torch.allclose(mass, torch.tensor([0.0, 6.0, 0.0], dtype=torch.float64), atol=1e-12)
    assert effective_modes(mass).item() == pytest.approx(1.0)
    assert top_mode(mass).item() == 1


def test_library_groups():
    gen = torch.Generator().manual_seed(4)
    Z = get_group("Z12")
    E = torch.randn(2, 12, 3, generator=gen, dtype=torch.float64)
    assert torch.allclose(isotypic_mass(E, Z), fourier_mass(E), atol=1e-9)
    for name in ("S4", "Q8", "A4"):  # A4 has a dual pair of complex irreps
        G = get_group(name)
        E = torch.randn(2, G.order, 5, generator=gen, dtype=torch.float64)
        mass = isotypic_mass(E, G)
        assert torch.allclose(mass.sum(-1), (E**2).sum((-1, -2)), rtol=1e-9)
        P = isotypic_projectors(G)
        assert torch.allclose(P.sum(0), torch.eye(G.order, dtype=torch.float64), atol=1e-9)
        assert torch.allclose(P @ P, P, atol=1e-9)
        basis = spectral_basis(G)
        dims = [sum(G.irrep_degrees[i] ** 2 for i in mode) for mode in basis.irreps]
        assert torch.diagonal(P, dim1=1, dim2=2).sum(-1).round().tolist() == dims
        # two-sided: each projector commutes with right translation by any element
        R = torch.eye(G.order, dtype=torch.float64)[G.table[:, 1]]  # x -> x*g1
        assert torch.allclose(P @ R, R @ P, atol=1e-9)
    assert len(spectral_basis(get_group("A4")).irreps) == 3  # the complex pair merged
