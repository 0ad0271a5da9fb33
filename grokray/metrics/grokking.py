"""Grokking, memorization and un-grokking detection, one tracker per trial (all seeds).

Definitions (evaluated at each evaluation step, in order):
- memorize_step: the first eval with train acc >= memorize_threshold;
- grok_step: the first eval with val acc >= grok_threshold (grok_step_lo: the eval before it,
  so the grok happened in (grok_step_lo, grok_step]: the measurement's resolution);
- ungrok_step: the first eval after grok_step with val acc < grok_threshold;
- a seed is *finished* once it has grokked and then held val acc >= threshold for `patience`
  further consecutive evals (patience 0: never finished early). A drop resets the count.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SeedTrack:
    """Detection state of one seed."""

    grok_step: int | None = None
    """first eval step with val acc >= threshold"""
    grok_step_lo: int | None = None
    """the eval before grok_step (val acc below the threshold there): the grok happened in
    (grok_step_lo, grok_step]; None when it grokked at the first eval"""
    last_step: int | None = None
    """the step of the latest eval"""
    memorize_step: int | None = None
    """first eval step with train acc >= threshold"""
    ungrok_step: int | None = None
    """first eval step after grokking with val acc below the threshold"""
    held: int = 0
    """consecutive evals >= threshold since the last (re)grok, that eval excluded"""
    above: bool = False
    """val acc was >= threshold at the last eval"""
    finished: bool = False
    """grokked and held for `patience` evals"""


@dataclass
class GrokDetector:
    """Updates each seed's SeedTrack from its eval accuracies."""

    grok_threshold: float = 0.99
    """val acc threshold"""
    memorize_threshold: float = 0.99
    """train acc threshold"""
    patience: int = 5
    """evals to hold after grokking before the seed is finished (0: never)"""
    tracks: dict[int, SeedTrack] = field(default_factory=dict)
    """seed -> its state"""

    def update(self, seed: int, step: int, train_acc: float, val_acc: float) -> SeedTrack:
        """Record one evaluation of `seed` at `step`; returns its updated state."""
        t = self.tracks.setdefault(seed, SeedTrack())
        if t.memorize_step is None and train_acc >= self.memorize_threshold:
            t.memorize_step = step
        now_above = val_acc >= self.grok_threshold
        if now_above:
            if t.grok_step is None:
                t.grok_step, t.grok_step_lo = step, t.last_step
                t.held = 0
            elif t.above:
                t.held += 1
            else:
                t.held = 0  # re-grokked after a drop
        elif t.grok_step is not None and t.above:
            if t.ungrok_step is None:
                t.ungrok_step = step
            t.held = 0
        t.above, t.last_step = now_above, step
        if self.patience > 0 and t.grok_step is not None and now_above and t.held >= self.patience:
            t.finished = True
        return t
