"""Learned step maps and the algebra losses on compositions of flow maps (torch).

States x [B, 2m]. Both models share the trunk h(x) = tanh(A2 tanh(A1 x + a1) + a2) [B, H].

- `StepMLP` (arch "mlp"): x' = x + C h(x) + c: one map, the step phi_dt.
- `FlowDAD` (arch "forge"): a flow map for every integer multiple k dt, |k| <= K:
      phi_k(x) = x + W((U h(x)) * (V tau_k)) + c
  With `inverse="reversal"` (default) the negative elements are not learned but given by the
  reversing symmetry of these Hamiltonians, H(q, -p) = H(q, p): phi_{-k} = R phi_k R with
  R(q, p) = (q, -p); then L_inv below is time-reversibility of phi_k itself. With
  `inverse="learned"` phi_{-k} has its own tau_{-k}, and L_inv constrains only phi_{-k}.
  tau_k in R^d is a learned embedding of the time-group element k ("fiber embedding"), and
  W((U a) * (V b)) is FORGE's rank-R DAD product (U [R, H], V [R, d], W [2m, R]) acting on the
  state features by the time element.

The flow maps of a Hamiltonian system form a one-parameter group: phi_0 = id,
phi_j o phi_k = phi_{j+k}, phi_{-k} = phi_k^{-1}. `FlowDAD.algebra_losses(x, gen)` turns these into
losses on states x (no data beyond x):
  L_ident = |phi_0(x) - x|^2
  L_inv   = |phi_{-k}(phi_k(x)) - x|^2                       k uniform in 1..K
  L_assoc = |phi_k(phi_j(x)) - phi_{j+k}(x)|^2               j, k uniform, |j|, |k|, |j+k| <= K
(composition of maps is associative by itself; the law that carries information is the
composition law, which makes k -> phi_k an action of the group Z, so it takes the "assoc" slot).
Each is a mean over the batch of the squared norm, like the data loss |phi_1(x) - y|^2.
"""

from __future__ import annotations

import torch
from torch import nn


class _Trunk(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.A1 = nn.Linear(dim, hidden)
        self.A2 = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, 2m] -> [B, H]
        return torch.tanh(self.A2(torch.tanh(self.A1(x))))


class StepMLP(nn.Module):
    """x' = x + C h(x) + c."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.h = _Trunk(dim, hidden)
        self.C = nn.Linear(hidden, dim)

    def step(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.C(self.h(x))

    def data_loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return ((self.step(x) - y) ** 2).sum(-1).mean()


class FlowDAD(nn.Module):
    """phi_k(x) = x + W((U h(x)) * (V tau_k)) + c for |k| <= K."""

    def __init__(self, dim: int, hidden: int, d: int, rank: int, K: int,
                 inverse: str = "reversal"):
        super().__init__()
        if inverse not in ("learned", "reversal"):
            raise ValueError(f"inverse must be learned or reversal, got {inverse!r}")
        self.K, self.inverse = K, inverse
        m = dim // 2
        self.register_buffer("R", torch.cat([torch.ones(m), -torch.ones(m)]))  # (q, p) -> (q, -p)
        self.h = _Trunk(dim, hidden)
        self.tau = nn.Parameter(torch.randn(2 * K + 1, d) / d**0.5)  # row k + K: element k
        self.U = nn.Linear(hidden, rank, bias=False)
        self.V = nn.Linear(d, rank, bias=False)
        self.W = nn.Linear(rank, dim)

    def flow(self, x: torch.Tensor, k: torch.Tensor | int) -> torch.Tensor:
        """phi_k(x); k an int or a LongTensor [B]."""
        if isinstance(k, int):
            k = torch.full((x.shape[0],), k, dtype=torch.long, device=x.device)
        if self.inverse == "learned":
            return x + self.W(self.U(self.h(x)) * self.V(self.tau[k + self.K]))
        # reversal: phi_{-k} = R phi_k R (H(q, -p) = H(q, p)), so tau is used for k >= 0 only
        s = torch.where(k < 0, -1.0, 1.0)[:, None]
        flip = torch.where(s > 0, torch.ones_like(self.R), self.R)  # [B, 2m]
        z = x * flip
        z = z + self.W(self.U(self.h(z)) * self.V(self.tau[k.abs() + self.K]))
        return z * flip

    def step(self, x: torch.Tensor) -> torch.Tensor:
        return self.flow(x, 1)

    def data_loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return ((self.step(x) - y) ** 2).sum(-1).mean()

    def algebra_losses(self, x: torch.Tensor, gen: torch.Generator) -> dict[str, torch.Tensor]:
        B, K = x.shape[0], self.K
        sq = lambda a, b: ((a - b) ** 2).sum(-1).mean()  # noqa: E731
        ident = sq(self.flow(x, 0), x)
        k = torch.randint(1, K + 1, (B,), generator=gen)
        inv = sq(self.flow(self.flow(x, k), -k), x)
        j = torch.randint(-K, K + 1, (B,), generator=gen)
        lo, hi = torch.clamp(-K - j, min=-K), torch.clamp(K - j, max=K)  # |j + k| <= K
        k2 = lo + (torch.rand(B, generator=gen) * (hi - lo + 1)).long().clamp(max=hi - lo)
        assoc = sq(self.flow(self.flow(x, j), k2), self.flow(x, j + k2))
        return {"assoc": assoc, "ident": ident, "inv": inv}
