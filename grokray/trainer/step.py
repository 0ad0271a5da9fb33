"""One optimizer step of every member of a stack: its data loss (chunk by chunk, gradients
accumulated), plus the weighted auxiliary loss where the family has one, the Grokfast filter,
then the seed-batched optimizer at each member's learning rate."""

from __future__ import annotations

import torch

from grokray.models import chunks
from grokray.optim import lr_at
from grokray.trainer.stack import Stack


def train_step(st: Stack, step: int) -> torch.Tensor:
    """Take optimizer step `step` (0-based) of every active member; the loss before it [S]."""
    model = st.model
    if st.minibatches is None:
        a, b, y = st.a_tr, st.b_tr, st.y_tr
    else:
        idx = st.minibatches.next(st.active).to(st.device)
        idx = st.tr.gather(1, idx)  # [S, B] task indices
        a, b, y = st.a[idx], st.b[idx], st.y_of(idx)
    S = y.shape[0]
    chunk = st.chunk(chunks.TRAIN_LOGIT_BUDGET, S, model.pair_floats)
    lam = aux_weight(st, step) if st.has_aux else 0.0
    names = list(model.params)
    ps = [model.params[k] for k in names]
    acc: list[torch.Tensor | None] = [None] * len(ps)
    total_sum = torch.zeros(S, device=st.device, dtype=st.dtype)
    for n, total in enumerate(model.data_losses(a, b, y, chunk)):
        if n == 0 and (bool((lam > 0.0).any()) if isinstance(lam, torch.Tensor) else lam > 0):
            total = total + lam * model.aux_loss()
        gs = torch.autograd.grad(total.sum(), ps, allow_unused=True)
        acc = [g if s is None else s if g is None else s.add_(g)
               for s, g in zip(acc, gs, strict=True)]
        total_sum += total.detach()
    # a parameter unused at this step (g_phi once lambda_alg is 0) gets a zero gradient
    grads = {k: torch.zeros_like(p) if g is None else g
             for k, p, g in zip(names, ps, acc, strict=True)}
    if st.filt is not None:
        grads = st.filt(grads)
    st.opt.step(model.params, grads, st.per_member(
        lambda r, c: lr_at(step, c.optim, c.steps)))
    return total_sum


def aux_weight(st: Stack, step: int) -> float | torch.Tensor:
    """lambda_alg of each active member at `step`: one float, or a tensor [S]."""
    lam = st.per_member(lambda r, c: st.configs[r].aux_weight(step, c.steps))
    if isinstance(lam, list):
        return torch.tensor(lam, dtype=st.dtype, device=st.device)
    return lam
