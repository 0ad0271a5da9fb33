"""A small decoder-only transformer over the tokens `a b =`, seed-batched.

Sequence: T = 3 tokens, x_0 = a, x_1 = b, x_2 = `=` (token id n_in); vocabulary V = n_in + 1.
The answer a*b is read at the last position. Defaults follow Nanda et al.: 1 layer, d_model 128,
4 heads of width 32, d_mlp 512, ReLU, learned positional embeddings, no attention biases, MLP
biases, an unembedding without bias.

    x = W_E[tok] + W_pos                                     [S, B, T, d]
    for each block l:
        x = x + Attn_l(N1_l(x))      then x = sph(x) when spherical
        x = x + MLP_l(N2_l(x))       then x = sph(x) when spherical
    logits = N_f(x)[:, :, -1] W_U^T                         [S, B, n_out]

Normalization axis (`transformer.norm`):
- none: N = identity.
- layernorm / rmsnorm: pre-norm blocks (N1, N2) and a final norm N_f, each with a learned gain
  (and bias for layernorm), nanoGPT style.
- spherical: no learned norms; every residual-stream vector is L2-normalized to unit norm
  (sph(x) = x / |x|): after the embedding and after every residual write. Sublayers read unit
  vectors. The unembedding is a plain linear map.
- spherical_bounded: spherical, plus unit-norm unembedding rows and
  logits = scale * cos(x, W_U[c]) = scale * <x, W_U[c] / |W_U[c]|>, so |logits| <= |scale|.
  The scale is `transformer.logit_scale`, fixed or (`learn_scale`) a parameter per seed.
  The paper's fully bounded topology; use it with weight decay 0.

Attention axis (`transformer.attention`):
- standard: causal softmax(q k^T / sqrt(d_head)) per head.
- uniform: scores ignored, position t averages the value vectors of positions <= t with equal
  weights 1/(t+1) (1/3 each at the last position): a continuous bag of tokens. There are no
  W_Q, W_K parameters then (they would get no gradient), so count_params is smaller.

Last-position shortcut (exact): only the last position's output is read, and attention is causal,
so in the last block only the query at position T-1 is needed (keys and values still cover all
positions) and the MLP runs on that position only; earlier blocks run on all positions (later
blocks read their keys and values). In a 1-layer model the stream before attention is a function
of one token per position, so its norm, values, keys and the query come from per-token tables
(`_token_tables`, once per training batch) and a pair only gathers rows (`_attend_last`).
`logits` uses the shortcut; `activations` runs every position of every block, and its last
position equals `logits` (tested).

Seed batching: every parameter is [S, ...]; all products are batched einsum/bmm over the seed
dimension, no Python loop over seeds. The same weight decay on every parameter.

Config: its own `transformer` section (`TransformerConfig`, below) and model.init_scale.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from grokray.errors import ConfigError
from grokray.families import Family
from grokray.fields import choice, positive
from grokray.models import gather_rows, normal, stack_init
from grokray.models.activations import ACTIVATIONS, ACTS
from grokray.models.ops import seed_cross_entropy
from grokray.models.protocol import BaseModel, chunked_losses

if TYPE_CHECKING:  # pragma: no cover
    from grokray.config import TrialConfig

T = 3  # sequence length: a, b, =
NORMS = ("none", "layernorm", "rmsnorm", "spherical", "spherical_bounded")


@dataclass
class TransformerConfig:
    """Decoder-only transformer over the tokens `a b =` (grokray/models/transformer.py)."""

    n_layers: int = positive(1)
    """number of blocks"""
    d_model: int = positive(128)
    """residual stream width"""
    n_heads: int = positive(4)
    """attention heads"""
    d_head: int | None = positive(None)
    """width of each head; None: d_model // n_heads (d_model must then be divisible)"""
    d_mlp: int = positive(512)
    """MLP hidden width"""
    act: str = choice("relu", ACTIVATIONS)
    """MLP activation: relu, gelu, tanh, silu, quadratic, identity"""
    norm: str = choice("layernorm", NORMS)
    """none, layernorm, rmsnorm (pre-norm blocks and a final norm), spherical (every
    residual-stream vector L2-normalized to unit norm), spherical_bounded (spherical, plus
    unit-norm unembedding rows and logits = scale * cosine similarity)"""
    attention: str = choice("standard", ("standard", "uniform"))
    """standard (causal softmax) or uniform (scores ignored: position t averages positions <= t)"""
    logit_scale: float = 5.0
    """spherical_bounded: logits = scale * cosine similarity (the initial value when learned);
    5 groks on Z59 at CPU scale where 10 did not within 1,500 steps (tests/acceptance)"""
    learn_scale: bool = False
    """spherical_bounded: learn the logit scale (a parameter per seed)"""
    norm_eps: float = 1e-5
    """epsilon of layernorm / rmsnorm / the L2 normalizations"""


def _shape(cfg: TrialConfig) -> tuple[int, int, int, int, int]:
    """(L, d, H, e, m): layers, d_model, heads, d_head, d_mlp; checks the combination."""
    t = cfg.transformer  # norm, attention and act are checked by TrialConfig
    if t.d_head is None and t.d_model % t.n_heads:
        raise ConfigError(f"transformer.d_model ({t.d_model}) must be divisible by n_heads "
                          f"({t.n_heads}) when d_head is null; set transformer.d_head")
    if t.d_head is not None and t.d_head <= 0:
        raise ConfigError(f"transformer.d_head must be > 0 or null, got {t.d_head}")
    e = t.d_head if t.d_head is not None else t.d_model // t.n_heads
    return t.n_layers, t.d_model, t.n_heads, e, t.d_mlp


def _param_shapes(cfg: TrialConfig, n_in: int, n_out: int) -> dict[str, tuple[int, ...]]:
    """Name -> per-seed shape of every parameter (the single source for init and counting)."""
    L, d, H, e, m = _shape(cfg)
    t = cfg.transformer
    shapes: dict[str, tuple[int, ...]] = {"W_E": (n_in + 1, d), "W_pos": (T, d)}
    learned_norm = t.norm in ("layernorm", "rmsnorm")
    for i in range(L):
        if learned_norm:
            shapes[f"ln1_g.{i}"] = (d,)
            shapes[f"ln2_g.{i}"] = (d,)
            if t.norm == "layernorm":
                shapes[f"ln1_b.{i}"] = (d,)
                shapes[f"ln2_b.{i}"] = (d,)
        if t.attention == "standard":
            shapes[f"W_Q.{i}"] = (H, d, e)
            shapes[f"W_K.{i}"] = (H, d, e)
        shapes[f"W_V.{i}"] = (H, d, e)
        shapes[f"W_O.{i}"] = (H, e, d)
        shapes[f"W_in.{i}"] = (d, m)
        shapes[f"b_in.{i}"] = (m,)
        shapes[f"W_out.{i}"] = (m, d)
        shapes[f"b_out.{i}"] = (d,)
    if learned_norm:
        shapes["lnf_g"] = (d,)
        if t.norm == "layernorm":
            shapes["lnf_b"] = (d,)
    shapes["W_U"] = (n_out, d)  # rows: one vector per answer
    if t.norm == "spherical_bounded" and t.learn_scale:
        shapes["scale"] = ()
    return shapes


def _bcast(p: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """View a per-seed parameter p [S, k] (or [S]) so it broadcasts against x [S, ..., k]."""
    extra = x.dim() - p.dim()
    return p.view(p.shape[0], *([1] * extra), *p.shape[1:])


def _linear(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """x [S, ..., i] @ W [S, i, o] (+ b [S, o]) -> [S, ..., o], one bmm."""
    S, i = x.shape[0], x.shape[-1]
    y = torch.bmm(x.reshape(S, -1, i), W)  # [S, N, o]
    if b is not None:
        y = y + b[:, None, :]
    return y.view(*x.shape[:-1], W.shape[-1])


def causal_weights(t_query: Sequence[int], dtype: torch.dtype, device) -> torch.Tensor:
    """Uniform causal pattern [Tq, T]: row for query position t is 1/(t+1) on positions <= t."""
    A = torch.zeros(len(t_query), T, dtype=dtype, device=device)
    for r, t in enumerate(t_query):
        A[r, : t + 1] = 1.0 / (t + 1)
    return A


class Transformer(BaseModel):
    """Decoder-only transformer over `a b =` for S seeds; parameters stacked along dim 0."""

    def __init__(self, cfg: TrialConfig, n_in: int, n_out: int, seeds: Sequence[int],
                 device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32) -> None:
        self.n_in, self.n_out = n_in, n_out
        self.L, self.d, self.H, self.e, self.m = _shape(cfg)
        t = cfg.transformer
        self.norm, self.attention, self.eps = t.norm, t.attention, t.norm_eps
        self.spherical = t.norm in ("spherical", "spherical_bounded")
        self.bounded = t.norm == "spherical_bounded"
        self.fixed_scale = t.logit_scale
        self.act = ACTS[t.act]
        self.pair_floats = 2 * self.m + 8 * self.d  # the MLP's and the stream's activations
        shapes = _param_shapes(cfg, n_in, n_out)
        s = cfg.model.init_scale

        def draws(g: torch.Generator) -> dict[str, torch.Tensor]:
            # Nanda et al.-style: N(0, 1/fan_in) weights, zero biases, unit gains
            out: dict[str, torch.Tensor] = {}
            for name, shape in shapes.items():
                kind = name.split(".")[0]
                if kind.endswith("_g"):
                    out[name] = torch.ones(shape, dtype=torch.float64)
                elif kind.endswith("_b") or kind in ("b_in", "b_out"):
                    out[name] = torch.zeros(shape, dtype=torch.float64)
                elif kind == "scale":
                    out[name] = torch.full(shape, t.logit_scale, dtype=torch.float64)
                else:
                    fan_in = {"W_O": self.H * self.e, "W_out": self.m}.get(kind, self.d)
                    out[name] = normal(g, shape, s / math.sqrt(fan_in))
            return out

        self.params = stack_init(seeds, draws, device, dtype)

    @staticmethod
    def count_params(cfg: TrialConfig, n_in: int, n_out: int) -> int:
        """Parameters per seed."""
        return sum(math.prod(sh) for sh in _param_shapes(cfg, n_in, n_out).values())

    # ------------------------------------------------------------------ pieces

    def _sph(self, x: torch.Tensor) -> torch.Tensor:
        """L2-normalize each residual vector to unit norm (identity unless spherical)."""
        return F.normalize(x, dim=-1, eps=self.eps) if self.spherical else x

    def _norm(self, x: torch.Tensor, site: str) -> torch.Tensor:
        """Learned pre-norm at `site` ("ln1.0", "ln2.0", "lnf"); identity for none/spherical."""
        if self.norm not in ("layernorm", "rmsnorm"):
            return x
        base, _, i = site.partition(".")
        suffix = f".{i}" if i else ""
        g = _bcast(self.params[f"{base}_g{suffix}"], x)
        if self.norm == "rmsnorm":
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * g
        b = _bcast(self.params[f"{base}_b{suffix}"], x)
        return F.layer_norm(x, x.shape[-1:], eps=self.eps) * g + b

    def _embed(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """Token + position embeddings [S, B, T, d] (before any normalization)."""
        W_E = self.params["W_E"]  # [S, V, d]
        S = W_E.shape[0]
        eq = torch.full_like(a, self.n_in)
        tok = torch.stack([a, b, eq], -1)  # [S, B, T] or [B, T]
        B = tok.shape[-2]
        x = gather_rows(W_E, tok.reshape(*tok.shape[:-2], B * T)).view(S, B, T, self.d)
        return x + self.params["W_pos"][:, None, :, :]

    def _attend(self, i: int, h: torch.Tensor, last_only: bool,
                hooks: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        """Attention of block i. h [S, B, T, d] -> [S, B, Tq, d] (Tq = 1 if last_only else T)."""
        p = self.params
        tq = [T - 1] if last_only else list(range(T))
        v = torch.einsum("sbtd,shde->sbhte", h, p[f"W_V.{i}"])  # [S, B, H, T, e]
        if self.attention == "uniform":
            A = causal_weights(tq, h.dtype, h.device)  # [Tq, T]
            z = torch.einsum("qt,sbhte->sbhqe", A, v)  # [S, B, H, Tq, e]
            pattern = A.expand(h.shape[0], h.shape[1], self.H, len(tq), T)
        else:
            hq = h[:, :, tq]  # [S, B, Tq, d]
            q = torch.einsum("sbtd,shde->sbhte", hq, p[f"W_Q.{i}"])  # [S, B, H, Tq, e]
            k = torch.einsum("sbtd,shde->sbhte", h, p[f"W_K.{i}"])  # [S, B, H, T, e]
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.e)  # [S, B, H, Tq, T]
            pos = torch.arange(T, device=h.device)
            visible = pos[tq][:, None] >= pos  # [Tq, T]: causal mask
            scores = scores.masked_fill(~visible, float("-inf"))
            pattern = scores.softmax(-1)  # [S, B, H, Tq, T]
            z = pattern @ v  # [S, B, H, Tq, e]
        if hooks is not None:
            hooks[f"attn_pattern.{i}"] = pattern
            hooks[f"attn_z.{i}"] = z
        return torch.einsum("sbhqe,shed->sbqd", z, p[f"W_O.{i}"])  # [S, B, Tq, d]

    def _token_tables(self) -> dict[str, torch.Tensor]:
        """Block 0's per-token tables of a 1-layer model (the shortcut, `_attend_last`).

        Before block 0's attention the stream at position 0 depends on a only, at position 1 on
        b only, and at position 2 on nothing: its norm, values, keys (and the one query) are
        computed once per token. Returns X2 (the `=` token's stream at the last position,
        [S, 1, d]), Va, Vb (values of every element at positions 0 and 1, [S, n, H e]), V2
        ([S, 1, H, e]) and, for standard attention, the score tables sa, sb ([S, n, H]) and s2
        ([S, 1, H]).
        """
        p = self.params
        n, H, e = self.n_in, self.H, self.e
        W_E, W_pos = p["W_E"], p["W_pos"]  # [S, V, d], [S, T, d]
        X01 = self._sph(W_E[:, :n, None, :] + W_pos[:, None, :2, :])  # [S, n, 2, d]
        X2 = self._sph(W_E[:, n:, :] + W_pos[:, 2:, :])  # [S, 1, d]: the "=" token, last pos
        h01, h2 = self._norm(X01, "ln1.0"), self._norm(X2, "ln1.0")
        V01 = torch.einsum("sntd,shde->snthe", h01, p["W_V.0"])  # [S, n, 2, H, e]
        V2 = torch.einsum("sqd,shde->sqhe", h2, p["W_V.0"])  # [S, 1, H, e]
        tabs = {"X2": X2, "Va": V01[:, :, 0].reshape(-1, n, H * e),
                "Vb": V01[:, :, 1].reshape(-1, n, H * e), "V2": V2}
        if self.attention != "uniform":
            q = torch.einsum("sqd,shde->sqhe", h2, p["W_Q.0"])  # [S, 1, H, e]
            K01 = torch.einsum("sntd,shde->snthe", h01, p["W_K.0"])  # [S, n, 2, H, e]
            K2 = torch.einsum("sqd,shde->sqhe", h2, p["W_K.0"])  # [S, 1, H, e]
            s01 = (K01 * q[:, :, None]).sum(-1) / math.sqrt(e)  # [S, n, 2, H] score tables
            tabs["sa"], tabs["sb"] = s01[:, :, 0].contiguous(), s01[:, :, 1].contiguous()
            tabs["s2"] = (K2 * q).sum(-1) / math.sqrt(e)  # [S, 1, H]
        return tabs

    def _attend_last(self, tabs: dict[str, torch.Tensor], a: torch.Tensor,
                     b: torch.Tensor) -> torch.Tensor:
        """The residual at the last position after block 0's attention, [S, B, 1, d], from the
        per-token tables (`_token_tables`): a pair only gathers table rows (a 3-way softmax of
        gathered scores, a weighted sum of gathered values, then W_O). The same math as
        `_attend` on the embedded pairs, tested equal to the all-position forward.
        """
        H, e = self.H, self.e
        Va, Vb, V2 = gather_rows(tabs["Va"], a), gather_rows(tabs["Vb"], b), tabs["V2"]
        S, B = Va.shape[:2]
        Va, Vb = Va.view(S, B, H, e), Vb.view(S, B, H, e)
        if self.attention == "uniform":
            z = (Va + Vb + V2) / T
        else:
            scores = torch.stack([gather_rows(tabs["sa"], a), gather_rows(tabs["sb"], b),
                                  tabs["s2"].expand(S, B, H)], -1)  # [S, B, H, T]
            w = scores.softmax(-1)[..., None]  # [S, B, H, T, 1]
            z = w[..., 0, :] * Va + w[..., 1, :] * Vb + w[..., 2, :] * V2  # [S, B, H, e]
        attn = torch.einsum("sbhe,shed->sbd", z, self.params["W_O.0"])  # [S, B, d]
        return self._sph(tabs["X2"] + attn)[:, :, None, :]

    def _forward(self, a: torch.Tensor, b: torch.Tensor,
                 hooks: dict[str, torch.Tensor] | None,
                 tabs: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        """Logits [S, B, n_out] at the last position; with `hooks`, every position is computed
        and the named activations are stored there, else the exact last-position shortcut
        (block 0's per-token tables `tabs`, computed here when not given)."""
        p = self.params
        tables = hooks is None and self.L == 1  # block 0's attention from per-token tables
        if not tables:
            x = self._embed(a, b)  # [S, B, T, d]
            if hooks is not None:
                hooks["embed"] = x
            x = self._sph(x)
        for i in range(self.L):
            last_only = hooks is None and i == self.L - 1
            if tables:
                x = self._attend_last(self._token_tables() if tabs is None else tabs, a, b)
            else:
                if hooks is not None:
                    hooks[f"resid_pre.{i}"] = x
                attn = self._attend(i, self._norm(x, f"ln1.{i}"), last_only, hooks)
                x = self._sph((x[:, :, -1:] if last_only else x) + attn)  # [S, B, Tq, d]
            pre = _linear(self._norm(x, f"ln2.{i}"), p[f"W_in.{i}"], p[f"b_in.{i}"])  # [.., m]
            post = self.act(pre)
            x = self._sph(x + _linear(post, p[f"W_out.{i}"], p[f"b_out.{i}"]))  # [S, B, Tq, d]
            if hooks is not None:
                hooks[f"attn_out.{i}"] = attn
                hooks[f"mlp_pre.{i}"] = pre
                hooks[f"mlp_post.{i}"] = post
                hooks[f"resid_post.{i}"] = x
        x = self._norm(x[:, :, -1], "lnf")  # [S, B, d]
        if hooks is not None:
            hooks["resid_final"] = x
        W_U = p["W_U"]  # [S, n_out, d]
        if not self.bounded:
            return _linear(x, W_U.transpose(1, 2))  # [S, B, n_out]
        scale = p["scale"] if "scale" in p else torch.full_like(W_U[:, 0, 0], self.fixed_scale)
        cos = _linear(x, F.normalize(W_U, dim=-1, eps=self.eps).transpose(1, 2))  # [S, B, n_out]
        return _bcast(scale, cos) * cos

    # ------------------------------------------------------------------ interface

    def logits(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """[S, B, n_out] for index batches a, b of shape [S, B] or [B]."""
        return self._forward(a, b, None)

    def data_losses(self, a: torch.Tensor, b: torch.Tensor, y: torch.Tensor,
                    chunk: int) -> Iterator[torch.Tensor]:
        """The chunked cross-entropy; a 1-layer model over several chunks computes its per-token
        tables once per batch (`_table_losses`)."""
        if self.L == 1 and chunk < y.shape[-1]:
            return self._table_losses(a, b, y, chunk)
        return chunked_losses(self.logits, a, b, y, chunk)

    def _table_losses(self, a: torch.Tensor, b: torch.Tensor, y: torch.Tensor,
                      chunk: int) -> Iterator[torch.Tensor]:
        """One term: the batch's mean cross-entropy per seed [S], block 0's per-token tables
        computed once (not once per chunk, as `chunked_losses` through `logits` would).

        Each chunk is differentiated here, into detached copies of the tables and into the
        parameters it uses directly; the term returned carries those gradients as a per-seed
        surrogate sum_t <t, g_t> whose value is exactly 0, so that differentiating the term
        pushes the tables' gradients through the tables' own graph once. Its value is the
        summed chunk losses; its gradient is the one `chunked_losses` gives, to float rounding
        (summed over chunks before the tables' backward instead of after).
        """
        tabs = self._token_tables()
        leaves = {k: v.detach().requires_grad_() for k, v in tabs.items()}
        targets = list(tabs.values()) + list(self.params.values())
        inputs = list(leaves.values()) + list(self.params.values())
        acc: list[torch.Tensor | None] = [None] * len(inputs)
        value = None
        B = y.shape[-1]
        for i in range(0, B, chunk):
            j = slice(i, i + chunk)
            yj = y[..., j]
            term = seed_cross_entropy(self._forward(a[..., j], b[..., j], None, leaves), yj)
            term = term * (yj.shape[-1] / B)
            gs = torch.autograd.grad(term.sum(), inputs, allow_unused=True)
            acc = [g if s is None else s if g is None else s.add_(g)
                   for s, g in zip(acc, gs, strict=True)]
            value = term.detach() if value is None else value.add_(term.detach())
        assert value is not None
        sur = torch.zeros_like(value)
        for t, g in zip(targets, acc, strict=True):
            if g is not None:
                sur = sur + (t * g).reshape(t.shape[0], -1).sum(1)
        yield value + (sur - sur.detach())

    def embedding(self) -> torch.Tensor:
        """Token embeddings of the n_in elements [S, n_in, d] (the `=` row left out)."""
        return self.params["W_E"][:, : self.n_in]

    def embeddings(self) -> dict[str, torch.Tensor]:
        """E: token embeddings of the n_in elements [S, n_in, d] (the `=` row left out);
        U: unembedding rows [S, n_out, d]; pos: positional embeddings [S, T, d]."""
        p = self.params
        return {"E": p["W_E"][:, : self.n_in], "U": p["W_U"], "pos": p["W_pos"]}

    def activations(self, a: torch.Tensor, b: torch.Tensor) -> dict[str, torch.Tensor]:
        """Named activations over all T positions (no shortcut), block index after the dot:
        embed, resid_pre.i, resid_post.i [S, B, T, d] (unit norm when spherical);
        attn_pattern.i [S, B, H, T, T]; attn_z.i [S, B, H, T, e]; attn_out.i [S, B, T, d];
        mlp_pre.i, mlp_post.i [S, B, T, d_mlp]; resid_final [S, B, d] (last position, after the
        final norm); logits [S, B, n_out]."""
        hooks: dict[str, torch.Tensor] = {}
        hooks["logits"] = self._forward(a, b, hooks)
        return hooks


FAMILY = Family("transformer", model=Transformer, train="gradient", section="transformer",
                config=TransformerConfig,
                shared=("model.init_scale", "optim", "grokfast", "metrics"))
