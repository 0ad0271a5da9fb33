"""The in-process executor: configs one after another in this process, without Ray
(`--local`, debugging and tests)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from grokray.config import TrialConfig
from grokray.errors import GrokrayError
from grokray.sweep.outcome import TrialFn, default_trial_fn, execute
from grokray.sweep.search import SearchRun

if TYPE_CHECKING:
    from grokray.sweep.executor import Sink


class LocalExecutor:
    """Runs `trial_fn` (default `grokray.trainer.run_trial`) on each config in this process."""

    def __init__(self, trial_fn: TrialFn | None = None):
        self.trial_fn = trial_fn

    def run_search(self, search: SearchRun, sink: Sink) -> None:
        raise GrokrayError("a search runs on Ray only (Optuna through Ray Tune); drop --local")

    def run(self, configs: Sequence[TrialConfig], sink: Sink) -> None:
        fn = self.trial_fn or default_trial_fn()
        for cfg in configs:
            sink.started(cfg)
            out = execute(cfg, fn)
            out.node_id = "local"
            sink.finished(out)
