"""`TrialRun`: one trial in progress, what a family's trainer reads (config, device, task,
splits) and writes (each seed's outcome, curve rows, snapshot records, n_params); and the
`Progress` a trainer reports at every eval. Built by `grokray.trial.start_run`; no training
here, so a family with its own trainer (RFM's fit) reads it without importing the gradient
trainer."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import pandas as pd
import torch

from grokray.config import TrialConfig
from grokray.errors import ConfigError
from grokray.families import get_family
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


def device_kind(device: torch.device) -> str:
    """The kind of device a trial trains on, as far as its float64 numbers depend on it:
    `cuda:<GPU name>`, or on a CPU `cpu:<machine>:<torch's CPU capability, e.g. AVX512>:t<torch
    threads>` (the BLAS kernels and the thread count change the last bits of a sum)."""
    if device.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(device)}"
    import platform

    return (f"{device.type}:{platform.machine()}:{torch.backends.cpu.get_cpu_capability()}"
            f":t{torch.get_num_threads()}")


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
        self.pickup: Any = None
        """what the seeds pick up from an earlier run, continued or restored from a checkpoint
        (grokray.trainer.pickup.TrialPickup; None: trained from step 0)"""
        self.copied_snapshots: list[dict] = []
        self.checkpoints: Any = None
        """where this trial keeps its checkpoints (grokray.checkpoint.Hook; None: nowhere)"""
        self.checkpoint_step: int | None = None
        """the step of the checkpoint this run was restored from (None: trained from its
        start)"""
        self.chain_start = 0
        """the step the chain of that checkpoint began at"""

    def continue_from(self, pickup: Any) -> None:  # noqa: ANN401 - trainer.pickup.TrialPickup
        """Take what the seeds continue from (`pickup`, read back by
        grokray.trainer.pickup.read_continued): a copied seed's outcome and rows are final, and
        it leaves the seeds to train."""
        self.pickup = res = pickup
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
        if self.pickup is not None and rows:
            curves = curves.sort_values(["seed", "step"], kind="stable").reset_index(drop=True)
        snapshots = self.copied_snapshots + self.snapshots
        if self.checkpoint_step is not None:
            for o in self.outcome.values():
                o.checkpoint_step = self.checkpoint_step
            snapshots = sorted(snapshots, key=lambda r: (r["seed"], r["step"]))
        return TrialResult(
            config=self.cfg, n_params=int(self.n_params), device=str(self.device),
            wall_s=time.perf_counter() - self.t0, started_at=self.started_at,
            finished_at=datetime.now(timezone.utc),
            seeds=[self.outcome[s] for s in self.cfg.seeds], curves=curves,
            group_order=int(self.task.n_in), snapshots=snapshots,
            cuda_visible_devices=self.visible, hostname=socket.gethostname(),
            device_kind=device_kind(self.device),
        )
