"""FORGE's associativity loss L_assoc: every form of it, the table of exact forms, the rule.

    L_assoc = mean over triples (i, j, k) of |mu(m_ij, x_k) - mu(x_i, m_jk)|^2,
    mu(x, y) = W((U x) * (V y)) (U, V [R, d], W [d, R]),  x_i = E[i],  m_ij = mu(x_i, x_j)

over all n^3 triples of the n elements (exact; FORGE while |G| <= forge.alg_full_max) or over
sampled triples (`assoc_sampled`, above it). The exact loss has four forms, equal in value and
gradient (float64 tests against the triple-by-triple `assoc_naive`, the reference):

    direct          R-space, term by term, sharing the n^2 products m_ij:    O(n^3 R d)
    gram            R-space, the sums over triples as small Gram matrices:    O(n^2 R^2)
    tensor_direct   through the structure tensor T (below), term by term:     O(n^3 d^2)
    tensor_gram     through T and the Gram matrix G = E^T E alone:            O(d^5), any n

The d-space forms use that mu is a bilinear map on R^d with structure tensor T in R^{d x d x d},

    T[e, a, c] = sum_p W[e, p] U[p, a] V[p, c],      mu(x, y)_e = sum_{a,c} T[e, a, c] x_a y_c:

forming T costs d^3 R once, and nothing after it depends on the rank R (at d 32, R 256 the
term-by-term d-space form does 8x fewer multiply-adds than the R-space one). The term-by-term
forms and the d-space Gram form's cross term compute their gradients in the forward, as few
well-shaped GEMMs, in buffers of a `Workspace` (as models/fused.py does for the data loss); the
d-space forms take the seeds in cache-sized passes; the rest is autograd.

`FORMS` is the table: per form its function, its modelled cost, its GEMM multiply-adds and its
term-by-term buffer; `assoc_form` picks the cheapest form whose buffer fits `DIRECT_ASSOC_MAX`,
and `assoc_exact` computes the loss in it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from grokray.models import gather_rows
from grokray.models.fused import Workspace, add_rows, scale_grads, seed_index


def dad(x: torch.Tensor, y: torch.Tensor, U: torch.Tensor, V: torch.Tensor,
        W: torch.Tensor) -> torch.Tensor:
    """The DAD product mu(x, y) = W((U x) * (V y)). x, y [S, M, d] -> [S, M, d]."""
    return torch.bmm(torch.bmm(x, U.transpose(1, 2)) * torch.bmm(y, V.transpose(1, 2)),
                     W.transpose(1, 2))


def assoc_naive(E: torch.Tensor, U: torch.Tensor, V: torch.Tensor, W: torch.Tensor,
                i: torch.Tensor | None = None, j: torch.Tensor | None = None,
                k: torch.Tensor | None = None) -> torch.Tensor:
    """L_assoc triple by triple through `dad` and autograd, [S]: the reference of the tests.
    Over all n^3 triples, or over the given per-seed triples i, j, k [S, m]."""
    S, n, d = E.shape
    if i is None:
        i, j, k = torch.cartesian_prod(*(torch.arange(n, device=E.device),) * 3).T
        x, y, z = E[:, i], E[:, j], E[:, k]
    else:
        x, y, z = gather_rows(E, i), gather_rows(E, j), gather_rows(E, k)
    return sqnorm(dad(dad(x, y, U, V, W), z, U, V, W) - dad(x, dad(y, z, U, V, W), U, V, W))


def sqnorm(v: torch.Tensor) -> torch.Tensor:
    """Mean over the middle dim of the squared L2 norm over the last. [S, M, d] -> [S]."""
    return v.square().sum(-1).mean(-1)


# ---------------------------------------------------------------------- R-space forms
# Arguments of every exact form: E [S, n, d]; U, V [S, R, d]; W [S, d, R]; the tables
# Ut = E U^T, Vt = E V^T [S, n, R] (U x and V x of every element); a Workspace. Returns [S].


def assoc_direct(E: torch.Tensor, U: torch.Tensor, V: torch.Tensor, W: torch.Tensor,
                 Ut: torch.Tensor, Vt: torch.Tensor, ws: Workspace) -> torch.Tensor:
    """Term by term, sharing the n^2 products m_ij: the difference before W,
    (U m_ij) * (V x_k) - (U x_i) * (V m_jk), for every triple, then one GEMM through W; the
    gradient is computed in the forward (3 GEMMs of n^3 x R x d, the reductions over i, j, k as
    products summed over a middle dim, buffers reused). O(n^3 R d): for small groups."""
    return _AssocAll.apply(Ut, Vt, U, V, W, ws, torch.is_grad_enabled())


class _AssocAll(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Ut, Vt, U, V, W, ws, grad):  # noqa: D102
        S, n, R = Ut.shape
        d, N = W.shape[1], n**3
        Wt = W.transpose(1, 2)
        P = torch.mul(Ut[:, :, None, :], Vt[:, None], out=ws.get("aP", (S, n, n, R), Ut))
        P2 = P.view(S, n * n, R)  # (U x_i) * (V x_j)
        M = torch.bmm(P2, Wt)  # m_ij = mu(x_i, x_j) [S, n n, d]
        UM, VM = torch.bmm(M, U.transpose(1, 2)), torch.bmm(M, V.transpose(1, 2))  # [S, n n, R]
        UM4, VM4 = UM.view(S, n, n, 1, R), VM.view(S, 1, n, n, R)
        Vk, Ui = Vt.view(S, 1, 1, n, R), Ut.view(S, n, 1, 1, R)
        D = torch.mul(UM4, Vk, out=ws.get("aD", (S, n, n, n, R), Ut))  # (U m_ij) * (V x_k)
        D.addcmul_(Ui, VM4, value=-1.0)  # - (U x_i) * (V m_jk)
        r = torch.bmm(D.view(S, N, R), Wt, out=ws.get("ar", (S, N, d), Ut))
        rf = r.view(S, -1)
        loss = torch.linalg.vecdot(rf, rf) / N
        if not grad or not any(ctx.needs_input_grad[:5]):
            return loss
        dr = r.mul_(2.0 / N)
        gW = torch.bmm(dr.transpose(1, 2), D.view(S, N, R))
        dD = torch.bmm(dr, W, out=D.view(S, N, R)).view(S, n, n, n, R)
        tmp = ws.get("aT", (S, n, n, n, R), Ut)
        dUM = torch.mul(dD, Vk, out=tmp).sum(3)  # [S, n, n, R]: sum_k dD_ijk * V x_k
        dVt = torch.mul(dD, UM4, out=tmp).sum((1, 2))  # [S, n, R]
        dUt = torch.mul(dD, VM4, out=tmp).sum((2, 3)).neg_()
        dVM = torch.mul(dD, Ui, out=tmp).sum(1).neg_()  # [S, n, n, R] over (j, k)
        dUM, dVM = dUM.view(S, n * n, R), dVM.view(S, n * n, R)
        dM = torch.bmm(dUM, U).baddbmm_(dVM, V)  # [S, n n, d]
        gU, gV = torch.bmm(dUM.transpose(1, 2), M), torch.bmm(dVM.transpose(1, 2), M)
        gW.baddbmm_(dM.transpose(1, 2), P2)
        dP = torch.bmm(dM, W).view(S, n, n, R)
        dUt += torch.mul(dP, Vt[:, None], out=P).sum(2)
        dVt += torch.mul(dP, Ut[:, :, None], out=P).sum(1)
        ctx.save_for_backward(dUt, dVt, gU, gV, gW)
        return loss

    @staticmethod
    def backward(ctx, g):  # noqa: D102
        return (*scale_grads(ctx.saved_tensors, g), None, None)


def assoc_gram(E: torch.Tensor, U: torch.Tensor, V: torch.Tensor, W: torch.Tensor,
               Ut: torch.Tensor, Vt: torch.Tensor, ws: Workspace) -> torch.Tensor:
    """Through Gram matrices (autograd): both sides end in W, so each term is
    |W(l - r)|^2 = (l - r)^T Q (l - r), Q = W^T W, with l_ijk = (U m_ij) * (V x_k) and
    r_ijk = (U x_i) * (V m_jk). The sums over triples factor into small Gram matrices
    (G_M = sum_ij m_ij m_ij^T, G_X = E^T E):
        sum l'Ql = <Q, (U G_M U^T) * (V G_X V^T)>,  sum r'Qr = <Q, (U G_X U^T) * (V G_M V^T)>,
        sum l'Qr = sum_j <Q, A_j * B_j>,  A_j = sum_i (U m_ij)(U x_i)^T,
                                          B_j = sum_k (V x_k)(V m_jk)^T,
    with A_j, B_j formed either from the [n^2, R] products U m, V m (O(n^2 R^2) work) or, when
    cheaper (n > d), as U C_j U^T with C_j = sum_i m_ij x_i^T in R^{d x d} (O(n^2 d^2 +
    n R^2 d)). Either way O(n^2 R d) at most instead of n^3 R d."""
    S, n, R = Ut.shape
    d = E.shape[2]
    M = _all_pairs(Ut, Vt, W)  # [S, n n, d]
    Mv = M.view(S, n, n, d)  # [s, i, j]: m_ij
    Q = torch.bmm(W.transpose(1, 2), W)  # [S, R, R]
    GM = torch.bmm(M.transpose(1, 2), M)  # [S, d, d]
    GX = torch.bmm(E.transpose(1, 2), E)
    ll = (Q * _sandwich(U, GM) * _sandwich(V, GX)).sum((1, 2))  # sum_ijk l'Ql
    rr = (Q * _sandwich(U, GX) * _sandwich(V, GM)).sum((1, 2))  # sum_ijk r'Qr
    if n > d:
        # sum_j <Q * A_j, B_j> with A_j = U C_j U^T, B_j = V D_j V^T equals
        # sum_j <V^T (Q * A_j) V, D_j>: B_j is never formed
        Ct = torch.einsum("sie,sijf->sjef", E, Mv).reshape(S, n * d, d)  # rows: C_j^T
        Yt = _sandwich_t(U, Ct) * Q.transpose(1, 2)[:, :, None, :]  # [a, j, b] = (Q * A_j)[b, a]
        P = torch.bmm(Yt.view(S, R * n, R), V)  # [b, j, e] = ((Q * A_j)^T V)[b, e]
        Zt = torch.bmm(V.transpose(1, 2), P.view(S, R, n * d))
        Zt = Zt.view(S, d, n, d)  # [f, j, e] = Z_j[e, f]
        D = torch.einsum("sjkf,ske->sjfe", Mv, E)  # [j, f, e] = D_j[e, f]
        lr = (Zt.permute(0, 2, 1, 3) * D).sum((1, 2, 3))
    else:
        # batched GEMMs over j in contiguous layouts (an einsum permutes and copies [S, n, R,
        # R] tensors: the cross term fwd + bwd at S = 8, A4 21 vs 8 ms, S4 37 vs 27)
        Mt = Mv.transpose(1, 2).reshape(S, n * n, d)  # rows (j, i): m_ij
        UMt = torch.bmm(Mt, U.transpose(1, 2)).view(S, n, n, R)  # [s, j, i]: U m_ij
        VM = torch.bmm(M, V.transpose(1, 2)).view(S, n, n, R)  # [s, j, k]: V m_jk
        A = torch.matmul(UMt.transpose(2, 3), Ut[:, None])  # A_j = sum_i (U m_ij)(U x_i)^T
        B = torch.matmul(Vt.transpose(1, 2)[:, None], VM)  # B_j = sum_k (V x_k)(V m_jk)^T
        lr = (Q * (A * B).sum(1)).sum((1, 2))  # sum_ijk l'Qr
    return (ll + rr - 2.0 * lr) / n**3


def _all_pairs(Ut: torch.Tensor, Vt: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """m_ij = mu(x_i, x_j) for all n^2 pairs, [S, n n, d] (row i n + j), as one GEMM
    Ut @ [Vt_j (.) W^T]_j: no [n, n, R] product tensor."""
    S, n, R = Ut.shape
    WV = (Vt.transpose(1, 2)[:, :, :, None] * W.transpose(1, 2)[:, :, None, :])
    return torch.bmm(Ut, WV.reshape(S, R, n * W.shape[1])).view(S, n * n, W.shape[1])


def _sandwich(A: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """A G A^T over the leading (broadcast) dims: A [..., R, d], G [..., d, d] -> [..., R, R]."""
    return torch.matmul(torch.matmul(A, G), A.transpose(-1, -2))


def _sandwich_t(U: torch.Tensor, Ct: torch.Tensor) -> torch.Tensor:
    """(U C_j U^T)^T for every j in two large GEMMs: U [S, R, d]; Ct [S, n d, d] holding C_j^T in
    rows j d .. j d + d - 1. Returns [S, R, n, R] with out[s, a, j, b] = (U C_j U^T)[b, a]."""
    S, R, d = U.shape
    n = Ct.shape[1] // d
    Tt = torch.bmm(Ct, U.transpose(1, 2))  # [S, n d, R]: block j is C_j^T U^T
    Tt = Tt.view(S, n, d, R).transpose(1, 2).reshape(S, d, n * R)
    return torch.bmm(U, Tt).view(S, R, n, R)  # block j: U C_j^T U^T = (U C_j U^T)^T


# ---------------------------------------------------------------------- d-space forms


def structure_tensor(U: torch.Tensor, V: torch.Tensor, W: torch.Tensor,
                     ws: Workspace | None = None) -> torch.Tensor:
    """T [S, d, d, d] with T[s, e, a, c] = sum_p W[s, e, p] U[s, p, a] V[s, p, c].

    U, V [S, R, d]; W [S, d, R]. One GEMM [d, R] x [R, d d] per seed; the backward is two such
    GEMMs and two batched [1, d] x [d, d] products (autograd through the broadcast product was
    10x the forward: its reductions over [S, R, d, d])."""
    return _Structure.apply(U, V, W, ws if ws is not None else Workspace())


class _Structure(torch.autograd.Function):
    @staticmethod
    def forward(ctx, U, V, W, ws):  # noqa: D102
        S, R, d = U.shape
        UV = torch.mul(U[:, :, :, None], V[:, :, None, :], out=ws.get("sUV", (S, R, d, d), U))
        T = torch.bmm(W, UV.view(S, R, d * d)).view(S, d, d, d)
        ctx.save_for_backward(U, V, W)
        ctx.ws = ws
        return T

    @staticmethod
    def backward(ctx, gT):  # noqa: D102
        U, V, W = ctx.saved_tensors
        S, R, d = U.shape
        ws = ctx.ws
        gT = gT.reshape(S, d, d * d)
        UV = torch.mul(U[:, :, :, None], V[:, :, None, :], out=ws.get("sUV", (S, R, d, d), U))
        gW = torch.bmm(gT, UV.view(S, R, d * d).transpose(1, 2))
        gUV = torch.bmm(W.transpose(1, 2), gT, out=UV.view(S, R, d * d)).view(S * R, d, d)
        gU = torch.bmm(V.reshape(S * R, 1, d), gUV.transpose(1, 2)).view(S, R, d)
        gV = torch.bmm(U.reshape(S * R, 1, d), gUV).view(S, R, d)
        return gU, gV, gW, None


def element_maps(E: torch.Tensor, U: torch.Tensor, V: torch.Tensor, W: torch.Tensor,
                 ws: Workspace, from_tables: bool | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """(P, Rm): the left and right multiplication maps of every element, as `left_maps` and
    `right_maps` return them.

    From T (`from_tables` False; d^3 R, then n d^3 each): `structure_tensor`, `left_maps`,
    `right_maps` (autograd; a fused version of this route built T directly in the maps' layout
    and ran 5-15% slower, S = 3 and 8, 16-32 elements). From the tables E U^T, E V^T (True;
    O(n R d^2), no T; `_Maps`, a hand-written backward of GEMMs and elementwise passes, 1.2-1.4x
    autograd's at 12 elements): P[(i, e), c] = sum_p (U x_i)_p W[e, p] V[p, c] and Rm[a, (e, k)]
    = sum_p U[p, a] W[e, p] (V x_k)_p. Default: the tables while 2 n < d."""
    if from_tables is None:
        from_tables = 2 * E.shape[1] < E.shape[2]
    if not from_tables:
        T = structure_tensor(U, V, W, ws)
        return left_maps(E, T), right_maps(E, T)
    return _Maps.apply(E, U, V, W, ws)


class _Maps(torch.autograd.Function):
    """`element_maps` from the tables."""

    @staticmethod
    def forward(ctx, E, U, V, W, ws):  # noqa: D102
        S, n, d = E.shape
        R = U.shape[1]
        ctx.ws = ws
        Wt = W.transpose(1, 2)  # [S, R, d]
        Ut, Vt = torch.bmm(E, U.transpose(1, 2)), torch.bmm(E, V.transpose(1, 2))  # [S, n, R]
        UW = torch.mul(Ut[:, :, None, :], W[:, None], out=ws.get("mUW", (S, n, d, R), E))
        P = torch.bmm(UW.view(S, n * d, R), V)  # [S, (i, e), c]
        WV = torch.mul(Vt.transpose(1, 2)[:, :, :, None], Wt[:, :, None, :],
                       out=ws.get("mWV", (S, R, n, d), E))  # [p, k, e]: inner dim d, not n
        Rm = torch.bmm(U.transpose(1, 2), WV.view(S, R, n * d))  # [S, a, (k, e)]
        Rm = Rm.view(S, d, n, d).transpose(2, 3).reshape(S, d, d * n)  # [S, a, (e, k)]
        ctx.save_for_backward(E, U, V, W, Ut, Vt)
        return P, Rm

    @staticmethod
    def backward(ctx, gP, gRm):  # noqa: D102
        ws = ctx.ws
        E, U, V, W, Ut, Vt = ctx.saved_tensors
        S, n, d = E.shape
        R = U.shape[1]
        # P = UW V with UW[(i, e), p] = Ut[i, p] W[e, p]
        UW = torch.mul(Ut[:, :, None, :], W[:, None], out=ws.get("mUW", (S, n, d, R), E))
        gV = torch.bmm(UW.view(S, n * d, R).transpose(1, 2), gP)
        gUW = torch.bmm(gP, V.transpose(1, 2), out=UW.view(S, n * d, R)).view(S, n, d, R)
        gW = torch.mul(gUW, Ut[:, :, None, :]).sum(1)  # [S, e, p]
        gUt = gUW.mul_(W[:, None]).sum(2)  # [S, i, p]
        # Rm = U^T WV with WV[p, (k, e)] = Vt[k, p] W[e, p], then (k, e) -> (e, k)
        Wt, VtT = W.transpose(1, 2), Vt.transpose(1, 2)  # [S, R, d], [S, R, n]
        gRm = gRm.reshape(S, d, d, n).transpose(2, 3).reshape(S, d, n * d)  # [S, a, (k, e)]
        WV = torch.mul(VtT[:, :, :, None], Wt[:, :, None, :], out=ws.get("mWV", (S, R, n, d), E))
        gU = torch.bmm(WV.view(S, R, n * d), gRm.transpose(1, 2))  # [S, p, a]
        gWV = torch.bmm(U, gRm, out=WV.view(S, R, n * d)).view(S, R, n, d)  # [S, p, k, e]
        gW += torch.matmul(VtT[:, :, None, :], gWV).view(S, R, d).transpose(1, 2)
        gVt = torch.matmul(gWV, Wt[:, :, :, None]).view(S, R, n).transpose(1, 2)  # [S, k, p]
        # the tables: Ut = E U^T, Vt = E V^T
        gE = torch.bmm(gUt, U).baddbmm_(gVt, V)
        gU.baddbmm_(gUt.transpose(1, 2), E)
        gV.baddbmm_(gVt.transpose(1, 2), E)
        return gE, gU, gV, gW, None


def left_maps(E: torch.Tensor, T: torch.Tensor) -> torch.Tensor:
    """P [S, n d, d]: rows (i, e), P[s, (i, e), c] = sum_a T[e, a, c] x_ia (mu(x_i, .) as a
    matrix, stacked over i)."""
    S, n, d = E.shape
    Ta = T.permute(0, 2, 1, 3).reshape(S, d, d * d)  # [a, (e, c)]
    return torch.bmm(E, Ta).view(S, n * d, d)


def right_maps(E: torch.Tensor, T: torch.Tensor) -> torch.Tensor:
    """Rm [S, d, d n]: Rm[s, a, (e, k)] = sum_c T[e, a, c] x_kc (mu(., x_k) as a matrix,
    transposed, stacked over k)."""
    S, n, d = E.shape
    Tc = T.transpose(1, 2).reshape(S, d * d, d)  # [(a, e), c]
    return torch.bmm(Tc, E.transpose(1, 2)).view(S, d, d * n)


def all_products(E: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
    """M [S, n, n, d]: M[s, i, j] = mu(x_i, x_j) = P_i x_j. P from `left_maps`."""
    S, n, d = E.shape
    M = torch.bmm(P, E.transpose(1, 2)).view(S, n, d, n)  # [(i, e), c] x [c, j] -> [i, e, j]
    return M.transpose(2, 3)


CORE_CHUNK_BYTES = 1 << 22
"""On CPU, seeds per pass of `assoc_tensor_direct`'s core and of `assoc_tensor_gram`'s cross
term: as many as keep their buffers ([n^3 d] x 2, [d^4] x 3 per seed) within about 4 MiB
(cache-resident; measured at S = 8: one seed per pass from 24 elements, all 8 up to 12). On a
GPU every seed in one pass."""


def _seeds_per_pass(S: int, per_seed: int, like: torch.Tensor) -> int:
    """Seeds per pass for buffers of `per_seed` elements per seed (see CORE_CHUNK_BYTES)."""
    if like.device.type != "cpu":
        return S
    return max(1, CORE_CHUNK_BYTES // (per_seed * like.element_size()))


def assoc_tensor_direct(E: torch.Tensor, U: torch.Tensor, V: torch.Tensor, W: torch.Tensor,
                        Ut: torch.Tensor, Vt: torch.Tensor, ws: Workspace) -> torch.Tensor:
    """Term by term from the maps P (`left_maps`), Rm (`right_maps`) of the elements
    (`element_maps`: from the tables while 2 n < d, else from T): l_ijk = Rm_k m_ij and
    r_ijk = P_i m_jk as one GEMM of n^3 d^2 each per seed, l in the layout (j, i, e, k)
    ([n^2, d] x [d, n d]) and r in (i, e, j, k) ([n d, d] x [d, n^2]); the difference is formed
    in the first and copied to the second, and the gradient is computed in the forward as four
    GEMMs of the same shapes (no batched products over a small dimension)."""
    P, Rm = element_maps(E, U, V, W, ws)
    M = all_products(E, P)  # [S, i, j, e]
    return _AssocCore.apply(M.transpose(1, 2), M, P, Rm, ws, torch.is_grad_enabled())


class _AssocCore(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Mt, M, P, Rm, ws, grad):  # noqa: D102
        S, n, _, d = M.shape
        N = n**3
        need = grad and any(ctx.needs_input_grad[:4])
        Mtf = Mt.reshape(S, n * n, d)  # rows (j, i): m_ij
        Mf = M.reshape(S, n * n, d)  # rows (j, k): m_jk
        loss = M.new_empty(S)
        if need:
            gMt, gMT = M.new_empty(S, n * n, d), M.new_empty(S, d, n * n)
            gP, gRm = torch.empty_like(P), torch.empty_like(Rm)
        c = 2.0 / N
        step = _seeds_per_pass(S, 2 * N * d, M)
        for s0 in range(0, S, step):
            sl = slice(s0, min(S, s0 + step))
            b = sl.stop - s0
            D1 = ws.get("tD1", (b, n * n, d * n), M)  # (j, i), (e, k)
            D2 = ws.get("tD2", (b, n * d, n * n), M)  # (i, e), (j, k)
            torch.bmm(Mtf[sl], Rm[sl], out=D1)  # l: (Rm_k m_ij)_e
            torch.bmm(P[sl], Mf[sl].transpose(1, 2), out=D2)  # r: (P_i m_jk)_e
            D1v = D1.view(b, n, n, d, n)
            D1v.sub_(D2.view(b, n, d, n, n).permute(0, 3, 1, 2, 4))  # l - r
            Df = D1.view(b, -1)
            loss[sl] = torch.linalg.vecdot(Df, Df) / N
            if not need:
                continue
            D2.view(b, n, d, n, n).copy_(D1v.permute(0, 2, 3, 1, 4))  # l - r in r's layout
            torch.bmm(D1, Rm[sl].transpose(1, 2), out=gMt[sl])
            torch.bmm(Mtf[sl].transpose(1, 2), D1, out=gRm[sl])
            torch.bmm(D2, Mf[sl], out=gP[sl])
            torch.bmm(P[sl].transpose(1, 2), D2, out=gMT[sl])
        if not need:
            return loss
        gMt, gRm = gMt.view(S, n, n, d).mul_(c), gRm.mul_(c)
        gM = gMT.mul_(-c).view(S, d, n, n).permute(0, 2, 3, 1)  # [S, j, k, c]
        ctx.save_for_backward(gMt, gM, gP.mul_(-c), gRm)
        return loss

    @staticmethod
    def backward(ctx, g):  # noqa: D102
        return (*scale_grads(ctx.saved_tensors, g), None, None)


def assoc_tensor_gram(E: torch.Tensor, U: torch.Tensor, V: torch.Tensor, W: torch.Tensor,
                      Ut: torch.Tensor, Vt: torch.Tensor, ws: Workspace) -> torch.Tensor:
    """From T and the Gram matrix G = E^T E alone: every sum over the elements is a
    contraction with G (each m_ij = T(x_i, x_j) is bilinear in the elements), so the cost is
    O(d^5), whatever n.

        sum |l|^2 = <T, G_M ._a T ._c G>,  sum |r|^2 = <T, G ._a T ._c G_M>,
        G_M = sum_ij m_ij m_ij^T, G_M[e, e'] = <T_e, G T_e' G>,
        sum l.r = sum T[e,a,c'] T[a,b,b'] T[e,a',c] T[c,f,f'] G[b,a'] G[b',f] G[c',f']
                = sum K1[e,a',b',f'] K2[e,a',b',f'],  X[a,a',b'] = sum_b G[a',b] T[a,b,b'],
                  K1[e,a',b',f'] = sum_c T[e,a',c] X[c,b',f'],
                  K2[e,a',b',f'] = sum_a Z[e,a,f'] X[a,a',b'],  Z[e,a,f'] = sum_c T[e,a,c] G[c,f']
    The squared norms are O(d^4) (autograd); the cross term (`_GramCross`) is two GEMMs
    [d^2, d] x [d, d^2] per seed and its gradient four GEMMs of d^5 with K = d^2, computed in
    the forward, the seeds in cache-sized passes."""
    S, n, d = E.shape
    T = structure_tensor(U, V, W, ws)
    G = torch.bmm(E.transpose(1, 2), E)  # [S, d, d]
    Gb = G[:, None]
    TG = torch.bmm(T.reshape(S, d * d, d), G).view(S, d, d, d)  # Z[e, a, f'] = T ._3 G
    Y = torch.matmul(Gb, TG)  # [e, a', c']: G T_e G
    GM = torch.bmm(T.reshape(S, d, d * d), Y.reshape(S, d, d * d).transpose(1, 2))
    ll = _gram_norm(T, GM, G)  # sum_ijk |mu(m_ij, x_k)|^2
    rr = _gram_norm(T, G, GM)  # sum_ijk |mu(x_i, m_jk)|^2
    X = torch.matmul(Gb, T)  # [a, a', b'] = sum_b G[a', b] T[a, b, b']
    Zq = TG.transpose(1, 2).contiguous()  # [a, e, f']
    lr = _GramCross.apply(T, X, Zq, ws, torch.is_grad_enabled())  # sum_ijk l.r
    return (ll + rr - 2.0 * lr) / n**3


class _GramCross(torch.autograd.Function):
    """sum_e <K1_e, K2_e> (see assoc_tensor_gram) from T [e, a', c], X [c, b', f'] and
    Zq [a, e, f'] = Z[e, a, f'] (all [S, d, d, d], contiguous). K1 is formed in the layout
    (e, (a', b'), f') and K2 in ((a', b'), e, f'): f' stays the inner dim of both, so the
    swaps between them move rows of d floats (a swap that moved single floats, at a stride of
    d^2, ran at a twentieth of the speed)."""

    @staticmethod
    def forward(ctx, T, X, Zq, ws, grad):  # noqa: D102
        S, d = T.shape[:2]
        dd = d * d
        need = grad and any(ctx.needs_input_grad[:3])
        out = T.new_empty(S)
        if need:
            gT, gX, gZ = torch.empty_like(T), torch.empty_like(X), torch.empty_like(Zq)
        step = _seeds_per_pass(S, 3 * dd * dd, T)
        for s0 in range(0, S, step):
            sl = slice(s0, min(S, s0 + step))
            b = sl.stop - s0
            Tf, Xf, Zf = T[sl].reshape(b, dd, d), X[sl].reshape(b, d, dd), Zq[sl].reshape(b, d, dd)
            K1 = torch.bmm(Tf, Xf, out=ws.get("gK1", (b, dd, dd), T))  # [(e, a'), (b', f')]
            K2 = torch.bmm(Xf.transpose(1, 2), Zf, out=ws.get("gK2", (b, dd, dd), T))
            K2t = K2.view(b, dd, d, d).transpose(1, 2)  # [e, (a', b'), f'], K1's layout
            if not need:
                out[sl] = torch.linalg.vecdot(K1.view(b, d, dd, d), K2t).sum((1, 2))
                continue
            gK1 = ws.get("gK3", (b, dd, dd), T)  # d out / d K1 = K2, in K1's layout
            gK1.view(b, d, dd, d).copy_(K2t)
            out[sl] = torch.linalg.vecdot(K1.view(b, -1), gK1.view(b, -1))
            gK2 = K2.view(b, dd, d, d).copy_(K1.view(b, d, dd, d).transpose(1, 2)).view(b, dd, dd)
            torch.bmm(gK1, Xf.transpose(1, 2), out=gT[sl].view(b, dd, d))
            torch.bmm(Tf.transpose(1, 2), gK1, out=gX[sl].view(b, d, dd))
            gX[sl].view(b, d, dd).baddbmm_(Zf, gK2.transpose(1, 2))
            torch.bmm(Xf, gK2, out=gZ[sl].view(b, d, dd))
        if need:
            ctx.save_for_backward(gT, gX, gZ)
        return out

    @staticmethod
    def backward(ctx, g):  # noqa: D102
        return (*scale_grads(ctx.saved_tensors, g), None, None)


def _gram_norm(T: torch.Tensor, GA: torch.Tensor, GC: torch.Tensor) -> torch.Tensor:
    """sum_e sum T[e,a,c] T[e,a',c'] GA[a,a'] GC[c,c'] = <T, GA ._a T ._c GC>, [S]."""
    S, d = T.shape[:2]
    Y = torch.bmm(T.reshape(S, d * d, d), GC).view(S, d, d, d)  # [e, a, c']
    Y = torch.matmul(GA[:, None], Y)  # [e, a', c']: GA symmetric
    return (Y * T).sum((1, 2, 3))


# ---------------------------------------------------------------------- sampled triples


class _AssocSampled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Ut, Vt, U, V, W, i, j, k, ws, grad):  # noqa: D102
        S, n, R = Ut.shape
        m = i.shape[1]
        Ut2, Vt2 = Ut.reshape(S * n, R), Vt.reshape(S * n, R)
        ii, jj, kk = (seed_index(t, S, m, n).reshape(-1) for t in (i, j, k))
        g = {key: ws.get(key, (S, m, R), Ut) for key in
             ("Ui", "Vj", "Uj", "Vk", "p1", "p2", "A", "Bm", "D", "dUi", "dp1", "dp2", "dVk")}
        f = {key: ws.get(key, (S, m, W.shape[1]), Ut) for key in ("M1", "M2", "r", "dM1", "dM2")}
        Ui, Vj, Uj, Vk = g["Ui"], g["Vj"], g["Uj"], g["Vk"]
        for out, table, idx in ((Ui, Ut2, ii), (Vj, Vt2, jj), (Uj, Ut2, jj), (Vk, Vt2, kk)):
            torch.index_select(table, 0, idx, out=out.view(S * m, R))
        p1, p2 = torch.mul(Ui, Vj, out=g["p1"]), torch.mul(Uj, Vk, out=g["p2"])
        Wt = W.transpose(1, 2)
        M1, M2 = torch.bmm(p1, Wt, out=f["M1"]), torch.bmm(p2, Wt, out=f["M2"])  # mu(x,y), mu(y,z)
        A = torch.bmm(M1, U.transpose(1, 2), out=g["A"])  # U mu(x, y)
        Bm = torch.bmm(M2, V.transpose(1, 2), out=g["Bm"])  # V mu(y, z)
        D = torch.mul(A, Vk, out=g["D"]).addcmul_(Ui, Bm, value=-1.0)
        r = torch.bmm(D, Wt, out=f["r"])  # mu(mu(x,y),z) - mu(x,mu(y,z)) [S, m, d]
        rf = r.view(S, -1)
        loss = torch.linalg.vecdot(rf, rf) / m
        if not grad or not any(ctx.needs_input_grad[:5]):
            return loss
        dr = r.mul_(2.0 / m)
        gW = torch.bmm(dr.transpose(1, 2), D)
        dD = torch.bmm(dr, W, out=D)
        dVk = torch.mul(dD, A, out=g["dVk"])
        dA = torch.mul(dD, Vk, out=A)
        dUi = torch.mul(dD, Bm, out=g["dUi"]).neg_()
        dBm = torch.mul(dD, Ui, out=Bm).neg_()
        dM1, dM2 = torch.bmm(dA, U, out=f["dM1"]), torch.bmm(dBm, V, out=f["dM2"])
        gU, gV = torch.bmm(dA.transpose(1, 2), M1), torch.bmm(dBm.transpose(1, 2), M2)
        gW.baddbmm_(dM1.transpose(1, 2), p1).baddbmm_(dM2.transpose(1, 2), p2)
        dp1, dp2 = torch.bmm(dM1, W, out=g["dp1"]), torch.bmm(dM2, W, out=g["dp2"])
        dUi.addcmul_(dp1, Vj)
        dVk.addcmul_(dp2, Uj)
        dVj, dUj = dp1.mul_(Ui), dp2.mul_(Vk)
        gUt, gVt = torch.zeros_like(Ut2), torch.zeros_like(Vt2)
        for acc, idx, grad in ((gUt, ii, dUi), (gUt, jj, dUj), (gVt, jj, dVj), (gVt, kk, dVk)):
            add_rows(acc, idx, grad.view(S * m, R))
        ctx.save_for_backward(gUt.view(S, n, R), gVt.view(S, n, R), gU, gV, gW)
        return loss

    @staticmethod
    def backward(ctx, g):  # noqa: D102
        return (*scale_grads(ctx.saved_tensors, g), None, None, None, None, None)


def assoc_sampled(Ut: torch.Tensor, Vt: torch.Tensor, U: torch.Tensor, V: torch.Tensor,
                  W: torch.Tensor, i: torch.Tensor, j: torch.Tensor, k: torch.Tensor,
                  ws: Workspace) -> torch.Tensor:
    """Mean over sampled triples of |mu(mu(x_i,x_j),x_k) - mu(x_i,mu(x_j,x_k))|^2, [S].

    mu(x, y) = W((U x) * (V y)); Ut = E U^T, Vt = E V^T [S, n, R]; U, V [S, R, d]; W [S, d, R];
    i, j, k [S, m]. The gradient is computed in the forward (15 GEMMs of m x R x d, buffers
    reused), as for the data losses.
    """
    return _AssocSampled.apply(Ut, Vt, U, V, W, i, j, k, ws, torch.is_grad_enabled())


# ---------------------------------------------------------------------- the table and the rule


@dataclass(frozen=True)
class Form:
    """One exact form of L_assoc. Costs are per seed, forward + backward, for n elements."""

    fn: Callable[..., torch.Tensor]
    """(E, U, V, W, Ut, Vt, ws) -> L_assoc [S], differentiable"""
    cost: Callable[[int, int, int], int]
    """(n, d, R) -> modelled cost in multiply-adds: GEMM work 3x its forward, the elementwise
    passes over big intermediates and output-bound GEMMs weighted as fitted to
    benchmarks/bench_algebra_loss.py --aux (S = 8, d 32, R 256; benchmarks/README.md)"""
    macs: Callable[[int, int, int], int]
    """(n, d, R) -> multiply-adds of its GEMMs (the maps, T and the products m_ij included,
    elementwise passes not): the arithmetic floor benchmarks/bench_forge_step.py prints"""
    buffer: Callable[[int, int, int, int], int] = lambda n, d, R, S: 0
    """(n, d, R, S) -> elements of its n^3-sized buffer (0: none)"""


def _gram_cross(n: int, d: int, R: int) -> int:
    """Multiply-adds of the R-space Gram form's cross term: through the [n^2, R] products while
    n <= d, else through the C_j [d, d]."""
    return n * n * R * R if n <= d else n * n * d * d + n * R * R * d


FORMS: dict[str, Form] = {
    # the Gram forms first: no buffer limit; on equal cost the earlier entry is chosen
    "gram": Form(
        assoc_gram,
        # its R x R work runs 3-5x slower per multiply-add than the other forms' ([S, n, R, R]
        # passes): weight 4 there, 1 on the n^2 R d GEMMs (A5 at R 64: 47 ms vs tensor_gram's 68)
        cost=lambda n, d, R: (9 * n * n * R * d
                              + 4 * (12 * R * R * d + 3 * _gram_cross(n, d, R) + 8 * n * R * R)),
        macs=lambda n, d, R: (9 * n * n * R * d + 12 * R * R * d + 3 * _gram_cross(n, d, R)
                              + 8 * n * R * R)),
    "tensor_gram": Form(
        assoc_tensor_gram,
        # T, then d^5: two GEMMs forward, four backward, and the swaps of d^4
        cost=lambda n, d, R: 3 * d**3 * R + 3 * n * d * d + 8 * d**5,
        macs=lambda n, d, R: 3 * (d**3 * R + n * d * d + 2 * d**5 + 10 * d**4)),
    "direct": Form(
        assoc_direct,
        cost=lambda n, d, R: 9 * n * n * R * d + 3 * n**3 * R * d + 12 * n**3 * R,
        macs=lambda n, d, R: 3 * n**3 * R * d + 9 * n * n * R * d,
        buffer=lambda n, d, R, S: S * n**3 * R),
    "tensor_direct": Form(
        assoc_tensor_direct,
        # the maps from the tables (2 n < d; passes over [S, n, d, R]: weight 2) or from T
        cost=lambda n, d, R: (3 * (4 * n * R * d * d if 2 * n < d else d**3 * R + 2 * n * d**3)
                              + 3 * n * n * d * d + 6 * n**3 * d * d + 4 * n**3 * d),
        macs=lambda n, d, R: (3 * ((2 * n * R * d * d + 2 * n * R * d if 2 * n < d
                                    else d**3 * R + 2 * n * d**3) + n * n * d * d)
                              + 6 * n**3 * d * d),
        buffer=lambda n, d, R, S: n**3 * d),
}
"""the exact forms by name"""

DIRECT_ASSOC_MAX = 1 << 25
"""Largest n^3-sized buffer (elements) of a form that `assoc_form` picks: S n^3 R for the
R-space term-by-term form (all seeds at once), n^3 d for the d-space one (a seed per pass at
most); the Gram forms have none"""


def assoc_form(n: int, d: int, R: int, S: int = 1) -> str:
    """The exact form of lowest modelled cost (`Form.cost`) among those whose buffer fits
    DIRECT_ASSOC_MAX, for n elements, shape (d, R) and S seeds."""
    fits = [name for name, f in FORMS.items() if f.buffer(n, d, R, S) <= DIRECT_ASSOC_MAX]
    return min(fits, key=lambda name: FORMS[name].cost(n, d, R))


def assoc_exact(E: torch.Tensor, U: torch.Tensor, V: torch.Tensor, W: torch.Tensor,
                Ut: torch.Tensor, Vt: torch.Tensor, ws: Workspace,
                form: str | None = None) -> torch.Tensor:
    """L_assoc over all n^3 triples, [S], in `form` or the one `assoc_form` picks. E [S, n, d];
    U, V [S, R, d]; W [S, d, R]; the tables Ut = E U^T, Vt = E V^T [S, n, R]."""
    S, n, d = E.shape
    return FORMS[form or assoc_form(n, d, Ut.shape[2], S)].fn(E, U, V, W, Ut, Vt, ws)
