"""What a run of a sweep will do: `make_plan` compares the spec with the rows on disk (reads
only) and says what is missing (`Plan`); `plan_record` is the sweep dir's plan.json.

Resume is by row identity `(config_hash, seed)`: a trial runs only the seeds of its config that
have no row yet in `OUT/<sweep>/trials/` (failed rows count as done unless `rerun_failed`);
`force` runs everything again into the new run id. A seed still to run whose config has rows
at a smaller `steps` continues from there (grokray.sweep.continuing; not with `force`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from grokray.config import TrialConfig
from grokray.sweep import store
from grokray.sweep.continuing import plan as continue_plan
from grokray.sweep.continuing import steps_to_train
from grokray.sweep.outcome import trial_summary
from grokray.sweep.spec_model import SweepSpec


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
    """what continues from rows of a smaller budget (grokray.sweep.continuing.Continuations;
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
            cfg = TrialConfig.from_dict(json.loads(grp["config_json"].iloc[0]))
            rows = grp.to_dict("records")
            done += len(rows)
            failed += sum(r["status"] == "failed" for r in rows)
            prior.append((cfg, trial_summary(rows, cfg.steps)[spec.search.metric]))
    new = max(0, spec.search.num_samples - len(prior))
    return Plan(spec=spec, run_id=run_id, todo=[spec.base] if new else [],
                n_trials=spec.search.num_samples, n_seeds=len(spec.seeds), done_rows=done,
                failed_rows=failed, rerun=force, prior=prior, n_search_new=new,
                done_hashes={c.config_hash() for c, _ in prior})


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


