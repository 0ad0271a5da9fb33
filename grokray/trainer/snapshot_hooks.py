"""The snapshot hooks: each trial of a stack has its own `grokray.snapshots.Recorder` (seeds
repeat across the configs of a pack), called at every eval and where a member stops; a member
that spent its budget also keeps its training state (optimizer, filter, sampling stream), which
a continued run picks up."""

from __future__ import annotations

from typing import Any

import numpy as np

from grokray.evals import EvalSchedule
from grokray.metrics.grokking import SeedTrack
from grokray.optim.state import member_state
from grokray.snapshots import Recorder
from grokray.trainer.stack import Stack


class SnapshotHooks:
    """One recorder per trial of the stack."""

    def __init__(self, st: Stack, schedules: list[EvalSchedule]) -> None:
        self.recorders = [Recorder(r.cfg, ev.steps(), st.model.params)
                          for r, ev in zip(st.runs, schedules, strict=True)]

    def at_eval(self, st: Stack, step: int, due: list[int], tracks: dict[int, SeedTrack | None]
                ) -> None:
        """The snapshots this eval is a snapshot step of, of the members in `due` (positions;
        `tracks` by position)."""
        index = {p: i for i, p in enumerate(st.active)}
        for ri in dict.fromkeys(st.member_run[p] for p in due):
            mine = [p for p in due if st.member_run[p] == ri]
            self.recorders[ri].at_eval(step, [st.seeds[p] for p in mine], st.model.params,
                                       {st.seeds[p]: tracks[p] for p in mine},
                                       index=[index[p] for p in mine])

    def at_end(self, st: Stack, pos: int, step: int) -> None:
        """The end snapshot of the member at `pos` (still in the stack), which stopped at
        `step` grokked or not; at its budget with its training state."""
        i = st.active.index(pos)
        state = member_arrays(st, pos, i) if step == st.steps[pos] else None
        self.recorders[st.member_run[pos]].at_end(st.seeds[pos], step, i, st.model.params,
                                                  state)

    def add(self, ri: int, records: list[dict[str, Any]]) -> None:
        """Snapshot records of trial `ri` taken before (a continued run's, read back)."""
        self.recorders[ri].add(records)

    def close(self, st: Stack) -> None:
        """Hand each trial its snapshot records."""
        for run, rec in zip(st.runs, self.recorders, strict=True):
            run.snapshots = rec.records()


def member_arrays(st: Stack, pos: int, i: int) -> dict[str, np.ndarray]:
    """What member `pos` (stack index i) needs to continue past its budget: optimizer and
    filter state (grokray.optim.state) and its mini-batch stream (a checkpoint adds its
    parameters and its model's sampling stream: grokray.trainer.checkpointer)."""
    out = member_state(st.opt, st.filt, i)
    if st.minibatches is not None:
        out.update(st.minibatches.state(pos))
    return out
