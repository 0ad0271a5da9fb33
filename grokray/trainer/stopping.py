"""The stopping rule: a member stops when its val acc reached the grok threshold and held for
`metrics.patience` evals (grokked), when its loss is not finite (diverged: that member alone),
or when its budget is spent (grokked or not_grokked, by whether it reached the threshold);
and what a stopped member records (`outcome`)."""

from __future__ import annotations

import math
from typing import Any

import torch

from grokray.config import TrialConfig
from grokray.metrics.grokking import GrokDetector, SeedTrack
from grokray.result import SeedResult
from grokray.trialrun import TrialRun


class StoppingRule:
    """Each member's grok track (grokray.metrics.grokking), by stack position."""

    def __init__(self, cfg: TrialConfig) -> None:
        m = cfg.metrics
        self.detector = GrokDetector(m.grok_threshold, m.memorize_threshold, m.patience)

    def track(self, pos: int) -> SeedTrack | None:
        return self.detector.tracks.get(pos)

    def replay(self, pos: int, rows: list[dict[str, Any]]) -> None:
        """Feed a continued member's evals before its start (its curve rows read back)."""
        for row in rows:
            self.detector.update(pos, row["step"], row["train_acc"], row["val_acc"])

    def after_eval(self, step: int, rows: dict[int, dict[str, Any]]
                   ) -> tuple[list[int], list[int]]:
        """The members (positions) that stop at this eval, given their rows: (diverged,
        grokked and held)."""
        diverged, finished = [], []
        for pos, row in rows.items():
            if not (math.isfinite(row["train_loss"]) and math.isfinite(row["val_loss"])):
                diverged.append(pos)
                continue
            if self.detector.update(pos, step, row["train_acc"], row["val_acc"]).finished:
                finished.append(pos)
        return diverged, finished

    def non_finite(self, loss: torch.Tensor, active: list[int], checked: list[bool]
                   ) -> list[int]:
        """The members (positions) whose training loss [S] is not finite, among those
        `checked` (one flag per active member)."""
        bad = ~torch.isfinite(loss) & torch.tensor(checked, device=loss.device)
        if not bool(bad.any()):
            return []
        return [active[i] for i in torch.nonzero(bad).flatten().tolist()]

    def at_budget(self, pos: int) -> str:
        """The status of a member whose budget is spent."""
        tr = self.track(pos)
        return "grokked" if tr is not None and tr.grok_step is not None else "not_grokked"


def outcome(run: TrialRun, seed: int, status: str, step: int, track: SeedTrack | None,
            last: dict[str, Any], error: str | None = None) -> SeedResult:
    """A stopped member's SeedResult: its grok track and its last curve row."""
    origin = run.pickup.origin(seed) if run.pickup is not None else (None, None)
    return SeedResult(
        seed=seed, data_seed=run.cfg.seed_data_seed(seed), status=status, error=error,
        grok_step=track.grok_step if track else None,
        grok_step_lo=track.grok_step_lo if track else None,
        memorize_step=track.memorize_step if track else None,
        ungrok_step=track.ungrok_step if track else None,
        steps_run=step,
        continued_from=origin[0], continued_from_step=origin[1],
        final={f"final_{k}": float(last[k]) for k in
               ("train_acc", "val_acc", "train_loss", "val_loss") if k in last},
    )
