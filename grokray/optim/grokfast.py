"""Grokfast gradient filters (ironjr/grokfast), on seed-stacked gradients.

Every tensor is [S, ...]: the filters are elementwise, so each seed is filtered on its own
history exactly as a single-seed run would be. Applied between backward and the optimizer step.

- EMA: mu <- a*mu + (1-a)*g ; g <- g + lam*mu   (mu starts at the first gradient, as the
  reference does: its first update gives mu = g).
- MA:  g <- g + lam * mean(last w gradients, the current one included); with `warmup` only once
  w gradients have been seen (the reference's default).
"""

from __future__ import annotations

import torch

from grokray.config import GrokfastConfig

Grads = dict[str, torch.Tensor]


class EMAFilter:
    """Exponential moving average filter; state `mu` per parameter, stacked over seeds."""

    def __init__(self, alpha: float = 0.98, lamb: float = 2.0) -> None:
        self.alpha, self.lamb = alpha, lamb
        self.mu: Grads | None = None

    def __call__(self, grads: Grads) -> Grads:
        if self.mu is None:
            self.mu = {k: g.detach().clone() for k, g in grads.items()}
        else:
            keys = list(grads)
            mus = [self.mu[k] for k in keys]
            torch._foreach_lerp_(mus, [grads[k] for k in keys], 1.0 - self.alpha)
        return {k: g + self.lamb * self.mu[k] for k, g in grads.items()}

    def select(self, keep: torch.Tensor) -> None:
        """Keep only the seeds at positions `keep` (after some seeds stopped)."""
        if self.mu is not None:
            self.mu = {k: v[keep] for k, v in self.mu.items()}


class MAFilter:
    """Windowed moving average filter: a ring buffer [w, S, ...] and a running sum per tensor."""

    def __init__(self, window: int = 100, lamb: float = 5.0, warmup: bool = True) -> None:
        self.window, self.lamb, self.warmup = window, lamb, warmup
        self.buf: Grads | None = None
        self.total: Grads | None = None
        self.count = 0  # gradients seen

    def __call__(self, grads: Grads) -> Grads:
        w = self.window
        if self.buf is None:
            self.buf = {k: g.new_zeros((w, *g.shape)) for k, g in grads.items()}
            self.total = {k: torch.zeros_like(g) for k, g in grads.items()}
        assert self.total is not None
        slot = self.count % w
        for k, g in grads.items():
            g = g.detach()
            self.total[k] += g - self.buf[k][slot]
            self.buf[k][slot] = g
        self.count += 1
        if self.count % w == 0:  # refresh the running sum exactly, against float drift
            self.total = {k: b.sum(0) for k, b in self.buf.items()}
        n = min(self.count, w)
        if self.warmup and n < w:
            return grads
        return {k: g + (self.lamb / n) * self.total[k] for k, g in grads.items()}

    def select(self, keep: torch.Tensor) -> None:
        """Keep only the seeds at positions `keep`."""
        if self.buf is not None and self.total is not None:
            self.buf = {k: v[:, keep] for k, v in self.buf.items()}
            self.total = {k: v[keep] for k, v in self.total.items()}


def make_filter(cfg: GrokfastConfig) -> EMAFilter | MAFilter | None:
    """The configured filter, or None when `filter` is none."""
    if cfg.filter == "none":
        return None
    if cfg.filter == "ema":
        return EMAFilter(cfg.alpha, 2.0 if cfg.lamb is None else cfg.lamb)
    if cfg.filter == "ma":
        return MAFilter(cfg.window, 5.0 if cfg.lamb is None else cfg.lamb, cfg.warmup)
    raise ValueError(f"unknown grokfast filter {cfg.filter!r}")
