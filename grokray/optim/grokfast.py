"""Grokfast gradient filters (ironjr/grokfast), on seed-stacked gradients.

Every tensor is [S, ...]: the filters are elementwise, so each seed is filtered on its own
history exactly as a single-seed run would be. Applied between backward and the optimizer step.

- EMA: mu <- a*mu + (1-a)*g ; g <- g + lam*mu   (mu starts at the first gradient, as the
  reference does: its first update gives mu = g).
- MA:  g <- g + lam * mean(last w gradients, the current one included); with `warmup` only once
  w gradients have been seen (the reference's default).

In a pack of configs (grokray.optim.members) every setting may be one per member. `alpha` and
`lamb` vary within one filter: EMA's update is one lerp per tensor with a weight per member (bit
for bit the scalar lerp), the amplification one slice per run of members sharing lamb. The kind,
the MA window and warmup set the state's shape and schedule, so members that differ in them get
a filter each (`MemberFilters`): each run of members sharing them is filtered by its own filter
on its own slice, and a member with filter none is left exactly unfiltered.
"""

from __future__ import annotations

import torch

from grokray.config import GrokfastConfig
from grokray.optim.members import per_member, runs

Grads = dict[str, torch.Tensor]


def _amplify(grads: Grads, state: Grads, lambs: list[float], out: Grads | None,
             scale: float = 1.0) -> Grads:
    """g + (lam * scale) * state, each run of members with its own lam, into `out` (the
    filter's buffers, reused from step to step: a fresh tensor per parameter and step cost
    more than the arithmetic on a small model, benchmarks/README.md); the arithmetic of an
    element is the same (one product, one sum). Returns `out` (new buffers when it is None or
    of another shape)."""
    if out is None or any(out[k].shape != g.shape for k, g in grads.items()):
        out = {k: torch.empty_like(g) for k, g in grads.items()}
    for s0, s1, lam in runs(lambs):
        for k, g in grads.items():
            o = out[k][s0:s1]
            torch.mul(state[k][s0:s1], lam * scale, out=o)
            o.add_(g[s0:s1])
    return out


class EMAFilter:
    """Exponential moving average filter; state `mu` per parameter, stacked over seeds."""

    def __init__(self, alpha: float | list[float] = 0.98, lamb: float | list[float] = 2.0
                 ) -> None:
        self.alpha, self.lamb = alpha, lamb
        self.mu: Grads | None = None
        self.out: Grads | None = None
        """the filtered gradients' buffers (`_amplify`)"""
        self.weight: Grads | None = None
        """1 - alpha per member, shaped to broadcast over each state tensor (several alphas)"""

    def __call__(self, grads: Grads) -> Grads:
        S = next(iter(grads.values())).shape[0]
        self.alpha, self.lamb = per_member(self.alpha, S), per_member(self.lamb, S)
        if self.mu is None:
            self.mu = {k: g.detach().clone() for k, g in grads.items()}
        else:
            alphas = runs(self.alpha)
            if len(alphas) == 1:
                torch._foreach_lerp_(list(self.mu.values()), [grads[k] for k in self.mu],
                                     1.0 - alphas[0][2])
            else:  # one lerp per tensor with a weight per member: bit for bit the scalar one
                if self.weight is None:
                    w = torch.tensor([1.0 - a for a in self.alpha], dtype=torch.float64)
                    self.weight = {k: w.to(m.device, m.dtype).view(-1, *[1] * (m.dim() - 1))
                                   for k, m in self.mu.items()}
                for k, m in self.mu.items():
                    m.lerp_(grads[k], self.weight[k])
        self.out = _amplify(grads, self.mu, self.lamb, self.out)
        return self.out

    def select(self, keep: torch.Tensor) -> None:
        """Keep only the seeds at positions `keep` (after some seeds stopped)."""
        if self.mu is not None:
            self.mu = {k: v[keep] for k, v in self.mu.items()}
        self.out = self.weight = None
        idx = keep.tolist()
        if isinstance(self.alpha, list):
            self.alpha = [self.alpha[i] for i in idx]
        if isinstance(self.lamb, list):
            self.lamb = [self.lamb[i] for i in idx]


class MAFilter:
    """Windowed moving average filter: a ring buffer [w, S, ...] and a running sum per tensor."""

    def __init__(self, window: int = 100, lamb: float | list[float] = 5.0,
                 warmup: bool = True) -> None:
        self.window, self.lamb, self.warmup = window, lamb, warmup
        self.buf: Grads | None = None
        self.total: Grads | None = None
        self.out: Grads | None = None
        """the filtered gradients' buffers (`_amplify`)"""
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
        lambs = per_member(self.lamb, next(iter(grads.values())).shape[0])
        self.out = _amplify(grads, self.total, [lam / n for lam in lambs], self.out)
        return self.out

    def select(self, keep: torch.Tensor) -> None:
        """Keep only the seeds at positions `keep`."""
        if self.buf is not None and self.total is not None:
            self.buf = {k: v[:, keep] for k, v in self.buf.items()}
            self.total = {k: v[keep] for k, v in self.total.items()}
        self.out = None
        if isinstance(self.lamb, list):
            self.lamb = [self.lamb[i] for i in keep.tolist()]


Filter = EMAFilter | MAFilter


class MemberFilters:
    """Members that differ in filter kind, MA window or warmup: consecutive runs of members,
    each with its own filter (None: unfiltered) on its own slice [s0:s1] of every gradient."""

    def __init__(self, parts: list[tuple[Filter | None, int]]) -> None:
        self.parts = parts
        """(filter or None, members) per run, in member order"""

    def __call__(self, grads: Grads) -> Grads:
        outs: list[Grads] = []
        s0 = 0
        for filt, n in self.parts:
            part = {k: g[s0:s0 + n] for k, g in grads.items()}
            outs.append(part if filt is None else filt(part))
            s0 += n
        return {k: torch.cat([o[k] for o in outs]) for k in grads}

    def locate(self, i: int) -> tuple[Filter | None, int, slice]:
        """The filter member i (stack position) runs through, its position there, and the
        stack positions that filter holds."""
        s0 = 0
        for filt, n in self.parts:
            if i < s0 + n:
                return filt, i - s0, slice(s0, s0 + n)
            s0 += n
        raise IndexError(f"member {i} is not in the filters' {s0} members")

    def select(self, keep: torch.Tensor) -> None:
        """Keep only the members at positions `keep`; a run with none left goes."""
        idx, parts, s0 = keep.tolist(), [], 0
        for filt, n in self.parts:
            mine = [i - s0 for i in idx if s0 <= i < s0 + n]
            if mine:
                if filt is not None:
                    filt.select(torch.tensor(mine, device=keep.device))
                parts.append((filt, len(mine)))
            s0 += n
        self.parts = parts


def make_filter(cfg: GrokfastConfig | list[GrokfastConfig]
                ) -> EMAFilter | MAFilter | MemberFilters | None:
    """The configured filter, or None when `filter` is none; given one config per member,
    their alpha and lamb per member, and a filter per run of members sharing kind, window and
    warmup when they differ (`MemberFilters`)."""
    if isinstance(cfg, list):
        shape = [_state(c) for c in cfg]
        parts = runs(shape)
        if len(parts) > 1:
            return MemberFilters([(make_filter(cfg[s0:s1]), s1 - s0) for s0, s1, _ in parts])
    cfgs = cfg if isinstance(cfg, list) else [cfg]
    c = cfgs[0]
    default = {"ema": 2.0, "ma": 5.0}.get(c.filter, 0.0)
    lambs = [default if x.lamb is None else x.lamb for x in cfgs]
    lamb = lambs if isinstance(cfg, list) else lambs[0]
    if c.filter == "none":
        return None
    if c.filter == "ema":
        return EMAFilter([x.alpha for x in cfgs] if isinstance(cfg, list) else c.alpha, lamb)
    if c.filter == "ma":
        return MAFilter(c.window, lamb, c.warmup)
    raise ValueError(f"unknown grokfast filter {c.filter!r}")


def _state(c: GrokfastConfig) -> tuple:
    """What sets a filter's state and schedule: the kind, and for MA the window and warmup."""
    return (c.filter, c.window, c.warmup) if c.filter == "ma" else (c.filter,)
