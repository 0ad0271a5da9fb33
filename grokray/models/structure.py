"""FORGE's exact L_assoc through the structure tensor of the DAD product (d-space forms).

The DAD product mu(x, y) = W((U x) * (V y)) is a bilinear map on R^d, so it has a structure
tensor T in R^{d x d x d}:

    T[e, a, c] = sum_p W[e, p] U[p, a] V[p, c],      mu(x, y)_e = sum_{a,c} T[e, a, c] x_a y_c.

Forming T costs d^3 R once; after that nothing depends on the rank R. L_assoc over all n^3
triples (l_ijk = mu(m_ij, x_k), r_ijk = mu(x_i, m_jk), m_ij = mu(x_i, x_j)) is then

    assoc_tensor_direct   the differences l - r term by term:          O(n^3 d^2)
    assoc_tensor_gram     sum |l|^2 + sum |r|^2 - 2 sum l.r, each a contraction of copies of
                          T with the Gram matrix G = E^T E only:         O(d^5), any n

instead of the R-space forms' O(n^3 R d) (term by term) or O(n^2 R^2) (Gram) in
models/forge.py: at d 32, R 256 the term-by-term d-space form does 8x fewer multiply-adds than
the R-space one, and the Gram form's cost does not grow with n. The term-by-term form computes
its gradient in the forward (as models/fused.py does); T and the Gram form use autograd (GEMMs
of the same shapes). `forge.assoc_form` picks the cheapest form by `assoc_cost`.
"""

from __future__ import annotations

import torch

from grokray.models.fused import Workspace, _scale


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


def left_maps_uv(Ut: torch.Tensor, V: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """`left_maps` from the table Ut = E U^T [S, n, R] without T: P[(i, e), c] =
    sum_p Ut[i, p] W[e, p] V[p, c]; O(n R d^2), cheaper than T's d^3 R while 2 n < d."""
    S, n, R = Ut.shape
    d = W.shape[1]
    UW = (Ut[:, :, None, :] * W[:, None]).view(S, n * d, R)  # [(i, e), p]
    return torch.bmm(UW, V)


def right_maps_uv(Vt: torch.Tensor, U: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """`right_maps` from the table Vt = E V^T [S, n, R] without T: Rm[a, (e, k)] =
    sum_p U[p, a] W[e, p] Vt[k, p]."""
    S, n, R = Vt.shape
    d = W.shape[1]
    WV = (W[:, :, None, :] * Vt[:, None]).view(S, d * n, R)  # [(e, k), p]
    return torch.bmm(U.transpose(1, 2), WV.transpose(1, 2))


def all_products(E: torch.Tensor, P: torch.Tensor) -> torch.Tensor:
    """M [S, n, n, d]: M[s, i, j] = mu(x_i, x_j) = P_i x_j. P from `left_maps`."""
    S, n, d = E.shape
    M = torch.bmm(P, E.transpose(1, 2)).view(S, n, d, n)  # [(i, e), c] x [c, j] -> [i, e, j]
    return M.transpose(2, 3)


def assoc_tensor_direct(E: torch.Tensor, P: torch.Tensor, Rm: torch.Tensor,
                        ws: Workspace) -> torch.Tensor:
    """Mean over all n^3 triples of |mu(m_ij, x_k) - mu(x_i, m_jk)|^2, [S], term by term from
    the maps P (`left_maps`), Rm (`right_maps`) of the elements: l_ijk = Rm_k m_ij, r_ijk =
    P_i m_jk, two GEMMs of n^3 d^2 into one [S, n, n d, n] buffer (layout (j, i, e, k)); the
    gradient is computed in the forward (four GEMMs of n^3 d^2, no n^3 copies)."""
    M = all_products(E, P)  # [S, i, j, e]
    return _AssocCore.apply(M.transpose(1, 2), M, P, Rm, ws, torch.is_grad_enabled())


class _AssocCore(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Mt, M, P, Rm, ws, grad):  # noqa: D102
        S, n, _, d = M.shape
        N = n**3
        Mtf = Mt.reshape(S, n * n, d)  # rows (j, i): m_ij
        Pe = P[:, None].expand(S, n, n * d, d).reshape(S * n, n * d, d)
        Mjt = M.transpose(2, 3).reshape(S * n, d, n)  # block j: [c, k] = m_jk[c]
        D = ws.get("tD", (S * n, n * d, n), M)
        torch.bmm(Pe, Mjt, out=D)  # r[j, (i, e), k] = (P_i m_jk)_e
        Dl = D.view(S, n * n, d * n)
        Dl.baddbmm_(Mtf, Rm, beta=-1.0)  # l - r: l[(j, i), (e, k)] = (Rm_k m_ij)_e
        Df = D.view(S, -1)
        loss = torch.linalg.vecdot(Df, Df) / N
        if not grad or not any(ctx.needs_input_grad[:4]):
            return loss
        c = 2.0 / N
        gMt = torch.bmm(Dl, Rm.transpose(1, 2)).view(S, n, n, d).mul_(c)
        gRm = torch.bmm(Mtf.transpose(1, 2), Dl).mul_(c)
        gP = torch.bmm(D, M.reshape(S * n, n, d)).view(S, n, n * d, d).sum(1).mul_(-c)
        gM = torch.bmm(Pe.transpose(1, 2), D).view(S, n, d, n).transpose(2, 3).mul(-c)
        ctx.save_for_backward(gMt, gM, gP, gRm)
        return loss

    @staticmethod
    def backward(ctx, g):  # noqa: D102
        return (*_scale(ctx.saved_tensors, g), None, None)


def assoc_tensor_gram(E: torch.Tensor, T: torch.Tensor) -> torch.Tensor:
    """The same loss as `assoc_tensor_direct` from T and the Gram matrix G = E^T E alone, [S]:
    every sum over the elements is a contraction with G (each m_ij = T(x_i, x_j) is bilinear
    in the elements), so the cost is O(d^5), whatever n. Plain torch ops (autograd).

        sum |l|^2 = <T, G_M ._a T ._c G>,  sum |r|^2 = <T, G ._a T ._c G_M>,
        G_M = sum_ij m_ij m_ij^T, G_M[e, e'] = <T_e, G T_e' G>,
        sum l.r = sum T[e,a,c'] T[a,b,b'] T[e,a',c] T[c,f,f'] G[b,a'] G[b',f] G[c',f']
                = sum Q[f',b',c] X[c,b',f'],  X[a,a',b'] = sum_b T[a,b,b'] G[b,a'],
                  Q[f',b',c] = sum_{e,a,a'} T[e,a,c'] G[c',f'] X[a,a',b'] T[e,a',c]  (2 d^5)
    """
    S, n, d = E.shape
    G = torch.bmm(E.transpose(1, 2), E)  # [S, d, d]
    Gb = G[:, None]
    Y = torch.matmul(Gb, torch.matmul(T, Gb))  # [e, a', c']: G T_e G
    GM = torch.bmm(T.reshape(S, d, d * d), Y.reshape(S, d, d * d).transpose(1, 2))
    ll = _gram_norm(T, GM, G)  # sum_ijk |mu(m_ij, x_k)|^2
    rr = _gram_norm(T, G, GM)  # sum_ijk |mu(x_i, m_jk)|^2
    X = torch.matmul(T.transpose(2, 3), Gb).transpose(2, 3)  # [a, a', b']
    Z1 = torch.matmul(T, Gb)  # [e, a, f'] = sum_c' T[e, a, c'] G[c', f']
    Q = torch.bmm(Z1.transpose(2, 3).reshape(S, d * d, d), X.reshape(S, d, d * d))
    Q = Q.view(S, d, d, d, d).permute(0, 2, 4, 1, 3).reshape(S, d * d, d * d)  # [(f',b'),(e,a')]
    Q = torch.bmm(Q, T.reshape(S, d * d, d)).view(S, d, d, d)  # [f', b', c]
    lr = (Q * X.permute(0, 3, 2, 1)).sum((1, 2, 3))  # sum_ijk l.r
    return (ll + rr - 2.0 * lr) / n**3


def _gram_norm(T: torch.Tensor, GA: torch.Tensor, GC: torch.Tensor) -> torch.Tensor:
    """sum_e sum T[e,a,c] T[e,a',c'] GA[a,a'] GC[c,c'] = <T, GA ._a T ._c GC>, [S]."""
    S, d = T.shape[:2]
    Y = torch.bmm(T.reshape(S, d * d, d), GC).view(S, d, d, d)  # [e, a, c']
    Y = torch.matmul(GA[:, None], Y)  # [e, a', c']: GA symmetric
    return (Y * T).sum((1, 2, 3))


def assoc_cost(form: str, n: int, d: int, R: int) -> float:
    """Modelled cost of one forward + backward per seed, in multiply-adds, of each exact form:
    'tensor_direct', 'tensor_gram' (here), 'direct', 'gram' (R-space: models/fused.py assoc_all,
    Forge._assoc_full). GEMM work counts 3x its forward; elementwise passes over the big
    intermediates and output-bound GEMMs carry weights fitted to benchmarks/bench_algebra_loss.py
    --aux (S = 8, d 32, R 256; docs: benchmarks/README.md)."""
    # P, Rm from the tables (2 n < d; autograd reduces over [S, n, d, R]: weight 2) or from T
    maps = 3 * (4 * n * R * d * d if 2 * n < d else d**3 * R + 2 * n * d**3)
    if form == "tensor_direct":
        return maps + 3 * n * n * d * d + 6 * n**3 * d * d + 4 * n**3 * d
    if form == "tensor_gram":
        return 3 * d**3 * R + 3 * n * d * d + 20 * d**5
    if form == "direct":
        return 9 * n * n * R * d + 3 * n**3 * R * d + 12 * n**3 * R
    if form == "gram":
        cross = n * n * R * R if n <= d else n * n * d * d + n * R * R * d
        # measured 3-5x slower per multiply-add than the other forms ([S, n, R, R] passes)
        return 4 * (9 * n * n * R * d + 12 * R * R * d + 3 * cross + 8 * n * R * R)
    raise ValueError(f"unknown L_assoc form {form!r}")
