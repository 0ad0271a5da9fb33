"""Where a batch of configs is run: the loop a Ray worker runs for one call, whatever the
executor (a Tune trial or a warm worker)."""

from __future__ import annotations

from collections.abc import Sequence

from grokray.config import TrialConfig
from grokray.sweep.outcome import Outcome, TrialFn, default_trial_fn, execute


def run_batch(configs: Sequence[TrialConfig], trial_fn: TrialFn | None) -> list[Outcome]:
    """Run `configs` one after the other in this worker (`trial_fn`, default
    `grokray.trainer.run_trial`), each outcome stamped with this Ray node's id; a trial's
    traceback goes to this worker's log (Ray's log files)."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    fn = trial_fn or default_trial_fn()
    outs = []
    for cfg in configs:
        out = execute(cfg, fn)
        out.node_id = node
        if out.traceback:
            print(out.traceback, flush=True)  # lands in Ray's worker log
        outs.append(out)
    return outs
