"""Fused losses for the MLP and FORGE (the trainer's hot path on CPU and GPU).

    mlp_loss(Ta, Tb, W2, b2, a, b, y, act, chunk, ws)            -> [S]  mean cross-entropy
    forge_loss(Ut, Vt, W, Dec, bias, scale, a, b, y, chunk, ws)   -> [S]  mean cross-entropy
    ident_inv(Ux, Vx, x, e, gx, U, V, W, w_ident, w_inv)           -> FORGE's L_ident, L_inv
    nll_rows_(L, y)                                                -> per-row cross-entropy

Each loss is differentiable with respect to its tensor inputs: the per-element tables (MLP:
Ta = E_a W1_a, Tb = E_b W1_b + b1; FORGE: Ut = E U^T, Vt = E V^T), the output weights, the
decoder. The math is that of the models' `logits` followed by `seed_cross_entropy` (and of the
papers.md algebra losses); what differs is the bookkeeping:

- the forward computes the gradient as it goes, chunk by chunk over the batch, in buffers that
  live in a `Workspace` and are reused every step (on CPU a fresh multi-megabyte tensor costs
  page faults and cold cache lines: measured 1.3 ms of a 2.6 ms batched matmul at Z97, S = 8);
- the softmax is computed once per logit, in base 2 (`exp2`, see softmax_grad2_), in place on
  the logits buffer, which then becomes B times the logits' gradient (1/B is applied to the
  small gradients at the end);
- under torch.no_grad (an eval) only the value is computed: the wrappers pass
  torch.is_grad_enabled() in (a custom Function's ctx.needs_input_grad stays True there);
- autograd saves only the table-sized gradients ([S, n, h], [S, h, n_out], ...), never an
  [S, B, ...] tensor; the backward multiplies them by the incoming per-seed gradient.

The chunk loop bounds memory (A7: 6.35 M pairs) without gradient accumulation in the trainer.
tests/unit/test_fused.py checks values and gradients against autograd through the models.
FORGE's L_assoc, fused in the same way, is in models/assoc.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch


class Workspace:
    """Named scratch buffers, grown on demand and reused across steps (one per model)."""

    def __init__(self) -> None:
        self.bufs: dict[str, torch.Tensor] = {}

    def get(self, name: str, shape: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
        """A contiguous tensor of `shape` (dtype and device of `like`); contents undefined."""
        numel = math.prod(shape)
        buf = self.bufs.get(name)
        if buf is None or buf.numel() < numel or buf.dtype != like.dtype \
                or buf.device != like.device:
            buf = torch.empty(numel, dtype=like.dtype, device=like.device)
            self.bufs[name] = buf
        return buf[:numel].view(shape)


LOG2E, LN2 = 1.0 / math.log(2.0), math.log(2.0)


def _exp2_shifted_(L: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """In place on base-2 logits L [S, c, n]: L <- 2^(L - max L), exponents clamped at
    log2(tiny) (-126 in float32: a probability below 1.2e-38 becomes 1.2e-38).

    y [S, c] or [c]. Returns (the shifted target logit L_y - max L, the row sums), [S, c, 1]
    each, so that the row's cross-entropy is ln 2 * (log2 sum - (L_y - max L)) exactly even
    where p_y underflows.
    """
    floor = math.log2(torch.finfo(L.dtype).tiny)
    L.sub_(L.amax(-1, keepdim=True))  # shift: max 0
    ly = L.gather(-1, y.expand(L.shape[:2]).unsqueeze(-1))  # [S, c, 1]
    L.clamp_min_(floor).exp2_()
    return ly, L.sum(-1, keepdim=True)


def softmax_grad2_(L: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """In place: base-2 logits L = log2(e) * logits [S, c, n] -> softmax(logits) - onehot(y).

    y [S, c]. Returns the per-seed sum over the c rows of the negative log-likelihood (nats),
    [S]. Base 2 because `exp2` is 3x faster than `exp` on CPU (measured, AVX-512) and has no
    slow path for very negative inputs (`exp` below -87.3 is 30x slower); the callers fold
    log2(e) into a small matmul operand, so the scaling costs nothing per logit.
    """
    ly, s = _exp2_shifted_(L, y)
    nll = (s.log2() - ly).sum((1, 2)).mul_(LN2)
    L.mul_(s.reciprocal_())
    idx = y.unsqueeze(-1)
    L.scatter_add_(-1, idx, torch.full(idx.shape, -1.0, dtype=L.dtype, device=L.device))
    return nll


def nll_rows_(L: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-row cross-entropy (nats) of logits L [S, c, n] against y [S, c] or [c], [S, c].

    L is overwritten. The same numbers as F.cross_entropy(reduction="none") to float rounding,
    through exp2 (see softmax_grad2_) and without a second [S, c, n] tensor.
    """
    ly, s = _exp2_shifted_(L.mul_(LOG2E), y)
    return s.log2_().sub_(ly).squeeze(-1).mul_(LN2)


def _output_ce(X: torch.Tensor, W2: torch.Tensor, b2: torch.Tensor, Wt: torch.Tensor,
               y: torch.Tensor, gW: torch.Tensor, gb: torch.Tensor, L: torch.Tensor,
               dX: torch.Tensor) -> torch.Tensor:
    """One chunk through a linear output layer and the cross-entropy, forward and backward.

    Base-2 logits L = X W2 + b2 (W2 = log2(e) W [S, k, n], b2 = log2(e) b [S, 1, n]); L becomes
    B * dlogits in place; accumulates gW += X^T L [S, k, n] and gb += colsum(L) [S, n]; writes
    dX = L Wt (Wt = W^T, unscaled, [S, n, k]). Returns the per-seed nll sum over the chunk [S].
    """
    torch.bmm(X, W2, out=L).add_(b2)
    nll = softmax_grad2_(L, y)
    gW.baddbmm_(X.transpose(1, 2), L)
    gb += L.sum(1)
    torch.bmm(L, Wt, out=dX)
    return nll


def _pairs(T1: torch.Tensor, T2: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
           y: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Setup of a pair loss over the tables T1 (rows for a) and T2 (rows for b), [S, n, k]:
    (flat indices of a and of b into [S n, k], y as [S, B], T1 and T2 flattened to [S n, k], and
    zero gradients for the flat tables)."""
    S, n, k = T1.shape
    B = y.shape[-1]
    flat = T1.reshape(S * n, k), T2.reshape(S * n, k)
    return (seed_index(a, S, B, n), seed_index(b, S, B, n), y.expand(S, B), *flat,
            *(torch.zeros_like(t) for t in flat))


def seed_index(a: torch.Tensor, S: int, B: int, n: int) -> torch.Tensor:
    """Indices into a table flattened to [S * n, k]: row a[s, i] of seed s. a [S, B] or [B]."""
    a = a.expand(S, B)
    return a + (torch.arange(S, device=a.device) * n)[:, None]


def add_rows(acc: torch.Tensor, idx: torch.Tensor, src: torch.Tensor,
              by_sort: bool | None = None) -> None:
    """acc[idx[r]] += src[r] for every row r (repeated indices add up). acc [N, k].

    On CPU `index_add_` (sequential, deterministic); on CUDA its atomics make the sum order vary
    run to run, so there (by_sort) the embedding backward (sort-based, deterministic) does it.
    """
    if by_sort is None:
        by_sort = acc.device.type != "cpu"
    if not by_sort:
        acc.index_add_(0, idx, src)
    else:
        acc += torch.ops.aten.embedding_dense_backward(src, idx, acc.shape[0], -1, False)


def scale_grads(grads: tuple[torch.Tensor, ...], g: torch.Tensor) -> list[torch.Tensor]:
    """Each gradient [S, ...] times the incoming per-seed gradient g [S] (already over B)."""
    return [t * g.view(-1, *([1] * (t.dim() - 1))) for t in grads]


class _MLPLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Ta, Tb, W2, b2, a, b, y, act, chunk, ws):  # noqa: D102
        S, n, h = Ta.shape
        B = y.shape[-1]
        ia, ib, y, Ta2, Tb2, gTa, gTb = _pairs(Ta, Tb, a, b, y)
        gW2, gb2 = torch.zeros_like(W2), torch.zeros_like(b2)
        nll = torch.zeros(S, dtype=Ta.dtype, device=Ta.device)
        W2t = W2.transpose(1, 2)
        W2L, b2L = W2 * LOG2E, (b2 * LOG2E)[:, None, :]  # base-2 logits (softmax_grad2_)
        relu = act is torch.relu
        for i in range(0, B, chunk):
            c = min(chunk, B - i)
            ja, jb = ia[:, i:i + c].reshape(-1), ib[:, i:i + c].reshape(-1)
            H, tmp = ws.get("h", (S, c, h), Ta), ws.get("h2", (S, c, h), Ta)
            torch.index_select(Ta2, 0, ja, out=H.view(S * c, h))
            torch.index_select(Tb2, 0, jb, out=tmp.view(S * c, h))
            if relu:  # add and relu in one pass (aten's fused _add_relu_), in place on H
                Z = torch.ops.aten._add_relu_.Tensor(H, tmp)
            else:
                H.add_(tmp)  # pre-activation [S, c, h]
                pre = H.detach().requires_grad_()
                with torch.enable_grad():
                    Z = act(pre)
            L, dZ = ws.get("logits", (S, c, W2.shape[2]), Ta), ws.get("dz", (S, c, h), Ta)
            nll += _output_ce(Z, W2L, b2L, W2t, y[:, i:i + c], gW2, gb2, L, dZ)
            if relu:  # relu' = 1 where the output is > 0: one pass
                torch.ops.aten.threshold_backward.grad_input(dZ, Z, 0.0, grad_input=dZ)
            else:
                dZ = torch.autograd.grad(Z, pre, dZ)[0]
            dZ = dZ.reshape(S * c, h)
            add_rows(gTa, ja, dZ)
            add_rows(gTb, jb, dZ)
        ctx.save_for_backward(gTa.view(S, n, h), gTb.view(S, n, h), gW2, gb2)
        ctx.B = B
        return nll / B

    @staticmethod
    def backward(ctx, g):  # noqa: D102
        return (*scale_grads(ctx.saved_tensors, g / ctx.B), None, None, None, None, None, None)


class _ForgeLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Ut, Vt, W, Dec, bias, scale, a, b, y, chunk, ws):  # noqa: D102
        S, n, R = Ut.shape
        d, n_out = W.shape[1], Dec.shape[1]
        B = y.shape[-1]
        ia, ib, y, Ut2, Vt2, gUt, gVt = _pairs(Ut, Vt, a, b, y)
        gW, gbias = torch.zeros_like(W), torch.zeros_like(bias)
        gDecT = Dec.new_zeros(S, d, n_out)  # the decoder gradient, transposed
        nll = torch.zeros(S, dtype=Ut.dtype, device=Ut.device)
        Wt, DecT = W.transpose(1, 2), (Dec * LOG2E).transpose(1, 2)  # base-2 logits
        bias2 = (bias * LOG2E)[:, None, :]
        for i in range(0, B, chunk):
            c = min(chunk, B - i)
            ja, jb = ia[:, i:i + c].reshape(-1), ib[:, i:i + c].reshape(-1)
            u, v, m = (ws.get(k, (S, c, R), Ut) for k in ("u", "v", "m"))
            torch.index_select(Ut2, 0, ja, out=u.view(S * c, R))  # U x
            torch.index_select(Vt2, 0, jb, out=v.view(S * c, R))  # V y
            torch.mul(u, v, out=m)
            z = ws.get("z", (S, c, d), Ut)
            torch.bmm(m, Wt, out=z)  # mu(x, y) [S, c, d]
            if scale != 1.0:
                z.mul_(scale)  # scale * mu: the scale on the small side
            L, dz = ws.get("logits", (S, c, n_out), Ut), ws.get("dz", (S, c, d), Ut)
            nll += _output_ce(z, DecT, bias2, Dec, y[:, i:i + c], gDecT, gbias, L, dz)
            if scale != 1.0:
                dz.mul_(scale)
            gW.baddbmm_(dz.transpose(1, 2), m)
            torch.bmm(dz, W, out=m)  # m is now dL/d(u * v)
            add_rows(gUt, ja, v.mul_(m).view(S * c, R))  # dL/du = dm * v
            add_rows(gVt, jb, u.mul_(m).view(S * c, R))  # dL/dv = dm * u
        gDec = gDecT.transpose(1, 2)
        ctx.save_for_backward(gUt.view(S, n, R), gVt.view(S, n, R), gW, gDec, gbias)
        ctx.B = B
        return nll / B

    @staticmethod
    def backward(ctx, g):  # noqa: D102
        gUt, gVt, gW, gDec, gbias = scale_grads(ctx.saved_tensors, g / ctx.B)
        return gUt, gVt, gW, gDec, gbias, None, None, None, None, None, None


class _IdentInv(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Ux, Vx, x, e, gx, U, V, W, w_ident, w_inv, grad):  # noqa: D102
        S, n, R = Ux.shape
        d = x.shape[2]
        Ut_, Vt_ = U.transpose(1, 2), V.transpose(1, 2)  # [S, d, R]
        Ue, Ve = torch.bmm(e[:, None, :], Ut_), torch.bmm(e[:, None, :], Vt_)  # [S, 1, R]
        Ug, Vg = torch.bmm(gx, Ut_), torch.bmm(gx, Vt_)  # [S, n, R]
        Q = torch.empty(S, 4, n, R, dtype=Ux.dtype, device=Ux.device)
        torch.mul(Ue, Vx, out=Q[:, 0])  # mu(e, x)    before W
        torch.mul(Ux, Ve, out=Q[:, 1])  # mu(x, e)
        torch.mul(Ux, Vg, out=Q[:, 2])  # mu(x, g(x))
        torch.mul(Ug, Vx, out=Q[:, 3])  # mu(g(x), x)
        r = torch.bmm(Q.view(S, 4 * n, R), W.transpose(1, 2)).view(S, 4, n, d)
        r[:, :2] -= x[:, None]
        r[:, 2:] -= e[:, None, None, :]
        sq = torch.linalg.vecdot(r, r).sum(-1)  # [S, 4]
        ident, inv = (sq[:, 0] + sq[:, 1]) / n, (sq[:, 2] + sq[:, 3]) / n
        total = w_ident * ident + w_inv * inv
        ctx.mark_non_differentiable(ident, inv)
        if not grad or not any(ctx.needs_input_grad[:8]):
            return total, ident, inv
        coef = torch.tensor([w_ident, w_ident, w_inv, w_inv], dtype=r.dtype, device=r.device)
        dr = r.mul_(coef.view(1, 4, 1, 1) * (2.0 / n))
        gW = torch.bmm(dr.view(S, 4 * n, d).transpose(1, 2), Q.view(S, 4 * n, R))
        dQ = torch.bmm(dr.view(S, 4 * n, d), W).view(S, 4, n, R)
        gx_ = -(dr[:, 0] + dr[:, 1])  # d/dx of the "- x" targets [S, n, d]
        ge = -(dr[:, 2] + dr[:, 3]).sum(1)  # [S, d]
        dUe = (dQ[:, 0] * Vx).sum(1, keepdim=True)  # [S, 1, R]
        dVe = (dQ[:, 1] * Ux).sum(1, keepdim=True)
        gVx = dQ[:, 0] * Ue + dQ[:, 3] * Ug
        gUx = dQ[:, 1] * Ve + dQ[:, 2] * Vg
        dVg, dUg = dQ[:, 2] * Ux, dQ[:, 3] * Vx
        ge += (torch.bmm(dUe, U) + torch.bmm(dVe, V))[:, 0]
        ggx = torch.bmm(dUg, U) + torch.bmm(dVg, V)
        gU = torch.bmm(dUe.transpose(1, 2), e[:, None, :]) + torch.bmm(dUg.transpose(1, 2), gx)
        gV = torch.bmm(dVe.transpose(1, 2), e[:, None, :]) + torch.bmm(dVg.transpose(1, 2), gx)
        ctx.save_for_backward(gUx, gVx, gx_, ge, ggx, gU, gV, gW)
        return total, ident, inv

    @staticmethod
    def backward(ctx, g, _gi, _gv):  # noqa: D102
        return (*scale_grads(ctx.saved_tensors, g), None, None, None)


def ident_inv(Ux: torch.Tensor, Vx: torch.Tensor, x: torch.Tensor, e: torch.Tensor,
              gx: torch.Tensor, U: torch.Tensor, V: torch.Tensor, W: torch.Tensor,
              w_ident: float, w_inv: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """FORGE's identity and inverse losses, fused: (w_ident L_ident + w_inv L_inv, L_ident,
    L_inv), each [S]; only the first is differentiable.

    L_ident = mean |mu(e,x) - x|^2 + mean |mu(x,e) - x|^2, L_inv = mean |mu(x,g(x)) - e|^2 +
    mean |mu(g(x),x) - e|^2 over the rows of x [S, n, d]; Ux = x U^T, Vx = x V^T [S, n, R];
    e [S, d]; gx = g_phi(x) [S, n, d] (its own gradient flows back through autograd); U, V
    [S, R, d]; W [S, d, R]. The four products share one GEMM through W.
    """
    return _IdentInv.apply(Ux, Vx, x, e, gx, U, V, W, float(w_ident), float(w_inv),
                           torch.is_grad_enabled())


def mlp_loss(Ta: torch.Tensor, Tb: torch.Tensor, W2: torch.Tensor, b2: torch.Tensor,
             a: torch.Tensor, b: torch.Tensor, y: torch.Tensor,
             act: Callable[[torch.Tensor], torch.Tensor], chunk: int,
             ws: Workspace) -> torch.Tensor:
    """Mean cross-entropy per seed of logits act(Ta[a] + Tb[b]) W2 + b2.

    Ta, Tb [S, n, h]; W2 [S, h, n_out]; b2 [S, n_out]; a, b, y [S, B] or [B]; chunk pairs per
    step of the loop. Returns [S].
    """
    return _MLPLoss.apply(Ta, Tb, W2, b2, a, b, y, act, max(1, chunk), ws)


def forge_loss(Ut: torch.Tensor, Vt: torch.Tensor, W: torch.Tensor, Dec: torch.Tensor,
               bias: torch.Tensor, scale: float, a: torch.Tensor, b: torch.Tensor,
               y: torch.Tensor, chunk: int, ws: Workspace) -> torch.Tensor:
    """Mean cross-entropy per seed of logits scale * (W (Ut[a] * Vt[b])) . Dec^T + bias.

    Ut, Vt [S, n, R]; W [S, d, R]; Dec [S, n_out, d]; bias [S, n_out]; a, b, y [S, B] or [B].
    Returns [S].
    """
    return _ForgeLoss.apply(Ut, Vt, W, Dec, bias, float(scale), a, b, y, max(1, chunk), ws)
