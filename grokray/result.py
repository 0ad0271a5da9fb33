"""What a trial returns: `TrialResult` (one config) holding one `SeedResult` per seed."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pandas as pd

from grokray.config import TrialConfig

STATUSES = ("grokked", "not_grokked", "diverged", "failed")

# the required columns of TrialResult.curves (optional ones: loss_assoc, loss_ident, loss_inv,
# lambda_alg, lr, metric_<name>)
CURVE_COLUMNS = ("seed", "step", "train_loss", "train_acc", "val_loss", "val_acc")


@dataclass
class SeedResult:
    """The outcome of one seed of a trial."""

    seed: int
    """model seed"""
    data_seed: int
    """split seed actually used"""
    status: str
    """grokked | not_grokked | diverged | failed"""
    error: str | None = None
    """one-line error text (failed, diverged), else None"""
    grok_step: int | None = None
    """first eval step with val acc >= threshold; None: censored"""
    grok_step_lo: int | None = None
    """the eval step before grok_step: the grok happened in (grok_step_lo, grok_step]"""
    memorize_step: int | None = None
    """first eval step with train acc >= threshold"""
    ungrok_step: int | None = None
    """first eval step after grokking with val acc back below the threshold"""
    steps_run: int = 0
    """optimizer steps (RFM: iterations) this seed ran"""
    final: dict[str, float] = field(default_factory=dict)
    """final_train_acc, final_val_acc, final_train_loss, final_val_loss"""
    metrics: dict[str, float] = field(default_factory=dict)
    """per-seed scalar summaries (eff_modes, ident_lead, ...); written as metric_<name>"""
    continued_from: str | None = None
    """config_hash of the smaller-budget run this seed continued from (None: trained from 0;
    grokray.sweep.continuing)"""
    continued_from_step: int | None = None
    """the step it picked up from (a copied seed: its steps_run, nothing trained)"""
    checkpoint_step: int | None = None
    """the step of the checkpoint its trial's run was restored from (None: a run never cut;
    grokray.checkpoint)"""
    artifacts: dict[str, Any] = field(default_factory=dict)
    """small in-memory objects for analysis (e.g. RFM's final M); not written to the tables"""


@dataclass
class TrialResult:
    """The outcome of one config trained for S seeds."""

    config: TrialConfig
    """the config that ran"""
    n_params: int
    """trainable parameters per seed"""
    device: str
    """device it ran on (cpu, cuda:0)"""
    wall_s: float
    """wall-clock seconds of the whole trial"""
    started_at: datetime
    """UTC start"""
    finished_at: datetime
    """UTC end"""
    seeds: list[SeedResult]
    """one per config seed, in config order"""
    curves: pd.DataFrame
    """one row per (seed, eval step): seed, step, train_loss, train_acc, val_loss, val_acc, ..."""
    group_order: int = 0
    """|G| (or the modulus), recorded in the trials table"""
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    """snapshot records, one per (seed, step, tensor) (grokray.snapshots; the store writes
    them); they travel with the result, on the Tune path inside its pickled report"""
    cuda_visible_devices: str | None = None
    """CUDA_VISIBLE_DEVICES of the process that ran it (Ray sets it to the GPU ids it assigned,
    logical ones too), None when unset"""
    node_id: str | None = None
    """Ray node id it ran on (set by the sweep's writer; None outside a sweep)"""
    hostname: str | None = None
    """host it ran on (None for a result made on the driver: a lost trial's failed row)"""
    device_kind: str | None = None
    """the kind of device that trained it (grokray.trialrun.device_kind; None: unknown)"""

    def seed_rows(self) -> list[dict[str, Any]]:
        """Per-seed summary dicts (what `grokray run --json` prints)."""
        rows = []
        for s in self.seeds:
            rows.append({
                "seed": s.seed, "data_seed": s.data_seed, "status": s.status,
                "grok_step": s.grok_step, "memorize_step": s.memorize_step,
                "ungrok_step": s.ungrok_step, "steps_run": s.steps_run,
                "final_train_acc": s.final.get("final_train_acc"),
                "final_val_acc": s.final.get("final_val_acc"),
                "final_train_loss": s.final.get("final_train_loss"),
                "final_val_loss": s.final.get("final_val_loss"),
                "error": s.error,
            })
        return rows
