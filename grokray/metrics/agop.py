"""AGOP metrics: alignment of feature matrices, and the neural feature ansatz of an MLP.

- `agop_alignment(M_t, M_star)`: rho = <M_t, M*> / (|M_t| |M*|) after subtracting each
  matrix's mean entry (centered), i.e. the Pearson correlation of the entries.
- `mlp_agop(X, W1, W2, b1, act)`: the AGOP of f(x) = W2 act(W1 x + b1) (+ b2) at the inputs X,
  in closed form: J(x) = W2 diag(act'(z)) W1 with z = W1 x + b1, so

      AGOP = (1/n) sum_x W1^T D_x W2^T W2 D_x W1 = W1^T ((W2^T W2) o (S^T S / n)) W1,

  S [n, h] the activation derivatives: O(n h^2 + h^2 d), no per-sample loop.
- `nfa_correlation(...)`: the neural feature ansatz, Pearson correlation of the neural feature
  matrix W1^T W1 with AGOP^power (power 1/2 by default, the RFM update).
- `embed_mlp_nfa(Ta, Tb, b1, W2, a, b, act)`: the same for grokray's embed-and-concat MLP from
  its per-element tables (Ta = E_a W1_a, Tb = E_b W1_b), over one-hot pair inputs, no [N, 2n] X.

Works on plain weight tensors, so it does not depend on any model class. For an embed-and-concat
MLP, pass the effective first layer W1 = W_in @ blockdiag(E_a, E_b) over one-hot inputs.
"""

from __future__ import annotations

import torch

ACT_DERIVATIVES = {
    "relu": lambda z: (z > 0).to(z.dtype),
    "quadratic": lambda z: 2.0 * z,
    "identity": lambda z: torch.ones_like(z),
    "tanh": lambda z: 1.0 - torch.tanh(z).square(),
    "silu": lambda z: torch.sigmoid(z) * (1.0 + z * (1.0 - torch.sigmoid(z))),
    "gelu": lambda z: torch.func.grad(lambda u: torch.nn.functional.gelu(u).sum())(z),
}


def pearson(
    A: torch.Tensor, B: torch.Tensor, drop_diag: bool = False, center: bool = True
) -> float:
    """Pearson correlation of the entries of two same-shaped tensors (0 when one is constant).

    drop_diag: square matrices, off-diagonal entries only (the diagonal dominates NFM and AGOP).
    center: False gives the uncentered cosine <A, B> / (|A| |B|).
    """
    if drop_diag:
        off = ~torch.eye(A.shape[0], dtype=torch.bool, device=A.device)
        A, B = A[off], B[off]
    a = A.detach().double().flatten()
    b = B.detach().double().flatten()
    if center:
        a = a - a.mean()
        b = b - b.mean()
    den = float(a.norm() * b.norm())
    return float(a @ b) / den if den > 0 else 0.0


def agop_alignment(M_t: torch.Tensor, M_star: torch.Tensor, center: bool = True) -> float:
    """rho(M_t, M*) = <M_t, M*> / (|M_t| |M*|); centered (mean entry removed) by default."""
    return pearson(M_t, M_star, center=center)


def _derivative_gram(Z: torch.Tensor, act: str) -> torch.Tensor:
    """S^T S [h, h] of the activation derivatives S = act'(Z) at the pre-activations Z [n, h]."""
    if act not in ACT_DERIVATIVES:
        raise ValueError(f"unknown activation {act!r}; valid: {', '.join(ACT_DERIVATIVES)}")
    S = ACT_DERIVATIVES[act](Z)  # [n, h]
    return S.T @ S


def mlp_agop(
    X: torch.Tensor,
    W1: torch.Tensor,
    W2: torch.Tensor,
    b1: torch.Tensor | None = None,
    act: str = "relu",
) -> torch.Tensor:
    """AGOP [d, d] of f(x) = W2 act(W1 x + b1) at the rows of X [n, d]; W1 [h, d], W2 [c, h]."""
    X, W1, W2 = X.detach().double(), W1.detach().double(), W2.detach().double()
    Z = X @ W1.T  # [n, h]
    if b1 is not None:
        Z = Z + b1.detach().double()
    Q = (W2.T @ W2) * _derivative_gram(Z, act) / Z.shape[0]  # [h, h]
    G = W1.T @ Q @ W1
    return 0.5 * (G + G.T)


def psd_power(G: torch.Tensor, power: float) -> torch.Tensor:
    """G^power for symmetric PSD G via eigh (round-off negatives clamped to 0)."""
    w, V = torch.linalg.eigh(0.5 * (G + G.T))
    return (V * w.clamp(min=0.0).pow(power)) @ V.T


def nfa_correlation(
    X: torch.Tensor,
    W1: torch.Tensor,
    W2: torch.Tensor,
    b1: torch.Tensor | None = None,
    act: str = "relu",
    power: float = 0.5,
    drop_diag: bool = False,
) -> float:
    """Pearson correlation of W1^T W1 (the NFM) with AGOP^power of the MLP at X."""
    G = mlp_agop(X, W1, W2, b1, act)
    W1 = W1.detach().double()
    return pearson(W1.T @ W1, psd_power(G, power) if power != 1.0 else G, drop_diag)


def embed_mlp_nfa(
    Ta: torch.Tensor,
    Tb: torch.Tensor,
    b1: torch.Tensor | None,
    W2: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    act: str = "relu",
    power: float = 0.5,
    drop_diag: bool = False,
) -> tuple[float, torch.Tensor]:
    """NFA of an embed-and-concat MLP, logits = act(Ta[a] + Tb[b] + b1) W2 (+ b2).

    Ta = E_a W1_a, Tb = E_b W1_b ([n, h] each, bias not included) are the per-element tables
    (grokray.models.mlp), W2 [h, c]; (a, b) the pairs [N] at which the AGOP is taken. Over
    one-hot inputs e_a (+) e_b the effective first layer is W1 = [Ta; Tb]^T [h, 2n], so the NFM
    is [Ta; Tb] [Ta; Tb]^T and the AGOP is [Ta; Tb] Q [Ta; Tb]^T with Q as in `mlp_agop`.
    Returns (Pearson(NFM, AGOP^power), AGOP [2n, 2n]).
    """
    Ta, Tb, W2 = Ta.detach().double(), Tb.detach().double(), W2.detach().double()
    Z = Ta[a] + Tb[b]  # [N, h]
    if b1 is not None:
        Z = Z + b1.detach().double()
    Q = (W2 @ W2.T) * _derivative_gram(Z, act) / Z.shape[0]  # [h, h]
    T = torch.cat([Ta, Tb], 0)  # [2n, h] = W1^T
    G = T @ Q @ T.T
    G = 0.5 * (G + G.T)
    return pearson(T @ T.T, psd_power(G, power) if power != 1.0 else G, drop_diag), G
