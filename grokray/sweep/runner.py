"""A sweep from spec to Parquet: what is missing (`make_plan`), then the one writer (`Writer`).

Resume is by row identity `(config_hash, seed)`: a trial runs only the seeds of its config that
have no row yet in `OUT/<sweep>/trials/` (failed rows count as done unless `rerun_failed`);
`force` runs everything again into the new run id. A seed still to run whose config has rows
at a smaller `steps` continues from there (grokray.continuation; not with `force`). After a
rerun the older rows of the same identities are removed (`store.repair`), so the directory
keeps one row per identity.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pandas as pd

from grokray.config import TrialConfig
from grokray.result import SeedResult, TrialResult
from grokray.sweep import store
from grokray.sweep.executor import Executor
from grokray.sweep.outcome import Outcome, trial_summary
from grokray.sweep.search import SearchRun
from grokray.sweep.spec import SweepSpec


@dataclass
class Plan:
    """What a run of a sweep will do."""

    spec: SweepSpec
    """the validated spec"""
    run_id: str
    """id of this run (file names, run_id column)"""
    todo: list[TrialConfig]
    """configs to run, each with only its missing seeds"""
    n_trials: int
    """configs in the spec (a search: num_samples)"""
    n_seeds: int
    """seeds per config"""
    done_rows: int
    """identities of the spec already on disk"""
    failed_rows: int
    """of those, rows with status failed"""
    rerun: bool = False
    """rows of `todo` may already exist (rerun_failed / force): repair after writing"""
    prior: list[tuple[TrialConfig, float]] = field(default_factory=list)
    """search: finished configs with their metric (warm start)"""
    n_search_new: int = 0
    """search: configs still to sample"""
    done_hashes: set[str] = field(default_factory=set)
    """search: configs already on disk (a sampler that proposes one again is not rewritten)"""
    continuations: Any = None
    """what continues from rows of a smaller budget (grokray.continuation.Continuations;
    None: nothing was looked for: a search, --force, a counted grid)"""

    counted: bool = False
    """the grid was counted, not built (a dry run with nothing on disk): `todo` is empty and
    the todo figures come from the axis lengths"""

    @property
    def todo_seeds(self) -> int:
        """Seed-runs still to do."""
        if self.spec.search is not None:
            return self.n_search_new * self.n_seeds
        if self.counted:
            return self.n_trials * self.n_seeds
        return sum(len(c.seeds) for c in self.todo)

    @property
    def todo_seed_steps(self) -> int:
        """Seed-steps still to do (the work left)."""
        if self.spec.search is not None:
            return self.todo_seeds * self.spec.base.steps
        if self.counted:
            return self.spec.seed_steps()
        from grokray.continuation import steps_to_train

        return sum(steps_to_train(c) for c in self.todo)

    @property
    def n_todo_trials(self) -> int:
        """Tune trials still to run."""
        if self.spec.search is not None:
            return self.n_search_new
        return self.n_trials if self.counted else len(self.todo)


def make_plan(spec: SweepSpec, *, rerun_failed: bool = False, force: bool = False,
              run_id: str | None = None, build: bool = True) -> Plan:
    """Compare the spec with what is on disk (reads only; writes nothing).

    `build=False` (a dry run): when nothing is on disk yet the grid is counted from its axis
    lengths instead of built, so that a dry run answers at once for any grid size."""
    run_id = run_id or store.new_run_id()
    manifest = store.Manifest.load(spec.sweep_dir)
    rows = manifest.rows
    if not build and not len(rows) and spec.search is None:
        return Plan(spec=spec, run_id=run_id, todo=[], n_trials=spec.n_points,
                    n_seeds=len(spec.seeds), done_rows=0, failed_rows=0, counted=True)
    status = {(h, int(s)): st for h, s, st in
              zip(rows["config_hash"], rows["seed"], rows["status"], strict=True)}
    if spec.search is not None:
        return _search_plan(spec, run_id, status, force)
    todo: list[TrialConfig] = []
    done = failed = 0
    for cfg in spec.trials():
        h = cfg.config_hash()
        missing = []
        for s in cfg.seeds:
            st = status.get((h, s))
            if st is not None:
                done += 1
                failed += st == "failed"
            if force or st is None or (rerun_failed and st == "failed"):
                missing.append(s)
        if missing:
            todo.append(cfg if missing == cfg.seeds else cfg.with_overrides({"seeds": missing}))
    cont = None
    if not force and todo and len(rows):  # runs censored at a smaller steps go on
        from grokray.continuation import plan as continue_plan

        cont = continue_plan(todo, spec.sweep_dir)
        todo = cont.todo
    return Plan(spec=spec, run_id=run_id, todo=todo, n_trials=len(spec.trials()),
                n_seeds=len(spec.seeds), done_rows=done, failed_rows=failed,
                rerun=force or rerun_failed, continuations=cont)


def _search_plan(spec: SweepSpec, run_id: str, status: dict, force: bool) -> Plan:
    done = failed = 0
    prior: list[tuple[TrialConfig, float]] = []
    if not force and status:
        df = store.read_trials(spec.sweep_dir)
        df = df[df["sweep"] == spec.name] if "sweep" in df else df
        for _, grp in df.groupby("config_hash"):
            cfg = TrialConfig.from_dict(_json(grp["config_json"].iloc[0]))
            rows = grp.to_dict("records")
            done += len(rows)
            failed += sum(r["status"] == "failed" for r in rows)
            prior.append((cfg, trial_summary(rows, cfg.steps)[spec.search.metric]))
    new = max(0, spec.search.num_samples - len(prior))
    return Plan(spec=spec, run_id=run_id, todo=[spec.base] if new else [],
                n_trials=spec.search.num_samples, n_seeds=len(spec.seeds), done_rows=done,
                failed_rows=failed, rerun=force, prior=prior, n_search_new=new,
                done_hashes={c.config_hash() for c, _ in prior})


def _json(s: str) -> dict[str, Any]:
    import json

    return json.loads(s)


def failed_result(cfg: TrialConfig, error: str, wall_s: float = 0.0) -> TrialResult:
    """A TrialResult whose every seed is `failed` with `error` (for the trials table)."""
    now = datetime.now(timezone.utc)
    seeds = [SeedResult(seed=s, data_seed=cfg.seed_data_seed(s), status="failed", error=error)
             for s in cfg.seeds]
    return TrialResult(config=cfg, n_params=0, device="unknown", wall_s=wall_s, started_at=now,
                       finished_at=now, seeds=seeds, curves=pd.DataFrame())


class Writer:
    """The sink on the driver: writes each finished trial, then tells the display.

    The Parquet writes run on one writer thread, in the order the trials finished, so that Ray
    Tune's event loop (which calls `finished` from its callbacks) goes on scheduling trials while
    a batch of results is written (at 0.03-0.1 s per trial, the writes had held each finished
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
                                   outcome.wall_s)
        if result.node_id is None and outcome.node_id not in (None, "local"):
            result.node_id = outcome.node_id
        try:
            store.write_result(result, self.plan.spec.sweep_dir, sweep=self.plan.spec.name,
                               run_id=self.plan.run_id)
        except store.DiskFullError as exc:  # this trial and every one not yet written
            exc.trials_left = max(1, self.plan.n_todo_trials - len(self.outcomes))
            raise
        self.outcomes.append(outcome)
        if self.display is not None:
            with self._lock:
                self.display.finished(outcome, result)


def trials_written(plan: Plan) -> int:
    """Trials files this run has on disk (the truth after an interrupt, which can land between
    a file's rename and the writer's bookkeeping)."""
    suffix = f"-{plan.run_id}.parquet"
    loc = store.Location.of(plan.spec.sweep_dir)
    return sum(i.base_name.endswith(suffix) for i in loc.listdir(store.TRIALS))


def plan_record(plan: Plan) -> dict[str, Any]:
    """The sweep dir's plan.json: what this run means to run. Its identities, config_hashes x
    seeds (every config of the grid; none for a search), are the rows grokray_analysis.ledger
    reads."""
    spec = plan.spec
    return {
        "sweep": spec.name, "spec": spec.path, "run_id": plan.run_id,
        "n_trials": plan.n_trials, "seeds": spec.seeds,
        "config_hashes": [c.config_hash() for c in spec.trials()],
        "written_at": datetime.now(timezone.utc).isoformat(),
    }


def run_plan(plan: Plan, backend: Executor, display: Any | None = None,
             writer: Writer | None = None) -> Writer:
    """Run what the plan says is missing; every finished trial is written as it ends.

    Pass your own `writer` to know what was written when the run is interrupted."""
    spec = plan.spec
    store.repair(spec.sweep_dir)
    store.write_plan(spec.sweep_dir, plan_record(plan))
    writer = writer or Writer(plan, display)
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
        raise
    writer.close()
    if plan.rerun:
        store.repair(spec.sweep_dir)
    return writer
