"""What runs a sweep's trials: the `Executor` interface and the `Sink` it reports to. This
module knows none of the executors (`factory.make_executor` picks one).

Every executor calls `sink.started(config)` when a config goes to a worker and
`sink.finished(outcome)` once per config, on the driver, in this process; the sink
(`writer.Writer`) is the one writer of results. An exception in a trial is a failed outcome (the
sweep goes on); a lost worker is retried by the retry loop (`retry.CallQueue`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from grokray.config import TrialConfig
from grokray.sweep.outcome import Outcome
from grokray.sweep.search import SearchRun


class Sink(Protocol):
    """Receives trial events on the driver."""

    def started(self, config: TrialConfig) -> None:
        """A trial began running."""

    def finished(self, outcome: Outcome) -> None:
        """A trial ended (success or failure); called once per config."""


class Executor(Protocol):
    """Runs trials and reports them to a sink (blocking)."""

    def run(self, configs: Sequence[TrialConfig], sink: Sink) -> None:
        """Run every config and report each one to `sink`."""

    def run_search(self, search: SearchRun, sink: Sink) -> None:
        """Sample and run `search.num_samples` configs, reporting each to `sink`."""
