"""Recursive Feature Machine (RFM): kernel ridge regression + AGOP feature learning.

Iterate (section 3 of papers.md):
  1. alpha = (K_M + ridge*I)^{-1} Y, f(x) = k(x, X; M) alpha           (kernel ridge, float64)
  2. M <- G(f)^s, G(f) = (1/n) sum_j J_f(x_j)^T J_f(x_j)                 (AGOP at the train points)

Every kernel here has an input gradient of one form,

    grad_x k(x, z) = gamma * W(x, z) * M (delta * x - z),

  gaussian  k = exp(-|x - z|_M^2 / (2 L^2)):  W = k,            gamma = -1/L^2, delta = 1
  laplace   k = exp(-|x - z|_M / L):          W = k / |x-z|_M,  gamma = -1/L,   delta = 1
  quadratic k = (x^T M z)^2:                  W = x^T M z,      gamma = -2,     delta = 0

so the Jacobian of class c at train point x_j is J_jc = gamma * M U_jc with

    U_jc = delta * (W alpha)_jc * x_j - R_jc,    R_jc = sum_i W_ji alpha_ic x_i,

and AGOP = gamma^2 / n * M (sum_jc U_jc U_jc^T) M. Centering subtracts the mean over j of U_jc.
R is the costly part (n^2 c d flops when dense). For binary inputs (the one-hot pairs of every
grokray task) R[:, c, a] = W[:, S_a] @ alpha[S_a, c] with S_a = {i : x_ia = 1}: a batched matmul
over the d columns that costs n^2 c * (nonzeros per row), not n^2 c d.

The estimator is pure (no trial, no files): `RFM(...).fit(X, y)`, scikit-learn style. The `rfm`
family that fits it in a trial is grokray/rfm/family.py.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from grokray.errors import ConfigError
from grokray.metrics.agop import psd_power
from grokray.metrics.circulant import dlog_order, has_circulant_structure

KERNELS = ("gaussian", "laplace", "quadratic")
"""the kernels `RFM` fits"""


# --------------------------------------------------------------------------------- kernels


def mahalanobis_sq(X: torch.Tensor, Z: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """Squared distances (x - z)^T M (x - z) [n, m], clamped at 0."""
    XM = X @ M  # [n, d]
    x2 = (XM * X).sum(1)  # [n]
    z2 = ((Z @ M) * Z).sum(1)  # [m]
    D2 = torch.addmm(x2[:, None], XM, Z.T, alpha=-2.0)
    return D2.add_(z2[None, :]).clamp_(min=0.0)


def kernel_matrix(
    kernel: str, X: torch.Tensor, Z: torch.Tensor, M: torch.Tensor, bandwidth: float
) -> torch.Tensor:
    """k(x_i, z_j; M) [n, m] for the named kernel (elementwise work done in place)."""
    if kernel == "gaussian":
        s = -0.5 / bandwidth**2
        XM = X @ M  # [n, d]
        x2 = (XM * X).sum(1)  # [n]
        z2 = ((Z @ M) * Z).sum(1)  # [m]
        E = torch.addmm((s * x2)[:, None], XM, Z.T, alpha=-2.0 * s)  # -|x - z|_M^2 / (2L^2)
        return E.add_((s * z2)[None, :]).clamp_(max=0.0).exp_()
    if kernel == "laplace":
        return mahalanobis_sq(X, Z, M).sqrt_().div_(-bandwidth).exp_()
    if kernel == "quadratic":
        return torch.mm(X @ M, Z.T).square_()
    raise ConfigError(f"unknown RFM kernel {kernel!r}; valid: {', '.join(KERNELS)}")


def gradient_weights(
    kernel: str, X: torch.Tensor, M: torch.Tensor, K: torch.Tensor, bandwidth: float
) -> tuple[torch.Tensor, float, float]:
    """(W [n, n], gamma, delta) of the gradient form in the module docstring, at x_j = X[j].

    K is the train kernel k(X, X; M); W is symmetric like K.
    """
    if kernel == "gaussian":
        return K, -1.0 / bandwidth**2, 1.0
    if kernel == "laplace":
        dist = mahalanobis_sq(X, X, M).sqrt_()  # [n, n]
        W = torch.where(dist > 1e-10, K / dist.clamp(min=1e-10), torch.zeros_like(K))
        return W, -1.0 / bandwidth, 1.0
    if kernel == "quadratic":
        return (X @ M) @ X.T, -2.0, 0.0
    raise ConfigError(f"unknown RFM kernel {kernel!r}; valid: {', '.join(KERNELS)}")


# --------------------------------------------------------------------------------- AGOP


def binary_support(X: torch.Tensor) -> torch.Tensor | None:
    """Padded index [d, m]: the rows i with X[i, a] = 1 for each column a (pad value n).

    None when X is not binary or too dense for the grouped path to pay off.
    """
    n, d = X.shape
    if not bool(((X == 0) | (X == 1)).all()):
        return None
    counts = X.sum(0).long()  # [d]
    m = int(counts.max()) if d else 0
    if m == 0 or m * 4 > n:
        return None
    cols, rows = X.T.nonzero(as_tuple=True)  # sorted by column, then row
    starts = torch.cumsum(counts, 0) - counts
    slot = torch.arange(rows.numel(), device=X.device) - starts[cols]
    idx = torch.full((d, m), n, dtype=torch.long, device=X.device)
    idx[cols, slot] = rows
    return idx


def agop(
    X: torch.Tensor,
    alpha: torch.Tensor,
    W: torch.Tensor,
    M: torch.Tensor,
    gamma: float,
    delta: float,
    centering: bool = False,
    support: torch.Tensor | None = None,
    F: torch.Tensor | None = None,
) -> torch.Tensor:
    """AGOP [d, d] of f(x) = sum_i alpha_i k(x, x_i; M) at the train points X [n, d].

    alpha [n, c]; W [n, n] the (symmetric) gradient weights; support from
    `binary_support(X)`, or None for the dense path; F = W @ alpha when already at hand.
    """
    n, d = X.shape
    c = alpha.shape[1]
    if support is not None:
        # R[a, c, j] = sum_{i in S_a} alpha[i, c] W[i, j]: one [c, m] @ [m, n] matmul per column
        Wp = torch.cat([W, W.new_zeros(1, n)], dim=0)  # [n+1, n], row n = padding
        Ap = torch.cat([alpha, alpha.new_zeros(1, c)], dim=0)  # [n+1, c]
        U = torch.bmm(Ap[support].transpose(1, 2), Wp[support]).neg_()  # [d, c, n]
    else:
        U = W @ (alpha[:, :, None] * X[:, None, :]).reshape(n, c * d)  # [n, c*d]
        U = U.reshape(n, c, d).permute(2, 1, 0).neg().contiguous()  # [d, c, n]
    if delta != 0.0:
        F = W @ alpha if F is None else F  # [n, c]
        if support is not None:
            rows, cols = X.nonzero(as_tuple=True)
            U.permute(0, 2, 1).index_put_((cols, rows), delta * F[rows], accumulate=True)
        else:
            U += delta * X.T[:, None, :] * F.T[None, :, :]
    if centering:
        U -= U.mean(dim=2, keepdim=True)
    Uf = U.reshape(d, c * n)
    H = Uf @ Uf.T  # [d, d]
    G = (gamma**2 / n) * (M @ H @ M)
    return 0.5 * (G + G.T)


def solve_psd(A: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """A^{-1} Y for symmetric A: Cholesky when A is positive definite, else an LU solve."""
    L, info = torch.linalg.cholesky_ex(A)
    if int(info) == 0:
        Z = torch.linalg.solve_triangular(L, Y, upper=False)
        return torch.linalg.solve_triangular(L.T, Z, upper=True)
    return torch.linalg.solve(A, Y)


# --------------------------------------------------------------------------------- estimator


class RFM:
    """Recursive Feature Machine, scikit-learn style: `fit` returns self, fitted state ends in _.

    Args:
        kernel: gaussian, laplace or quadratic.
        bandwidth: L of the gaussian / laplace kernels.
        ridge: ridge added to the kernel matrix before the solve.
        iters: AGOP updates; fit solves iters + 1 times (with M_0 .. M_iters).
        power: M <- AGOP^power.
        centering: center the Jacobians over the train points before the AGOP.
        M_init: the initial feature matrix [d, d]; None: identity.
        device: torch device of the computation.
        store_iterates: keep every M_t in `Ms_` (d^2 floats each).
    """

    def __init__(
        self,
        kernel: str = "gaussian",
        bandwidth: float = 2.5,
        ridge: float = 0.0,
        iters: int = 25,
        power: float = 0.5,
        centering: bool = True,
        M_init: Any = None,
        device: str | torch.device = "cpu",
        store_iterates: bool = False,
    ) -> None:
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.ridge = ridge
        self.iters = iters
        self.power = power
        self.centering = centering
        self.M_init = M_init
        self.device = device
        self.store_iterates = store_iterates

    # ------------------------------------------------------------------ helpers

    def _tensor(self, A: Any) -> torch.Tensor:
        return torch.as_tensor(A).to(device=self.device, dtype=torch.float64)

    def _targets(self, y: Any) -> torch.Tensor:
        y = torch.as_tensor(y, device=self.device)
        if y.ndim == 1:
            self.n_classes_ = int(getattr(self, "n_classes_", 0) or int(y.max()) + 1)
            return torch.nn.functional.one_hot(y.long(), self.n_classes_).double()
        self.n_classes_ = int(y.shape[1])
        return y.double()

    def _solve(self, M: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        K = kernel_matrix(self.kernel, self.X_fit_, self.X_fit_, M, self.bandwidth)  # [n, n]
        A = K
        if self.ridge:
            A = K.clone()
            A.diagonal().add_(self.ridge)
        alpha = solve_psd(A, self._Y)  # [n, c]
        if not bool(torch.isfinite(alpha).all()):
            raise FloatingPointError("RFM: non-finite kernel solve (singular kernel matrix?)")
        return alpha, K

    @staticmethod
    def _score(F: torch.Tensor, Y: torch.Tensor) -> tuple[float, float]:
        loss = float((F - Y).square().mean())
        acc = float((F.argmax(1) == Y.argmax(1)).double().mean())
        return loss, acc

    # ------------------------------------------------------------------ API

    def fit(self, X: Any, y: Any, eval_set: tuple[Any, Any] | None = None) -> RFM:
        """Run the RFM iterations on X [n, d] with labels y [n] (ints) or targets [n, c].

        eval_set (X_val, y_val), when given, is scored at every iterate into `history_`.
        """
        if self.kernel not in KERNELS:
            raise ConfigError(f"unknown RFM kernel {self.kernel!r}; valid: {', '.join(KERNELS)}")
        self.n_classes_ = 0
        self.X_fit_ = self._tensor(X)
        self._Y = self._targets(y)
        n, d = self.X_fit_.shape
        Xv = Yv = None
        if eval_set is not None:
            Xv, Yv = self._tensor(eval_set[0]), self._targets(eval_set[1])
        M = torch.eye(d, dtype=torch.float64, device=self.device)
        if self.M_init is not None:
            M = self._tensor(self.M_init)
        support = binary_support(self.X_fit_)
        self.history_: list[dict[str, float]] = []
        self.Ms_: list[torch.Tensor] = []
        for t in range(self.iters + 1):
            t0, c0 = time.perf_counter(), time.process_time()
            alpha, K = self._solve(M)  # [n, c], [n, n]
            F = K @ alpha  # [n, c] train predictions
            row = {"iter": float(t)}
            row["train_loss"], row["train_acc"] = self._score(F, self._Y)
            if Xv is not None:
                Kv = kernel_matrix(self.kernel, Xv, self.X_fit_, M, self.bandwidth)
                row["val_loss"], row["val_acc"] = self._score(Kv @ alpha, Yv)
            if self.store_iterates:
                self.Ms_.append(M.cpu().clone())
            if t < self.iters:
                W, gamma, delta = gradient_weights(self.kernel, self.X_fit_, M, K, self.bandwidth)
                G = agop(self.X_fit_, alpha, W, M, gamma, delta, self.centering, support,
                         F if W is K else None)
                M_next = psd_power(G, self.power)
                if not bool(torch.isfinite(M_next).all()):
                    raise FloatingPointError(f"RFM: non-finite AGOP at iteration {t}")
                M = M_next
            row["wall_s"] = time.perf_counter() - t0
            row["cpu_s"] = time.process_time() - c0
            self.history_.append(row)
        self.M_ = M
        self.dual_coef_ = alpha
        del self._Y
        return self

    def decision_function(self, X: Any) -> torch.Tensor:
        """f(X) [m, c] = k(X, X_fit; M) alpha."""
        K = kernel_matrix(self.kernel, self._tensor(X), self.X_fit_, self.M_, self.bandwidth)
        return K @ self.dual_coef_

    def predict(self, X: Any) -> torch.Tensor:
        """Class labels [m]: argmax of the decision function."""
        return self.decision_function(X).argmax(1)

    def score(self, X: Any, y: Any) -> float:
        """Accuracy on (X, y) with integer labels y."""
        y = torch.as_tensor(y, device=self.device).long()
        return float((self.predict(X) == y).double().mean())


# --------------------------------------------------------------------------------- data, baseline


def one_hot_pairs(a: torch.Tensor, b: torch.Tensor, n: int) -> torch.Tensor:
    """Inputs e_a (+) e_b [N, 2n], float64."""
    X = torch.zeros(a.numel(), 2 * n, dtype=torch.float64)
    rows = torch.arange(a.numel())
    X[rows, a.long()] = 1.0
    X[rows, n + b.long()] = 1.0
    return X


def random_circulant_M(p: int, op: str, generator: torch.Generator) -> torch.Tensor:
    """A fixed random block-circulant feature matrix [2p, 2p] for op (the paper's baseline).

    M0 = [[A, C], [C^T, A]] with A = I - 11^T/p and C circulant in the op's order (see
    grokray.metrics.circulant.op_block): C[r, s] = v[s - r] whose eigenvalues have random phases
    and modulus 1 (0 at frequency 0). Per Fourier mode M0 is then [[1, l], [conj(l), 1]], |l| = 1:
    PSD, rank one, the a- and b-modes coupled with a random phase. Returns M0^(1/2), as RFM uses
    the square root of an AGOP. (The reference code draws v uniform and keeps the real part of
    sqrtm(M0), which likewise drops the negative half of each mode when |l| > 1.)
    """
    if not has_circulant_structure(op, p):
        raise ConfigError(f"random_circulant baseline needs op add/sub/mul/div on Z_p, got {op!r}")
    q = p if op in ("add", "sub") else p - 1
    theta = 2 * math.pi * torch.rand(q, generator=generator, dtype=torch.float64)
    z = torch.polar(torch.ones(q, dtype=torch.float64), theta)
    k = torch.arange(q)
    z = torch.where(k <= (q - k) % q, z, z[(q - k) % q].conj())  # Hermitian: z[-k] = conj z[k]
    z[0] = 0.0
    if q % 2 == 0:
        z[q // 2] = torch.sign(z[q // 2].real) + (z[q // 2].real == 0)  # real, modulus 1
    v = torch.fft.ifft(z).real  # [q]
    B = v[(k[None, :] - k[:, None]) % q]  # circulant: B[r, s] = v[(s - r) mod q]
    if op in ("sub", "div"):
        B = B[:, (-k) % q]  # reflected columns (Hankel in the op's order)
    C = torch.zeros(p, p, dtype=torch.float64)
    if op in ("add", "sub"):
        C = B
    else:
        order = dlog_order(p)
        C[order[:, None], order[None, :]] = B
    A = torch.eye(p, dtype=torch.float64) - 1.0 / p
    M0 = torch.cat([torch.cat([A, C], 1), torch.cat([C.T, A], 1)], 0)
    return psd_power(M0, 0.5)
