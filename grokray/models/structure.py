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
the R-space one, and the Gram form's cost does not grow with n. The term-by-term core and the
Gram form's cross term compute their gradients in the forward (as models/fused.py does), as
single well-shaped GEMMs per seed, the seeds in cache-sized passes; the maps (`element_maps`)
and T have hand-written GEMM backwards; the Gram form's O(d^4) parts use autograd.
`forge.assoc_form` picks the cheapest form by `assoc_cost`; `assoc_macs` counts the GEMM
multiply-adds of each (the arithmetic floor).
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


def assoc_tensor_direct(E: torch.Tensor, P: torch.Tensor, Rm: torch.Tensor,
                        ws: Workspace) -> torch.Tensor:
    """Mean over all n^3 triples of |mu(m_ij, x_k) - mu(x_i, m_jk)|^2, [S], term by term from
    the maps P (`left_maps`), Rm (`right_maps`) of the elements: l_ijk = Rm_k m_ij and
    r_ijk = P_i m_jk as one GEMM of n^3 d^2 each per seed, l in the layout (j, i, e, k)
    ([n^2, d] x [d, n d]) and r in (i, e, j, k) ([n d, d] x [d, n^2]); the difference is formed
    in the first and copied to the second, and the gradient is computed in the forward as four
    GEMMs of the same shapes (no batched products over a small dimension)."""
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
        return (*_scale(ctx.saved_tensors, g), None, None)


def assoc_tensor_gram(E: torch.Tensor, T: torch.Tensor, ws: Workspace | None = None
                      ) -> torch.Tensor:
    """The same loss as `assoc_tensor_direct` from T and the Gram matrix G = E^T E alone, [S]:
    every sum over the elements is a contraction with G (each m_ij = T(x_i, x_j) is bilinear
    in the elements), so the cost is O(d^5), whatever n.

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
    G = torch.bmm(E.transpose(1, 2), E)  # [S, d, d]
    Gb = G[:, None]
    TG = torch.bmm(T.reshape(S, d * d, d), G).view(S, d, d, d)  # Z[e, a, f'] = T ._3 G
    Y = torch.matmul(Gb, TG)  # [e, a', c']: G T_e G
    GM = torch.bmm(T.reshape(S, d, d * d), Y.reshape(S, d, d * d).transpose(1, 2))
    ll = _gram_norm(T, GM, G)  # sum_ijk |mu(m_ij, x_k)|^2
    rr = _gram_norm(T, G, GM)  # sum_ijk |mu(x_i, m_jk)|^2
    X = torch.matmul(Gb, T)  # [a, a', b'] = sum_b G[a', b] T[a, b, b']
    Zq = TG.transpose(1, 2).contiguous()  # [a, e, f']
    lr = _GramCross.apply(T, X, Zq, ws if ws is not None else Workspace(),
                          torch.is_grad_enabled())  # sum_ijk l.r
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
        return (*_scale(ctx.saved_tensors, g), None, None)


def _gram_norm(T: torch.Tensor, GA: torch.Tensor, GC: torch.Tensor) -> torch.Tensor:
    """sum_e sum T[e,a,c] T[e,a',c'] GA[a,a'] GC[c,c'] = <T, GA ._a T ._c GC>, [S]."""
    S, d = T.shape[:2]
    Y = torch.bmm(T.reshape(S, d * d, d), GC).view(S, d, d, d)  # [e, a, c']
    Y = torch.matmul(GA[:, None], Y)  # [e, a', c']: GA symmetric
    return (Y * T).sum((1, 2, 3))


def assoc_macs(form: str, n: int, d: int, R: int) -> int:
    """Multiply-adds of the GEMMs of one L_assoc forward + backward per seed in each exact form,
    the maps (P, Rm or T) and the products m_ij included; elementwise passes not counted. The
    arithmetic floor beside which benchmarks/bench_forge_step.py prints the measured step."""
    if form == "tensor_direct":
        maps = 2 * n * R * d * d + 2 * n * R * d if 2 * n < d else d**3 * R + 2 * n * d**3
        return 3 * (maps + n * n * d * d) + 6 * n**3 * d * d
    if form == "tensor_gram":
        return 3 * (d**3 * R + n * d * d + 2 * d**5 + 10 * d**4)
    if form == "direct":
        return 3 * n**3 * R * d + 9 * n * n * R * d
    if form == "gram":
        cross = n * n * R * R if n <= d else n * n * d * d + n * R * R * d
        return 9 * n * n * R * d + 12 * R * R * d + 3 * cross + 8 * n * R * R
    raise ValueError(f"unknown L_assoc form {form!r}")


def assoc_cost(form: str, n: int, d: int, R: int) -> float:
    """Modelled cost of one forward + backward per seed, in multiply-adds, of each exact form:
    'tensor_direct', 'tensor_gram' (here), 'direct', 'gram' (R-space: models/fused.py assoc_all,
    Forge._assoc_full). GEMM work counts 3x its forward; elementwise passes over the big
    intermediates and output-bound GEMMs carry weights fitted to benchmarks/bench_algebra_loss.py
    --aux (S = 8, d 32, R 256; docs: benchmarks/README.md)."""
    # P, Rm from the tables (2 n < d; passes over [S, n, d, R]: weight 2) or from T
    maps = 3 * (4 * n * R * d * d if 2 * n < d else d**3 * R + 2 * n * d**3)
    if form == "tensor_direct":
        return maps + 3 * n * n * d * d + 6 * n**3 * d * d + 4 * n**3 * d
    if form == "tensor_gram":  # d^5: 2 GEMMs forward, 4 backward, and the swaps of d^4
        return 3 * d**3 * R + 3 * n * d * d + 8 * d**5
    if form == "direct":
        return 9 * n * n * R * d + 3 * n**3 * R * d + 12 * n**3 * R
    if form == "gram":
        cross = n * n * R * R if n <= d else n * n * d * d + n * R * R * d
        # its R x R work measured 3-5x slower per multiply-add than the other forms ([S, n, R,
        # R] passes); weight 1 on the n^2 R d GEMMs (A5 at R 64: 47 ms vs 68 for tensor_gram)
        return 9 * n * n * R * d + 4 * (12 * R * R * d + 3 * cross + 8 * n * R * R)
    raise ValueError(f"unknown L_assoc form {form!r}")
