"""Fused seed-batched ops with hand-written backward passes (the trainer's hot path).

`seed_cross_entropy(logits, y)`: the per-seed mean cross-entropy, [S, B, n] -> [S], the same
numbers as `F.cross_entropy(..., reduction="none").mean(1)`, with a backward that computes
(softmax - onehot) * g / B directly from the saved log-probabilities.

Why: on CPU, torch's vectorized exp takes a slow path (10-30x) on inputs below log(tiny)
(-87.3 in float32), and autograd's log_softmax backward calls exp on every log-probability.
Confident or distance-based logits (FORGE's tied_dist decoding) put most log-probabilities far
below that, so the stock backward is the largest single cost of a FORGE step. Here the
log-probabilities are clamped at log(tiny) before exp: a probability that would be subnormal
(< tiny, 1.2e-38 in float32) becomes tiny, a gradient change below 1.2e-38 per entry. The
backward works in place on the saved log-probabilities (no new [S, B, n] tensor: on CPU a fresh
large allocation costs page faults), so it can run only once per forward (no retain_graph).
"""

from __future__ import annotations

import math

import torch


class _SeedCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:  # noqa: D102
        S, B, n = logits.shape
        ls = torch.log_softmax(logits, -1)  # [S, B, n]
        idx = y.expand(S, B).unsqueeze(-1)  # [S, B, 1]
        nll = ls.gather(-1, idx).squeeze(-1)  # [S, B]: log p(y)
        ctx.save_for_backward(ls, idx)
        ctx.spent = False
        return -nll.mean(1)  # [S]

    @staticmethod
    def backward(ctx, g: torch.Tensor):  # noqa: D102
        if ctx.spent:
            raise RuntimeError("seed_cross_entropy: backward runs once (no retain_graph)")
        ctx.spent = True
        ls, idx = ctx.saved_tensors
        B = ls.shape[1]
        floor = math.log(torch.finfo(ls.dtype).tiny)
        p = ls.clamp_min_(floor).exp_()  # [S, B, n] softmax, in place: no new big tensor
        p.scatter_add_(-1, idx, torch.full(idx.shape, -1.0, dtype=p.dtype, device=p.device))
        p.mul_((g / B)[:, None, None])
        return p, None


def seed_cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy per seed. logits [S, B, n]; y [S, B] or [B] -> [S]."""
    return _SeedCrossEntropy.apply(logits, y)
