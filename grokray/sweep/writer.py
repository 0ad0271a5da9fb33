"""The one writer of a sweep's results (`Writer`, the executors' sink) and `run_plan`, which runs
a plan's missing trials into it.

Every finished trial is written as it ends, once. After a rerun the older rows of the same
identities are removed (`store.repair`), so the directory keeps one row per identity; at the end
of a run a dir with many per-trial files is compacted (`grokray.sweep.compact.after_run`).
"""

from __future__ import annotations

import queue
import threading
from datetime import datetime, timezone
from typing import Any

import pandas as pd

from grokray.config import TrialConfig
from grokray.result import SeedResult, TrialResult
from grokray.sweep import compact, store
from grokray.sweep.checkpoint_actor import serve
from grokray.sweep.executors.base import Executor
from grokray.sweep.outcome import Outcome
from grokray.sweep.plan import Plan, plan_record
from grokray.sweep.search import SearchRun


def failed_result(cfg: TrialConfig, error: str, wall_s: float = 0.0,
                  hostname: str | None = None) -> TrialResult:
    """A TrialResult whose every seed is `failed` with `error` (for the trials table); made on
    the driver, so its `hostname` is where the trial raised, or None for a trial that was lost
    (its worker or node gone), never the driver's host."""
    now = datetime.now(timezone.utc)
    seeds = [SeedResult(seed=s, data_seed=cfg.seed_data_seed(s), status="failed", error=error)
             for s in cfg.seeds]
    return TrialResult(config=cfg, n_params=0, device="unknown", wall_s=wall_s, started_at=now,
                       finished_at=now, seeds=seeds, curves=pd.DataFrame(), hostname=hostname)


class Writer:
    """The sink on the driver: writes each finished trial, then tells the display.

    The Parquet writes run on one writer thread, in the order the trials finished, so that Ray
    Tune's event loop (which calls `finished` from its callbacks) goes on scheduling trials while
    the results are written (at 0.03-0.1 s per trial, the writes had held each finished
    slot idle). `close` waits for every queued write (`run_plan` calls it, also on an
    interrupt, so a result that came back is on disk before the command exits) and raises the
    first write error, if any; so does the next `finished` after a failed write."""

    def __init__(self, plan: Plan, display: Any | None = None):
        self.plan = plan
        self.display = display
        self.written: set[str] = set()
        """config hashes accepted for writing (each is written once)"""
        self.outcomes: list[Outcome] = []
        """every outcome written, in order (node ids for tests and summaries)"""
        self._queue: queue.Queue[Outcome | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()  # the display is called from both threads
        self.landed: Any = None
        """called with a trial's config_hash once its rows are written (its checkpoints go;
        not for a trial lost to its worker or node on every try, `Outcome.lost`: a rerun of
        the failed restores it)"""

    def checkpoint_stored(self, config_hash: str, step: int) -> None:
        """A trial's checkpoint at `step` is in storage (the checkpoint channel's `stored`
        hook): tell the display, when it listens (`display.checkpoint_stored`). Not under the
        display lock: a graceful stop's request writes checkpoints from a signal handler, which
        may have interrupted this very thread inside it."""
        tell = getattr(self.display, "checkpoint_stored", None)
        if tell is not None:
            tell(config_hash, step)

    def started(self, config: TrialConfig) -> None:
        if self.display is not None:
            with self._lock:
                self.display.started(config)

    def finished(self, outcome: Outcome) -> None:
        self._raise()
        key = outcome.config.config_hash()
        if key in self.written or key in self.plan.done_hashes:
            return  # a retried trial that had already reported, or a search's repeat proposal
        self.written.add(key)
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="grokray-writer",
                                            daemon=True)
            self._thread.start()
        self._queue.put(outcome)

    def close(self) -> None:
        """Wait until every accepted outcome is written; raise the first write error."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        self._raise()

    def _raise(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def _loop(self) -> None:
        while (outcome := self._queue.get()) is not None:
            if self._error is not None:
                continue  # the sweep is failing: write nothing more, drain to the sentinel
            try:
                self._write(outcome)
            except BaseException as exc:  # noqa: BLE001 - handed to the driver's thread
                self._error = exc

    def _write(self, outcome: Outcome) -> None:
        result = outcome.result
        if result is None:
            result = failed_result(outcome.config, outcome.error or "trial failed",
                                   outcome.wall_s, outcome.hostname)
        if result.node_id is None and outcome.node_id not in (None, "local"):
            result.node_id = outcome.node_id
        try:
            store.write_result(result, self.plan.spec.sweep_dir, sweep=self.plan.spec.name,
                               run_id=self.plan.run_id)
        except store.DiskFullError as exc:  # this trial and every one not yet written
            exc.trials_left = max(1, self.plan.n_todo_trials - len(self.outcomes))
            raise
        self.outcomes.append(outcome)
        if self.landed is not None and not outcome.lost:  # a lost trial keeps its checkpoints
            self.landed(outcome.config.config_hash())
        if self.display is not None:
            with self._lock:
                self.display.finished(outcome, result)


def trials_written(plan: Plan) -> int:
    """Trials files this run has on disk (the truth after an interrupt, which can land between
    a file's rename and the writer's bookkeeping)."""
    suffix = f"-{plan.run_id}.parquet"
    loc = store.Location.of(plan.spec.sweep_dir)
    return sum(i.base_name.endswith(suffix) for i in loc.listdir(store.TRIALS))


def run_plan(plan: Plan, backend: Executor, display: Any | None = None,
             writer: Writer | None = None) -> Writer:
    """Run what the plan says is missing; every finished trial is written as it ends.

    Pass your own `writer` to know what was written when the run is interrupted."""
    spec = plan.spec
    store.repair(spec.sweep_dir)
    store.write_plan(spec.sweep_dir, plan_record(plan))
    writer = writer or Writer(plan, display)
    channel = serve(backend, spec.sweep_dir, plan.todo if spec.search is None else [])
    writer.landed = channel.land
    channel.stored = writer.checkpoint_stored
    try:
        if spec.search is not None and plan.n_search_new:
            backend.run_search(SearchRun(spec.search, spec.base, plan.prior, plan.n_search_new),
                               writer)
        elif plan.n_todo_trials:
            backend.run(plan.todo, writer)
    except BaseException:
        try:
            writer.close()  # what came back is written before the error or interrupt goes on
        except Exception:  # noqa: BLE001 - the first error is the one to report
            pass
        channel.close()
        raise
    writer.close()
    channel.close()
    if plan.rerun:
        store.repair(spec.sweep_dir)
    compact.after_run(spec.sweep_dir)  # a big dir's per-trial files into a few parts
    return writer
