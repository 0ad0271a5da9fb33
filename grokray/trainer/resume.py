"""A continued run inside the trainer: each continued member's end snapshot (parameters,
optimizer and filter state, sampling stream) put into its slot of the stack, and its evals
before the start replayed (curve rows, grok track, eval count, snapshots), as if this run had
taken them. What the members continue from is read by `grokray.continuation.load`."""

from __future__ import annotations

import torch

from grokray.optim.state import load_member_state
from grokray.trainer.evaluate import Evaluator
from grokray.trainer.snapshot_hooks import SnapshotHooks
from grokray.trainer.stack import Stack
from grokray.trainer.stopping import StoppingRule


def restore(st: Stack) -> int:
    """Put each continued member's end snapshot into its slot; the step training starts from.
    The members of a pack continue from one step (its `resume.step` is in the pack key)."""
    starts = {r.resumed.step if r.resumed is not None else 0 for r in st.runs}
    if len(starts) != 1:
        raise ValueError(f"members of one stack continue from different steps {starts}")
    with torch.no_grad():
        for p, (ri, seed) in enumerate(st.members):
            res = st.runs[ri].resumed
            assert res is not None
            state = res.seeds[seed]
            for k, v in st.model.params.items():
                v[p].copy_(torch.from_numpy(state.params[k]))
            load_member_state(st.opt, st.filt, p, state.state, st.model.params)
            if st.minibatches is not None:
                st.minibatches.load(p, state.state)
    return starts.pop()


def replay(st: Stack, evaluator: Evaluator, stopping: StoppingRule,
           snaps: SnapshotHooks) -> None:
    """Each continued member's evals before its start: its curve rows (read back), replayed
    through the stopping rule and counted; its snapshots before the start kept."""
    for pos in st.active:
        ri, seed = st.member_run[pos], st.seeds[pos]
        res = st.runs[ri].resumed
        assert res is not None
        state = res.seeds[seed]
        stopping.replay(pos, state.rows)
        evaluator.replay(pos, state.rows)
        st.runs[ri].rows.extend(state.rows)
        snaps.add(ri, state.snapshots)
