"""A trial cut short in-process: a checkpoint hook that checkpoints every few steps and dies at
a chosen one, and the small float64 config the checkpoint tests train."""

from __future__ import annotations

from grokray.checkpoint.memory import MemoryHook
from grokray.config import TrialConfig


class Killed(BaseException):
    """The worker died (not an Exception: nothing in the trainer catches it)."""


class StepHook(MemoryHook):
    """Checkpoints every `every` steps (counted from where the run starts) and dies at step
    `kill` of the run (counted the same way); counts the steps the run trained."""

    def __init__(self, every: int, kill: int | None = None, store: MemoryHook | None = None):
        super().__init__()
        if store is not None:
            self.held = store.held
        self.every, self.kill, self.calls = every, kill, 0

    def asked(self) -> bool:
        n, self.calls = self.calls, self.calls + 1
        if self.kill is not None and n == self.kill:
            raise Killed
        return n > 0 and n % self.every == 0


def ck_cfg(**kw) -> TrialConfig:
    """Z7 addition on an MLP, 120 steps, two seeds, float64 on the CPU, snapshots on, no
    checkpoint of its own (`checkpoint_every` 1e9): the hooks above decide; `kw` overrides."""
    base = {"group": "Z7", "op": "add", "arch": "mlp", "steps": 120, "eval_every": 10,
            "seeds": [0, 1], "dtype": "float64", "device": "cpu", "train_frac": 0.5,
            "checkpoint_every": 1e9, "optim.lr": 3e-3,
            "snapshots.per_decade": 4, "metrics.patience": 2}
    base.update(kw)
    return TrialConfig.from_dict({}).with_overrides(base)
