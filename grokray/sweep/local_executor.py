"""The in-process executor: configs one after another in this process, without Ray
(`--local`, debugging and tests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from grokray.config import TrialConfig
from grokray.errors import GrokrayError
from grokray.sweep.batching import (
    device_bytes,
    fit_device,
    free_bytes,
    pack_groups,
    pack_limit,
    pack_size,
)
from grokray.sweep.outcome import TrialFn, default_trial_fn, execute, execute_pack
from grokray.sweep.search import SearchRun

if TYPE_CHECKING:
    from grokray.sweep.executor import Sink


class LocalExecutor:
    """Runs `trial_fn` (default `grokray.trainer.run_trial`) on each config in this process, or
    packs of configs of one shape (`pack`, with the default trial function)."""

    def __init__(self, trial_fn: TrialFn | None = None, pack: int | None = 1):
        self.trial_fn = trial_fn
        self.pack = pack
        """configs per pack (1: off; None: auto, `batching.pack_size` on one slot)"""

    def run_search(self, search: SearchRun, sink: Sink) -> None:
        raise GrokrayError("a search runs on Ray only (Optuna through Ray Tune); drop --local")

    def run(self, configs: Sequence[TrialConfig], sink: Sink) -> None:
        fn = self.trial_fn or default_trial_fn()
        dev = device_bytes()
        size = 1 if self.trial_fn is not None else \
            pack_size(configs, 1, self.pack,
                      dev is not None and any(c.device != "cpu" for c in configs))
        limit = (lambda c: pack_limit(c, dev)) if self.pack is None else None  # noqa: E731
        for group in pack_groups(configs, size, limit):
            for part in fit_device([configs[i] for i in group], free_bytes(configs[group[0]])):
                self._run([configs[group[i]] for i in part], fn, sink)

    def _run(self, batch: list[TrialConfig], fn: TrialFn, sink: Sink) -> None:
        """One pack (or one config) in this process."""
        for cfg in batch:
            sink.started(cfg)
        outs = execute_pack(batch) if len(batch) > 1 else [execute(batch[0], fn)]
        for out in outs:
            out.node_id = "local"
            sink.finished(out)
