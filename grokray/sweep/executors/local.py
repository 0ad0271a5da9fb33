"""The in-process executor: configs one after another in this process, without Ray
(`--local`, debugging and tests)."""

from __future__ import annotations

from collections.abc import Sequence

from grokray.config import TrialConfig
from grokray.errors import GrokrayError
from grokray.sweep.executors.base import Sink
from grokray.sweep.executors.calls import WorkerCall, run_call
from grokray.sweep.executors.packing import device_bytes, packs
from grokray.sweep.outcome import TrialFn
from grokray.sweep.search import SearchRun


class LocalExecutor:
    """Runs `trial_fn` (default `grokray.trainer.run_trial`) on each config in this process, or
    packs of configs of one shape (`pack`, with the default trial function), in grid order;
    each on the torch threads of a trial holding `cpu` CPUs, as on Ray (`calls.run_call`)."""

    def __init__(self, trial_fn: TrialFn | None = None, pack: int | None = 1,
                 cpu: float = 1.0):
        self.trial_fn = trial_fn
        self.pack = pack
        """configs per pack (1: off; None: auto, `packing.packs` on one slot)"""
        self.cpu = cpu
        """a trial's `resources.cpu`: its torch threads (`grokray.threads.trial_threads`)"""

    def run_search(self, search: SearchRun, sink: Sink) -> None:
        raise GrokrayError("a search runs on Ray only (Optuna through Ray Tune); drop --local")

    def run(self, configs: Sequence[TrialConfig], sink: Sink) -> None:
        for call in self.calls(configs):
            for cfg in call.configs:
                sink.started(cfg)
            for out in run_call(call, self.trial_fn, node="local", cpu=self.cpu):
                sink.finished(out)

    def calls(self, configs: Sequence[TrialConfig]) -> list[WorkerCall]:
        """One call per pack or config, in grid order (a pack where its first config is); this
        process's device counts as the trials' (`gpu` 1 when CUDA is here and a config asks
        for it)."""
        if self.trial_fn is not None:
            return [WorkerCall([c]) for c in configs]
        cuda = device_bytes() is not None and any(c.device != "cpu" for c in configs)
        return [WorkerCall([configs[i] for i in g], packed=len(g) > 1)
                for g in packs(configs, 1, self.pack, 1.0 if cuda else 0.0)]
