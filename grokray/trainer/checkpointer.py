"""The gradient trainer's state to checkpoint files and back.

`Checkpointer` runs inside the trainer: at the top of a step (that step's eval, snapshots and
finished seeds done, its update not yet taken), when `checkpoint_every` seconds of trial time
have passed since the last checkpoint or the driver asked (`Hook.asked`), it makes each trial's
delta and state (grokray.checkpoint) and hands them to the hook; at the end of training, once
more if the driver asked and the trial has not answered yet (`at_end`).
grokray/checkpoint/restore.py reads them back.

A seed's state (names as in an end snapshot's `state/` tensors, grokray.optim.state): its
parameters `param.<name>`, `opt.*` and `grokfast.*` (grokray.optim.state.member_state), its
mini-batch stream `rng.batch`, `rng.pos`, `rng.perm`, and its model's sampling stream `rng.model`
(FORGE's triples of the sampled L_assoc and the sampled identity and inverse losses).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from grokray.checkpoint.format import Part, encode
from grokray.checkpoint.hook import Hook
from grokray.checkpoint.restore import PARAM
from grokray.trainer.snapshot_hooks import member_arrays


class Checkpointer:
    """Takes a trial's (or a pack's) checkpoints as it trains."""

    def __init__(self, stack: Any, recorders: list[Any], hook: Hook, every_s: float,
                 start: int) -> None:
        """`stack` the trainer's (grokray.trainer.stack.Stack), `recorders` each trial's
        snapshot recorder, `start` the step training starts at: a run's first step, or the step
        of the checkpoint it was restored from (its trials' `checkpoint_step`), whose chain goes
        on."""
        self.stack, self.recorders = stack, recorders
        self.hook, self.every = hook, float(every_s)
        runs = stack.runs
        self.chain_start = [start if r.checkpoint_step is None else r.chain_start for r in runs]
        self.prev = start
        """the step of the last checkpoint (or the start)"""
        self.first = all(r.checkpoint_step is None for r in runs)
        """the next checkpoint is its chain's first"""
        self.t_last = time.perf_counter()
        self.row_mark = [len(r.rows) for r in runs]
        self.snaps_saved = [set(r.taken) for r in recorders]
        self.fin_saved = [set(r.outcome) for r in runs]
        self.taken = 0
        """checkpoints taken (tests, the benchmark)"""

    def maybe(self, step: int) -> None:
        """Checkpoint at the top of `step` when it is due."""
        asked = self.hook.asked()
        if step == self.prev and not self.first:
            return  # a restored run, at the checkpoint it was restored from
        if asked or time.perf_counter() - self.t_last >= self.every:
            self.take(step)

    def at_end(self, step: int) -> None:
        """Every member has finished at `step`: checkpoint once more when the driver asked and
        this trial has not answered (`Hook.asked_at_end`); the chain then holds every seed's
        outcome, and a run restored from it trains nothing."""
        if step == self.prev and not self.first:
            return  # its newest checkpoint is at this very step
        if self.hook.asked_at_end():
            self.take(step)

    def take(self, step: int) -> None:
        """Checkpoint every trial of the stack at the top of `step`."""
        for ri, run in enumerate(self.stack.runs):
            delta, state = self._parts(ri, run, step)
            self.hook.save(run.cfg.config_hash(), step, encode(delta), encode(state))
        self.prev, self.first = step, False
        self.taken += 1
        self.t_last = time.perf_counter()

    def _parts(self, ri: int, run: Any, step: int) -> tuple[Part, Part]:
        st = self.stack
        h = run.cfg.config_hash()
        head = {"start": self.chain_start[ri], "first": self.first}
        delta = Part("delta", h, step, self.prev, meta=dict(head))
        rows = run.rows[self.row_mark[ri]:]
        self.row_mark[ri] = len(run.rows)
        delta.meta["rows"] = [dict(r) for r in rows]
        snaps = []
        rec = self.recorders[ri]
        for key in sorted(set(rec.taken) - self.snaps_saved[ri]):
            snap = rec.taken[key]
            snaps.append({"seed": key[0], "step": key[1], "tags": list(snap["tags"]),
                          "tensors": {k: delta.add(v) for k, v in snap["tensors"].items()}})
            self.snaps_saved[ri].add(key)
        delta.meta["snapshots"] = snaps
        mine = [s for p, s in zip(st.member_run, st.seeds, strict=True) if p == ri]
        delta.meta["finished"] = []
        for s in mine:
            if s in run.outcome and s not in self.fin_saved[ri]:
                out = dataclasses.asdict(run.outcome[s])
                out.pop("artifacts", None)
                delta.meta["finished"].append(out)
                self.fin_saved[ri].add(s)
        state = Part("state", h, step, self.prev, meta=dict(head))
        seeds: dict[str, dict[str, int]] = {}
        for i, pos in enumerate(st.active):
            if st.member_run[pos] != ri:
                continue
            arrays = {PARAM + k: v[i].detach().to("cpu", copy=True).numpy()
                      for k, v in st.model.params.items()}
            arrays.update(member_arrays(st, pos, i))
            arrays.update(st.model.rng_state(i))
            seeds[str(st.seeds[pos])] = {k: state.add(np.asarray(v)) for k, v in arrays.items()}
        state.meta["seeds"] = seeds
        state.meta["origin"] = _origin(run)
        return delta, state


def _origin(run: Any) -> list[Any]:
    """(continued_from, continued_from_step) of the trial's continued seeds
    (grokray.sweep.continuing)"""
    res = run.pickup
    if res is None or not res.config_hash:
        return [None, None]
    return [res.config_hash, res.from_step if res.from_step is not None else res.step]
