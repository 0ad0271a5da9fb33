"""`run_trial(cfg) -> TrialResult`: the one trial runner of every family. No Ray here.

The runner does what every trial shares: it starts a `TrialRun` (grokray.trialrun: the device,
the task, each seed's split, and what a continued trial picks up), hands it to the family's
trainer, turns a crash into `failed` seeds, and builds the `TrialResult`. A family names how it
trains (`Family.train`): a training protocol resolved here (`gradient`: the gradient trainer,
grokray.trainer, which also trains packs), or a function of its own (RFM's kernel fit), so no
model file imports a trainer. A trainer records each seed's `SeedResult` in `run.outcome` and
its curve rows (dicts with seed, step, train/val loss/acc, ...) in `run.rows`, and sets
`n_params`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from grokray import trainer
from grokray.checkpoint import Unusable, first_checkpoint_s
from grokray.checkpoint.restore import Restored, restore
from grokray.config import TrialConfig
from grokray.errors import GrokrayError, error_line
from grokray.families import TRAINING, Family
from grokray.result import TrialResult
from grokray.trainer.pickup import TrialPickup, read_continued
from grokray.trialrun import ProgressFn, TrialRun

PROTOCOLS: dict[str, tuple[Callable[[TrialRun], None], Callable[[list[TrialRun]], None]]] = {
    "gradient": (trainer.train, trainer.train_pack),
}
"""training protocol (`Family.train`, one of grokray.families.TRAINING) -> (train one
trial, train a pack of trials of one shape)"""
assert set(PROTOCOLS) == set(TRAINING)


def trainer_of(family: Family) -> Callable[[TrialRun], None]:
    """What trains one trial of `family`: its protocol's trainer, or its own function."""
    return PROTOCOLS[family.train][0] if isinstance(family.train, str) else family.train


def pack_trainer_of(family: Family) -> Callable[[list[TrialRun]], None] | None:
    """What trains a pack of `family`'s trials as one stack (None: they run one at a time)."""
    if not family.pack or not isinstance(family.train, str):
        return None
    return PROTOCOLS[family.train][1]


def start_run(cfg: TrialConfig, progress: ProgressFn | None = None,
              checkpoints: Any = None) -> TrialRun:
    """The TrialRun of `cfg`, with what its seeds continue from read back
    (`cfg.continued_from`), and, with `checkpoints` (a grokray.checkpoint.Hook), its newest
    checkpoint restored."""
    run = TrialRun(cfg, progress)
    if cfg.continued_from.config_hash:
        run.continue_from(read_continued(cfg))
    if checkpoints is not None and run.seeds:
        _checkpoints(run, checkpoints)
    return run


def run_trial(cfg: TrialConfig, progress: ProgressFn | None = None,
              checkpoints: Any = None) -> TrialResult:
    """Train every seed of `cfg` with its family's trainer; prints nothing. With `checkpoints`
    (a grokray.checkpoint.Hook) the trial is restored from its newest checkpoint and keeps
    new ones there.

    A user's mistake (GrokrayError) is raised; any other exception marks the seeds that have no
    outcome yet as failed, with its first line as their error.
    """
    run = start_run(cfg, progress, checkpoints)
    try:
        # a continued trial's copied seeds need no training; a restored one whose seeds had all
        # finished at its checkpoint only its summaries
        if run.seeds or run.checkpoint_step is not None:
            trainer_of(run.family)(run)
    except GrokrayError:
        raise
    except Exception as exc:  # noqa: BLE001 - a failed trial is a result, not a crash
        run.fail_rest(error_line(exc))
    finally:
        if run.checkpoints is not None:
            run.checkpoints.done(cfg.config_hash())
    return run.result()


def _checkpoints(run: TrialRun, hook: Any) -> None:
    """Keep checkpoints through `hook` when this trial takes them, and restore its newest one:
    the seeds that had finished keep their outcome, rows and snapshots; the others train on from
    its step (grokray.checkpoint)."""
    if first_checkpoint_s(run.cfg) is None:
        return
    run.checkpoints = hook
    h = run.cfg.config_hash()
    chain = hook.chain(h, run.cfg.checkpoint_every)
    if chain is None:
        return
    try:
        got = restore(chain, h)
        missing = [s for s in run.seeds if s not in got.seeds and s not in got.finished]
        if missing:
            raise Unusable(f"holds no seed {missing[0]}")
    except Unusable as exc:  # the driver checked it: not expected here
        print(f"checkpoint of {h} not used ({exc}): training from its start", flush=True)
        return
    _take_restored(run, got)


def _take_restored(run: TrialRun, got: Restored) -> None:
    """Take what the restored checkpoint `got` holds into `run`."""
    cont = run.pickup  # a continued run's rows before its budget (read by `read_continued`)

    def before(seed: int) -> tuple[list[dict], list[dict]]:
        st = cont.seeds.get(seed) if cont is not None else None
        return (list(st.rows), list(st.snapshots)) if st is not None else ([], [])

    for seed, (outcome, rows, snaps) in got.finished.items():
        if seed in run.seeds:
            rows0, snaps0 = before(seed)
            run.outcome[seed] = outcome
            run.rows.extend(rows0 + rows)
            run.copied_snapshots.extend(snaps0 + snaps)
    seeds = {}
    for seed in run.seeds:
        if seed in got.seeds:
            p = got.seeds[seed]
            rows0, snaps0 = before(seed)
            seeds[seed] = dataclasses.replace(p, rows=rows0 + p.rows,
                                              snapshots=snaps0 + p.snapshots)
    origin_hash, origin_step = got.origin
    run.pickup = TrialPickup(config_hash=origin_hash, step=got.step, seeds=seeds, copied={},
                          from_step=origin_step, evaluated=True)
    keep = [i for i, s in enumerate(run.seeds) if s in seeds]
    run.seeds = [run.seeds[i] for i in keep]
    run.splits = [run.splits[i] for i in keep]
    run.checkpoint_step, run.chain_start = got.step, got.chain_start
    if run.family.model is not None:
        run.n_params = run.family.model.count_params(run.cfg, run.task.n_in, run.task.n_out)
