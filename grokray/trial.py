"""`run_trial(cfg) -> TrialResult`: the one trial runner of every family. No Ray here.

The runner does what every trial shares: it resolves the device, builds the task and each seed's
split, hands a `TrialRun` to the family's trainer (`Family.train`: the gradient trainer in
grokray/trainer/, or a kernel machine's fit such as RFM's), turns a crash into `failed` seeds,
and builds the `TrialResult`. A trainer records each seed's `SeedResult` in `run.outcome` and its
curve rows (dicts with seed, step, train/val loss/acc, ...) in `run.rows`, and sets `n_params`.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

import pandas as pd
import torch

from grokray.config import TrialConfig
from grokray.errors import ConfigError, GrokrayError
from grokray.models.registry import get_family
from grokray.result import CURVE_COLUMNS, SeedResult, TrialResult
from grokray.tasks import make_task, split


@dataclass
class Progress:
    """What the progress callback receives at every evaluation."""

    step: int
    """optimizer steps done"""
    steps: int
    """step budget"""
    n_seeds: int
    """seeds in the trial"""
    n_active: int
    """seeds still training"""
    n_grokked: int
    """seeds that reached the grok threshold"""
    best_val_acc: float
    """best val acc over the seeds at this eval"""
    steps_per_s: float
    """optimizer steps per second so far (each step advances every active seed)"""


ProgressFn = Callable[[Progress], None]


def resolve_device(name: str) -> torch.device:
    """auto -> cuda when available, else cpu; cuda without CUDA is an error (never a silent CPU
    run), naming the host and the GPU ids the process was given."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        seen = os.environ.get("CUDA_VISIBLE_DEVICES")
        given = f", CUDA_VISIBLE_DEVICES={seen}" if seen is not None else ""
        raise ConfigError(f"device {name!r} requested but CUDA is not available on "
                          f"{socket.gethostname()}{given}; valid: auto, cpu")
    return torch.device(name)


def error_line(exc: BaseException) -> str:
    """`Type: message`, first line, at most 500 characters (a failed seed's `error`)."""
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:500]


class TrialRun:
    """One trial in progress: what its trainer reads (config, device, task, splits) and writes
    (outcomes, curve rows, n_params)."""

    def __init__(self, cfg: TrialConfig, progress: ProgressFn | None = None) -> None:
        self.cfg, self.progress = cfg, progress
        self.family = get_family(cfg.arch)
        self.started_at = datetime.now(timezone.utc)
        self.t0 = time.perf_counter()
        self.visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        """the GPU ids this process was given (Ray sets them), recorded with the result"""
        self.device = resolve_device(cfg.device)
        self.dtype = {"float32": torch.float32, "float64": torch.float64}[cfg.dtype]
        self.task = make_task(cfg.group, cfg.op)
        self.seeds = list(cfg.seeds)
        self.splits = [split(self.task, cfg.train_frac, cfg.seed_data_seed(s)) for s in self.seeds]
        """(train, val) task indices per seed, in the order of `seeds`"""
        self.outcome: dict[int, SeedResult] = {}
        """seed -> its outcome, as the trainer finishes it"""
        self.rows: list[dict] = []
        """curve rows, one per (seed, eval step)"""
        self.snapshots: list[dict] = []
        """snapshot records (grokray.snapshots), one per (seed, step, tensor)"""
        self.n_params = 0
        self.resumed = None
        """what the seeds continue from (grokray.continuation; None: trained from step 0)"""
        self.copied_snapshots: list[dict] = []
        if cfg.resume.config_hash:
            self._resume()

    def _resume(self) -> None:
        """Read what the seeds continue from; a copied seed's outcome and rows are final, and
        it leaves the seeds to train."""
        from grokray.continuation import load

        self.resumed = res = load(self.cfg)
        for s, (outcome, rows, snaps) in res.copied.items():
            self.outcome[s] = outcome
            self.rows.extend(rows)
            self.copied_snapshots.extend(snaps)
        keep = [i for i, s in enumerate(self.seeds) if s not in res.copied]
        self.seeds = [self.seeds[i] for i in keep]
        self.splits = [self.splits[i] for i in keep]
        if self.family.model is not None:
            self.n_params = self.family.model.count_params(self.cfg, self.task.n_in,
                                                           self.task.n_out)

    def fail_rest(self, error: str) -> None:
        """Record every seed without an outcome as failed."""
        for s in self.cfg.seeds:
            if s not in self.outcome:
                self.outcome[s] = SeedResult(seed=s, data_seed=self.cfg.seed_data_seed(s),
                                             status="failed", error=error)

    def result(self) -> TrialResult:
        """The TrialResult of the outcomes and rows recorded so far."""
        self.fail_rest("the trainer recorded no outcome")
        rows = self.rows
        curves = pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(CURVE_COLUMNS))
        if self.resumed is not None and rows:
            curves = curves.sort_values(["seed", "step"], kind="stable").reset_index(drop=True)
        return TrialResult(
            config=self.cfg, n_params=int(self.n_params), device=str(self.device),
            wall_s=time.perf_counter() - self.t0, started_at=self.started_at,
            finished_at=datetime.now(timezone.utc),
            seeds=[self.outcome[s] for s in self.cfg.seeds], curves=curves,
            group_order=int(self.task.n_in), snapshots=self.copied_snapshots + self.snapshots,
            cuda_visible_devices=self.visible, hostname=socket.gethostname(),
        )


def run_trial(cfg: TrialConfig, progress: ProgressFn | None = None) -> TrialResult:
    """Train every seed of `cfg` with its family's trainer; prints nothing.

    A user's mistake (GrokrayError) is raised; any other exception marks the seeds that have no
    outcome yet as failed, with its first line as their error.
    """
    run = TrialRun(cfg, progress)
    try:
        if run.seeds:  # a continued trial's copied seeds need no training
            run.family.train(run)
    except GrokrayError:
        raise
    except Exception as exc:  # noqa: BLE001 - a failed trial is a result, not a crash
        run.fail_rest(error_line(exc))
    return run.result()
