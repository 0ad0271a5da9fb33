"""Taking snapshots as a trial trains: `Recorder` (the gradient trainer's snapshot hooks and
RFM's fit call it), and `to_tensor`, a stored row's tensor shaped. What is kept and when:
grokray.snapshots."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from grokray.evals import log_steps
from grokray.metrics.norms import group_of

MB = 1 << 20
STATE = "state/"
"""tensor-name prefix of the training state kept in an end snapshot (grokray.optim.state)"""
TAGS = ("log", "init", "memorize", "grok", "end")
"""why a snapshot was taken (a snapshot can have several reasons)"""
COLUMNS = ["seed", "step", "tags", "tensor", "shape", "dtype", "values"]
"""the columns of a TrialResult's snapshot records (the store adds the key columns)"""


class Recorder:
    """Takes one trial's snapshots as it trains (the gradient trainer calls it at evals)."""

    def __init__(self, cfg: Any, eval_steps: list[int], params: dict[str, torch.Tensor],
                 total: int | None = None) -> None:
        """`params` stacked [S, ...] (their shapes set the budget); `total` the last step
        (default `cfg.steps`; RFM: its iterations)."""
        sc = cfg.snapshots
        total = cfg.steps if total is None else total
        self.on = bool(sc.keep)
        want = set(sc.tensors)
        self.names = [k for k in params if not want or group_of(k) in want]
        per = sum(params[k][0].numel() * params[k].element_size() for k in self.names)
        self.log = _log_targets(eval_steps, total, sc.per_decade)
        budget = sc.max_mb * MB / max(1, len(cfg.seeds) * per)  # snapshots per seed allowed
        while self.log and len(self.log) + 4 > budget:  # + init, memorize, grok, end
            self.log = self.log[1::2] if len(self.log) > 1 else []
        self.log_set = set(self.log)
        self.taken: dict[tuple[int, int], dict[str, Any]] = {}

    def at_eval(self, step: int, seeds: list[int], params: dict[str, torch.Tensor],
                tracks: dict[int, Any], index: list[int] | None = None) -> None:
        """Snapshot the seeds that this eval is a snapshot step of: `seeds` in stack order, or
        at the stack positions `index` (a pack's trainer: one recorder per config), `tracks`
        by seed."""
        if not self.on:
            return
        for j, seed in enumerate(seeds):
            i = j if index is None else index[j]
            tags = ["init"] if step == 0 else []
            tags += ["log"] if step in self.log_set else []
            tr = tracks.get(seed)
            tags += ["memorize"] if tr is not None and tr.memorize_step == step else []
            tags += ["grok"] if tr is not None and tr.grok_step == step else []
            if tags:
                self._take(seed, step, i, params, tags)

    def at_end(self, seed: int, step: int, i: int, params: dict[str, torch.Tensor],
               state: dict[str, np.ndarray] | None = None) -> None:
        """Snapshot seed `seed` (stack position i) where it finished; with `state` (a seed
        that ran out of budget: what training needs to go on, grokray.optim.state) the state
        too, as tensors `state/<name>` (outside the size budget), with `state/param.<name>`
        for each parameter `snapshots.tensors` leaves out."""
        if not self.on:
            return
        extra = None
        if state is not None:
            extra = {f"{STATE}param.{k}": params[k][i].detach().to("cpu", copy=True).numpy()
                     for k in params if k not in self.names}
            extra.update({STATE + k: v for k, v in state.items()})
        self._take(seed, step, i, params, ["end"], extra)

    def add(self, records: list[dict[str, Any]]) -> None:
        """Keep snapshot records taken before (a continued run's, read back)."""
        for r in records if self.on else []:
            snap = self.taken.setdefault((r["seed"], r["step"]), {"tags": [], "tensors": {}})
            snap["tags"] += [t for t in r["tags"].split(",") if t and t not in snap["tags"]]
            snap["tensors"][r["tensor"]] = np.asarray(r["values"]).reshape(r["shape"])

    def _take(self, seed: int, step: int, i: int, params: dict[str, torch.Tensor],
              tags: list[str], extra: dict[str, np.ndarray] | None = None) -> None:
        have = self.taken.get((seed, step))
        if have is None:
            have = self.taken[(seed, step)] = {"tags": [], "tensors": {
                k: params[k][i].detach().to("cpu", copy=True).numpy() for k in self.names}}
        have["tags"] += [t for t in tags if t not in have["tags"]]
        have["tensors"].update(extra or {})

    def records(self) -> list[dict[str, Any]]:
        """One record per (seed, step, tensor): COLUMNS, `values` flat."""
        out = []
        for (seed, step), snap in sorted(self.taken.items()):
            tags = ",".join(t for t in TAGS if t in snap["tags"])
            for name, a in snap["tensors"].items():
                out.append({"seed": seed, "step": step, "tags": tags, "tensor": name,
                            "shape": list(a.shape), "dtype": str(a.dtype),
                            "values": a.reshape(-1)})
        return out


def _log_targets(eval_steps: list[int], steps: int, per_decade: int) -> list[int]:
    """The first eval at or after each log-spaced step (without step 0 and the last eval,
    kept anyway as init and end)."""
    evs = np.asarray(sorted(eval_steps))
    out = set()
    for t in sorted(log_steps(steps, per_decade) - {0, steps}):
        j = int(np.searchsorted(evs, t))
        if j < len(evs):
            out.add(int(evs[j]))
    return sorted(out - {0, steps})


def to_tensor(row: Any) -> np.ndarray:
    """A snapshot row's tensor, shaped (works on any pandas row of the snapshots table)."""
    return np.array(row["values"], dtype=row["dtype"]).reshape(list(row["shape"]))
