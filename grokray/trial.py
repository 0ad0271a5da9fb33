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

from collections.abc import Callable

from grokray import trainer
from grokray.config import TrialConfig
from grokray.errors import GrokrayError, error_line
from grokray.models.registry import TRAINING, Family
from grokray.result import TrialResult
from grokray.trainer.resume import load
from grokray.trialrun import ProgressFn, TrialRun

PROTOCOLS: dict[str, tuple[Callable[[TrialRun], None], Callable[[list[TrialRun]], None]]] = {
    "gradient": (trainer.train, trainer.train_pack),
}
"""training protocol (`Family.train`, one of grokray.models.registry.TRAINING) -> (train one
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


def start_run(cfg: TrialConfig, progress: ProgressFn | None = None) -> TrialRun:
    """The TrialRun of `cfg`, with what its seeds continue from read back (`cfg.resume`)."""
    run = TrialRun(cfg, progress)
    if cfg.resume.config_hash:
        run.continue_from(load(cfg))
    return run


def run_trial(cfg: TrialConfig, progress: ProgressFn | None = None) -> TrialResult:
    """Train every seed of `cfg` with its family's trainer; prints nothing.

    A user's mistake (GrokrayError) is raised; any other exception marks the seeds that have no
    outcome yet as failed, with its first line as their error.
    """
    run = start_run(cfg, progress)
    try:
        if run.seeds:  # a continued trial's copied seeds need no training
            trainer_of(run.family)(run)
    except GrokrayError:
        raise
    except Exception as exc:  # noqa: BLE001 - a failed trial is a result, not a crash
        run.fail_rest(error_line(exc))
    return run.result()
