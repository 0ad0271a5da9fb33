"""Seed-batched optimizers over stacked parameters (every tensor [S, ...]).

Each update is elementwise, so seed s moves exactly as `torch.optim.AdamW` / `SGD` would move a
single-seed model (checked in tests/unit/test_trainer.py). A few `torch._foreach_*` calls per
step instead of one optimizer per seed.
"""

from __future__ import annotations

import math

import torch

from grokray.config import OptimConfig

Params = dict[str, torch.Tensor]


class SeedAdamW:
    """AdamW (decoupled weight decay, bias-corrected), same math as torch.optim.AdamW."""

    def __init__(self, params: Params, wd: dict[str, float], cfg: OptimConfig) -> None:
        self.names = list(params)
        self.wd = wd
        self.beta1, self.beta2, self.eps = cfg.beta1, cfg.beta2, cfg.eps
        self.m = {k: torch.zeros_like(p) for k, p in params.items()}
        self.v = {k: torch.zeros_like(p) for k, p in params.items()}
        self.t = 0

    @torch.no_grad()
    def step(self, params: Params, grads: Params, lr: float) -> None:
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        ps = [params[k] for k in self.names]
        gs = [grads[k] for k in self.names]
        ms = [self.m[k] for k in self.names]
        vs = [self.v[k] for k in self.names]
        decay = [1.0 - lr * self.wd[k] for k in self.names]
        torch._foreach_mul_(ps, decay)
        torch._foreach_lerp_(ms, gs, 1.0 - b1)
        torch._foreach_mul_(vs, b2)
        torch._foreach_addcmul_(vs, gs, gs, 1.0 - b2)
        bc1 = 1.0 - b1**self.t
        bc2_sqrt = math.sqrt(1.0 - b2**self.t)
        denom = torch._foreach_sqrt(vs)
        torch._foreach_div_(denom, bc2_sqrt)
        torch._foreach_add_(denom, self.eps)
        torch._foreach_addcdiv_(ps, ms, denom, -lr / bc1)

    def select(self, keep: torch.Tensor) -> None:
        """Keep only the seeds at positions `keep`."""
        self.m = {k: v[keep] for k, v in self.m.items()}
        self.v = {k: v[keep] for k, v in self.v.items()}


class SeedSGD:
    """SGD with momentum and L2 weight decay, same math as torch.optim.SGD (dampening 0)."""

    def __init__(self, params: Params, wd: dict[str, float], cfg: OptimConfig) -> None:
        self.names = list(params)
        self.wd = wd
        self.momentum = cfg.momentum
        self.buf: Params | None = None

    @torch.no_grad()
    def step(self, params: Params, grads: Params, lr: float) -> None:
        d = {k: grads[k] + self.wd[k] * params[k] if self.wd[k] else grads[k] for k in self.names}
        if self.momentum:
            if self.buf is None:
                self.buf = {k: d[k].clone() for k in self.names}
            else:
                for k in self.names:
                    self.buf[k].mul_(self.momentum).add_(d[k])
            d = self.buf
        for k in self.names:
            params[k].add_(d[k], alpha=-lr)

    def select(self, keep: torch.Tensor) -> None:
        """Keep only the seeds at positions `keep`."""
        if self.buf is not None:
            self.buf = {k: v[keep] for k, v in self.buf.items()}


def make_optimizer(params: Params, wd: dict[str, float], cfg: OptimConfig) -> SeedAdamW | SeedSGD:
    """The configured seed-batched optimizer; `wd` maps each parameter name to its decay."""
    if cfg.name == "adamw":
        return SeedAdamW(params, wd, cfg)
    if cfg.name == "sgd":
        return SeedSGD(params, wd, cfg)
    raise ValueError(f"unknown optimizer {cfg.name!r}")
