"""What runs a sweep's trials: the `Executor` interface, the `Sink` it reports to, and
`make_executor`, which picks one of the three for a sweep.

    LocalExecutor   in this process, one config after another (--local, tests)
    WarmExecutor    a grid on the warm workers of an embedded local Ray
    TuneExecutor    a search, or any sweep on a joined cluster, on Ray Tune

Every executor calls `sink.started(config)` when a config goes to a worker and
`sink.finished(outcome)` once per config, on the driver, in this process; the sink
(`runner.Writer`) is the one writer of results. An exception in a trial is a failed outcome (the
sweep goes on); a lost worker is retried by `retry.Retries`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from grokray.config import TrialConfig
from grokray.sweep.outcome import Outcome
from grokray.sweep.search import SearchRun

if TYPE_CHECKING:
    from grokray.sweep.session import RaySession


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


def make_executor(spec: Any, run_id: str, session: RaySession | None,  # noqa: ANN401
                  pack: int | None = 1) -> Executor:
    """The executor of `spec` (a SweepSpec) in this run: in process without a `session`; a
    search or a joined cluster on Ray Tune (its experiment state under `<sweep dir>/_ray`); a
    grid on an embedded local Ray on the session's warm workers. `pack` (configs per pack, 1:
    off, None: auto) packs a grid in process, on warm workers and on Ray Tune (a Tune trial is
    one pack); a search runs one config per trial."""
    if session is None:
        from grokray.sweep.local_executor import LocalExecutor

        return LocalExecutor(pack=pack)
    res = dict(cpu=spec.cpu, gpu=spec.gpu, concurrency=spec.concurrency, retries=spec.retries)
    if spec.search is None and not session.joined:
        from grokray.sweep.warm_executor import WarmExecutor

        return WarmExecutor(session, **res, pack=pack)
    from grokray.files import join_uri
    from grokray.sweep.tune_executor import TuneExecutor

    storage = join_uri(spec.sweep_dir, "_ray")
    if "://" not in storage:
        storage = os.path.abspath(storage)
    return TuneExecutor(session, name=f"{spec.name}-{run_id}", storage_path=storage, **res,
                        pack=pack)
