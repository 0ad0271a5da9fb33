"""Spectra of a group-indexed embedding E: G -> R^d.

Two routes to the same numbers:

- cyclic Z_n (elements 0..n-1, a*b = a+b mod n): the discrete Fourier transform along the group
  axis (`fourier_mass`, one `torch.fft.rfft`);
- any finite group: the isotypic decomposition through the character table (`isotypic_mass`).
  The projection onto irrep rho's isotypic component, acting on the group axis, is
  `P_rho = (d_rho/|G|) sum_g conj(chi_rho(g)) R(g)`, with (R(g) f)(x) = f(g^-1 x). As a matrix,
  `P_rho[x, h] = (d_rho/|G|) conj(chi_rho(x h^-1))`: it depends on (x, h) only through the class
  of x h^-1. So the mass `|P_rho E|_F^2 = <P_rho, E E^T>` needs only the Gram matrix summed
  into class bins, never the n x n projectors (cheap even for A7).

Modes. A real embedding puts equal mass on an irrep and its dual (complex conjugate), e.g. on
frequencies k and n-k of Z_n. We merge each dual pair into one real mode (P_rho + P_rho*, a real
symmetric projector) and keep self-dual irreps as they are. On Z_n the modes are then the
frequencies k = 0..n//2, in that order, and `isotypic_mass` equals `fourier_mass`.

Effective number of harmonic modes (`effective_modes`): with m_j the mass of each non-trivial
mode (the trivial mode, the mean over the group, is no harmonic and is left out),
`eff = (sum_j m_j)^2 / sum_j m_j^2`, the participation ratio of the normalized mass
p_j = m_j / sum m. One mode carrying everything gives 1 (a pure cosine), r equal modes give r.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "SpectralBasis",
    "spectral_basis",
    "isotypic_mass",
    "isotypic_projectors",
    "isotypic_project",
    "fourier_mass",
    "effective_modes",
    "entropy_modes",
    "key_modes",
    "n_key_modes",
    "top_mode",
]

_DUAL_TOL = 1e-6
_NOISE = 1e-12
_CHUNK_ENTRIES = 1 << 22  # Gram-matrix entries per batch in isotypic_mass (32 MiB in float64)


@dataclass(frozen=True)
class SpectralBasis:
    """Per-group precomputation for isotypic masses (build once with `spectral_basis`)."""

    name: str
    """the group's name"""
    n: int
    """group order"""
    diff_class: Tensor
    """LongTensor [n, n]: class index of x h^-1"""
    weights: Tensor
    """float64 [m modes, k classes]: P_mode[x, h] = weights[mode, class(x h^-1)]"""
    irreps: tuple[tuple[int, ...], ...]
    """for each mode, the rows of the character table it merges (one irrep or a dual pair)"""
    degrees: tuple[int, ...]
    """irrep degree of each mode"""
    labels: tuple[str, ...]
    """mode labels: 'k=3' on a cyclic group, else 'rho2' (merged pair: 'rho2+rho3')"""
    frequency: tuple[int, ...] | None
    """on a cyclic group, the frequency k of each mode (mode j has k = j); else None"""


_CACHE: dict[tuple[str, int, int, str], SpectralBasis] = {}


def _cyclic_generator_index(group: Any) -> int | None:
    """Index of the element 1 if the table is the standard Z_n (a*b = a+b mod n), else None."""
    n = int(group.order)
    table = torch.as_tensor(group.table)
    idx = torch.arange(n)
    if not torch.equal(table, (idx[:, None] + idx[None, :]) % n):
        return None
    return 1 % n


def spectral_basis(group: Any, device: str | torch.device = "cpu") -> SpectralBasis:
    """The modes of `group` (merged dual pairs of irreps), cached per group and device."""
    key = (str(group.name), int(group.order), id(group), str(device))
    if key in _CACHE:
        return _CACHE[key]
    n = int(group.order)
    table = torch.as_tensor(group.table, dtype=torch.long)
    inverse = torch.as_tensor(group.inverse, dtype=torch.long)
    class_of = torch.as_tensor(group.class_of, dtype=torch.long)
    chars = np.asarray(group.characters, dtype=np.complex128)  # [k irreps, k classes]
    degrees = [int(d) for d in group.irrep_degrees]
    k = chars.shape[0]

    # pair each irrep with its dual (conjugate character); self-dual irreps stand alone.
    # Signature s_i = chi_i . r (r real, fixed): the dual j of i has s_j = conj(s_i).
    r = np.random.default_rng(0).standard_normal(k)
    sig = chars @ r  # [k]
    dual = np.abs(sig[None, :] - np.conj(sig)[:, None]).argmin(axis=1)  # [k]
    if np.abs(chars[dual] - np.conj(chars)).max() > _DUAL_TOL * max(1.0, np.abs(chars).max()):
        raise ValueError(f"character table of {group.name} is not closed under conjugation")
    modes: list[tuple[int, ...]] = []
    for i in range(k):
        j = int(dual[i])
        if j == i:
            modes.append((i,))
        elif i < j:
            modes.append((i, j))

    # on a standard cyclic group, order the modes by frequency k = 0..n//2
    frequency: list[int] | None = None
    gen = _cyclic_generator_index(group)
    if gen is not None:
        c1 = int(class_of[gen])
        freqs = []
        for mode in modes:
            kk = int(round(np.angle(chars[mode[0], c1]) * n / (2 * np.pi))) % n
            freqs.append(min(kk, n - kk))
        order = np.argsort(freqs, kind="stable")
        modes = [modes[i] for i in order]
        frequency = [freqs[i] for i in order]

    deg = np.asarray(degrees, dtype=np.float64)
    w_irrep = (deg[:, None] / n) * np.conj(chars).real  # [k, k]: real part suffices (pairs)
    weights = np.stack([w_irrep[list(mode)].sum(0) for mode in modes])  # [m, k]
    if frequency is not None:
        labels = tuple(f"k={f}" for f in frequency)
    else:
        labels = tuple("+".join(f"rho{i}" for i in mode) for mode in modes)
    diff_class = class_of[table[:, inverse]]  # [n, n]: class of x * h^-1
    basis = SpectralBasis(
        name=str(group.name),
        n=n,
        diff_class=diff_class.to(device),
        weights=torch.as_tensor(weights, dtype=torch.float64, device=device),
        irreps=tuple(modes),
        degrees=tuple(degrees[m[0]] for m in modes),
        labels=labels,
        frequency=tuple(frequency) if frequency is not None else None,
    )
    _CACHE[key] = basis
    return basis


def isotypic_mass(E: Tensor, group: Any) -> Tensor:
    """Mass |P_mode E|_F^2 of each real mode. E: [..., n, d] -> [..., m] (float64).

    The masses sum to |E|_F^2 (the projectors are orthogonal and sum to the identity).
    """
    basis = spectral_basis(group, E.device)
    n, k = basis.n, basis.weights.shape[1]
    lead = E.shape[:-2]
    Ef = E.reshape(-1, n, E.shape[-1])  # [B, n, d]
    chunk = max(1, _CHUNK_ENTRIES // (n * n))  # seeds per Gram matrix batch (memory cap)
    bins = torch.zeros(Ef.shape[0], k, dtype=torch.float64, device=E.device)
    for s in range(0, Ef.shape[0], chunk):
        Ed = Ef[s : s + chunk].to(torch.float64)
        K = (Ed @ Ed.transpose(-1, -2)).reshape(Ed.shape[0], n * n)  # [b, n^2] Gram matrices
        idx = basis.diff_class.reshape(1, -1).expand(Ed.shape[0], -1)
        bins[s : s + chunk].scatter_add_(1, idx, K)  # sum of K[x, h] over class(x h^-1) = c
    mass = bins @ basis.weights.T  # [B, m]
    return mass.clamp_min(0.0).reshape(*lead, -1)


def isotypic_projectors(group: Any) -> Tensor:
    """The real mode projectors as dense matrices, [m, n, n] float64 (small groups only)."""
    basis = spectral_basis(group)
    return basis.weights[:, basis.diff_class]  # [m, n, n]


def isotypic_project(E: Tensor, group: Any) -> Tensor:
    """Components of E in each mode: [..., n, d] -> [m, ..., n, d]; they sum to E."""
    P = isotypic_projectors(group).to(E.device)
    return torch.einsum("mxh,...hd->m...xd", P, E.to(torch.float64))


def fourier_mass(E: Tensor) -> Tensor:
    """Mass per frequency k = 0..n//2 of E on Z_n (axis -2: elements 0..n-1).

    E [..., n, d] -> [..., n//2 + 1].
    Frequencies k and n-k are merged (a real signal has equal mass on both); by Parseval the
    masses sum to |E|_F^2.
    """
    n = E.shape[-2]
    F = torch.fft.rfft(E.to(torch.float64), dim=-2)  # [..., n//2+1, d]
    mass = F.abs().pow(2).sum(-1) / n  # [..., n//2+1]
    mult = torch.full((n // 2 + 1,), 2.0, dtype=torch.float64, device=E.device)
    mult[0] = 1.0
    if n % 2 == 0:
        mult[-1] = 1.0
    return mass * mult


def effective_modes(mass: Tensor, include_trivial: bool = False) -> Tensor:
    """Participation ratio (sum m)^2 / sum m^2 of the mode masses. [..., m] -> [...].

    Mode 0 (the trivial irrep: the group mean) is left out unless `include_trivial`.
    NaN when the non-trivial mass is zero up to round-off (1e-12 of the total).
    """
    m = mass if include_trivial else mass[..., 1:]
    total = m.sum(-1)
    sq = m.pow(2).sum(-1)
    ok = _has_harmonics(mass) | torch.as_tensor(include_trivial)
    return torch.where(ok & (sq > 0), total.pow(2) / sq.clamp_min(1e-300), torch.nan)


def entropy_modes(mass: Tensor) -> Tensor:
    """Entropy reading of the effective number of modes: exp(H(p)), H = -sum_j p_j log p_j.

    p_j = m_j / sum m over the non-trivial modes (mode 0 left out, as in `effective_modes`).
    The Hill number of order 1, where `effective_modes` is the one of order 2: one mode gives 1,
    r equal modes give r, and in between it is never smaller than the participation ratio
    (small modes count more). [..., m] -> [...]; NaN when the non-trivial mass is zero.
    """
    m = mass[..., 1:].to(torch.float64)
    p = m / m.sum(-1, keepdim=True).clamp_min(1e-300)
    h = -torch.where(p > 0, p * torch.log(p.clamp_min(1e-300)), torch.zeros_like(p)).sum(-1)
    return torch.where(_has_harmonics(mass), torch.exp(h), torch.nan)


def _has_harmonics(mass: Tensor) -> Tensor:
    """Non-trivial mass above round-off (relative 1e-12 of the total). [..., m] -> bool [...]."""
    return mass[..., 1:].sum(-1) > _NOISE * mass.sum(-1)


def key_modes(mass: Tensor, frac: float = 0.9) -> Tensor:
    """Key modes: the fewest non-trivial modes, largest first, holding `frac` of their mass.

    [..., m] -> bool [..., m] (mode 0 is never key). On Z_n these are the key frequencies.
    """
    m = mass[..., 1:]
    vals, order = m.sort(dim=-1, descending=True)
    total = m.sum(-1, keepdim=True)
    before = vals.cumsum(-1) - vals  # mass of the larger modes ahead of each
    keep_sorted = (before < frac * total) & (vals > 0) & _has_harmonics(mass)[..., None]
    keep = torch.zeros_like(keep_sorted)
    keep.scatter_(-1, order, keep_sorted)
    pad = torch.zeros_like(keep[..., :1])
    return torch.cat([pad, keep], dim=-1)


def n_key_modes(mass: Tensor, frac: float = 0.9) -> Tensor:
    """Number of key modes (see `key_modes`). [..., m] -> [...] float."""
    return key_modes(mass, frac).sum(-1).to(torch.float64)


def top_mode(mass: Tensor) -> Tensor:
    """Index of the largest non-trivial mode (on Z_n: its frequency). [..., m] -> [...] long."""
    return mass[..., 1:].argmax(-1) + 1
