"""One member's training state as named arrays, and back: what an end snapshot keeps so that a
run censored at its budget can go on exactly where it stopped (grokray.sweep.continuing plans
it, grokray.trainer.pickup puts it back).

Names (rows of the snapshots table, tensor `state/<name>`): the optimizer's `opt.t` (steps
taken) and AdamW's moments `opt.m.<param>`, `opt.v.<param>` or SGD's momentum `opt.buf.<param>`;
the Grokfast EMA's `grokfast.mu.<param>`, the MA's ring buffer `grokfast.buf.<param>` [w, ...],
running sum `grokfast.total.<param>` and `grokfast.count`. Every array is member i's slice of the
stacked state; scalars that the stack shares (step counts) are the same for every member.
"""

from __future__ import annotations

import numpy as np
import torch

from grokray.optim.grokfast import EMAFilter, MAFilter, MemberFilters
from grokray.optim.optimizers import SeedAdamW, SeedSGD

Arrays = dict[str, np.ndarray]


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to("cpu", copy=True).numpy()


Filt = EMAFilter | MAFilter | MemberFilters | None


def _member_filter(filt: Filt, i: int) -> tuple[EMAFilter | MAFilter | None, int, slice]:
    """The filter member i (stack position) runs through, its position there, and the stack
    positions that filter holds: a pack whose members differ in filter kind holds one filter
    per run of members (MemberFilters.locate)."""
    if isinstance(filt, MemberFilters):
        return filt.locate(i)
    return filt, i, slice(None)


def member_state(opt: SeedAdamW | SeedSGD, filt: Filt, i: int) -> Arrays:
    """Member i's optimizer and filter state (stack position i)."""
    out: Arrays = {}
    if isinstance(opt, SeedAdamW):
        out["opt.t"] = np.array(opt.t, dtype=np.int64)
        for k in opt.names:
            out[f"opt.m.{k}"], out[f"opt.v.{k}"] = _np(opt.m[k][i]), _np(opt.v[k][i])
    else:
        out["opt.t"] = np.array(0 if opt.buf is None else 1, dtype=np.int64)
        for k, b in (opt.buf or {}).items():
            out[f"opt.buf.{k}"] = _np(b[i])
    filt, i, _ = _member_filter(filt, i)
    if isinstance(filt, EMAFilter) and filt.mu is not None:
        for k, v in filt.mu.items():
            out[f"grokfast.mu.{k}"] = _np(v[i])
    elif isinstance(filt, MAFilter) and filt.buf is not None and filt.total is not None:
        out["grokfast.count"] = np.array(filt.count, dtype=np.int64)
        for k in filt.buf:
            out[f"grokfast.buf.{k}"] = _np(filt.buf[k][:, i])
            out[f"grokfast.total.{k}"] = _np(filt.total[k][i])
    return out


@torch.no_grad()
def load_member_state(opt: SeedAdamW | SeedSGD, filt: Filt, i: int,
                      state: Arrays, params: dict[str, torch.Tensor]) -> None:
    """Put `state` (what `member_state` gave) into member i's slice of the stacked state;
    `params` (stacked) give the shapes of state not yet created."""
    def put(dst: torch.Tensor, name: str) -> None:
        dst.copy_(torch.from_numpy(np.asarray(state[name])))

    if isinstance(opt, SeedAdamW):
        opt.t = int(state["opt.t"])
        for k in opt.names:
            put(opt.m[k][i], f"opt.m.{k}")
            put(opt.v[k][i], f"opt.v.{k}")
    elif int(state.get("opt.t", 0)) and opt.momentum:
        if opt.buf is None:
            opt.buf = {k: torch.zeros_like(params[k]) for k in opt.names}
        for k in opt.names:
            put(opt.buf[k][i], f"opt.buf.{k}")
    filt, i, rows = _member_filter(filt, i)
    params = {k: p[rows] for k, p in params.items()}
    if isinstance(filt, EMAFilter) and any(n.startswith("grokfast.mu.") for n in state):
        if filt.mu is None:
            filt.mu = {k: torch.zeros_like(p) for k, p in params.items()}
        for k in filt.mu:
            put(filt.mu[k][i], f"grokfast.mu.{k}")
    elif isinstance(filt, MAFilter) and "grokfast.count" in state:
        if filt.buf is None:
            filt.buf = {k: p.new_zeros((filt.window, *p.shape)) for k, p in params.items()}
            filt.total = {k: torch.zeros_like(p) for k, p in params.items()}
        assert filt.total is not None
        filt.count = int(state["grokfast.count"])
        for k in filt.buf:
            put(filt.buf[k][:, i], f"grokfast.buf.{k}")
            put(filt.total[k][i], f"grokfast.total.{k}")
