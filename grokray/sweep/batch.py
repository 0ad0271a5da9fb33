"""Where a batch of configs is run: the loop a Ray worker runs for one call, whatever the
executor (a Tune trial or a warm worker)."""

from __future__ import annotations

from collections.abc import Sequence

from grokray.config import TrialConfig
from grokray.sweep.batching import fit_device, free_bytes, pack_groups
from grokray.sweep.outcome import Outcome, TrialFn, default_trial_fn, execute, execute_pack


def run_batch(configs: Sequence[TrialConfig], trial_fn: TrialFn | None,
              pack: int = 1) -> list[Outcome]:
    """Run `configs` one after the other in this worker (`trial_fn`, default
    `grokray.trainer.run_trial`), each outcome stamped with this Ray node's id; a trial's
    traceback goes to this worker's log (Ray's log files). With `pack` > 1 (and the default
    trial function) configs of one shape train as packs of up to `pack` configs
    (`batching.pack_groups`, `outcome.execute_pack`), a pack on CUDA split to fit this
    worker's free device memory (`batching.fit_device`); outcomes keep the order of
    `configs`."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    fn = trial_fn or default_trial_fn()
    groups = pack_groups(configs, pack) if trial_fn is None else [[i] for i in range(len(configs))]
    groups = [[g[j] for j in part] for g in groups for part in (
        fit_device([configs[i] for i in g], free_bytes(configs[g[0]])) if len(g) > 1 else [[0]])]
    outs: dict[int, Outcome] = {}
    for group in groups:
        done = execute_pack([configs[i] for i in group]) if len(group) > 1 else \
            [execute(configs[group[0]], fn)]
        for i, out in zip(group, done, strict=True):
            out.node_id = node
            if out.traceback:
                print(out.traceback, flush=True)  # lands in Ray's worker log
            outs[i] = out
    return [outs[i] for i in range(len(configs))]
