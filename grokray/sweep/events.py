"""What a running sweep tells its subscribers (`grokray.sweep.driver.SweepDriver.subscribe`).

    SweepStarted    the plan is made (under the sweep's writer lock), before any trial runs
    TrialStarted    a trial was handed to an executor (a retry starts it again)
    TrialWritten    a trial's rows are on disk (`outcome.error` set: its rows say failed)
    CheckpointStored  a trial's checkpoint is in the sweep dir's storage (the driver-side store,
                    grokray.sweep.checkpoint_store, wrote it): a trial cut short after it is
                    restored from it (or from a newer one)
    Notice          a line for the user: the lock's take-over, a scheduling round, a stop's
                    checkpoint request (`err`: it belongs on stderr)
    SweepEnded      the run is over: the `SweepOutcome` the driver returns (defined here)

Events are plain frozen dataclasses; a subscriber is any callable taking one. They arrive on
the driver's thread, on the writer's thread (TrialWritten), on the thread that writes a
checkpoint (CheckpointStored: the driver's in process, the checkpoint pump's on Ray) or, for a
graceful stop's Notice and the checkpoints it asked for, on the thread that asked for the stop
(the main thread's signal handler for SIGTERM): a subscriber must not block, and must be
thread-safe where it keeps state (the driver serialises TrialStarted and TrialWritten with one
lock; CheckpointStored comes outside it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # pragma: no cover
    from grokray.config import TrialConfig
    from grokray.result import TrialResult
    from grokray.sweep.outcome import Outcome
    from grokray.sweep.plan import Plan

State = Literal["done", "nothing_to_run", "stopped", "more_to_do", "no_progress"]


@dataclass(frozen=True)
class SweepStarted:
    plan: Plan


@dataclass(frozen=True)
class TrialStarted:
    config: TrialConfig


@dataclass(frozen=True)
class TrialWritten:
    outcome: Outcome
    result: TrialResult
    """the rows written (for a failed or lost trial: the failed result the writer made)"""


@dataclass(frozen=True)
class CheckpointStored:
    config_hash: str
    """the trial's identity (its config's `config_hash()`; each config of a pack has its own)"""
    step: int
    """the step the checkpoint was taken at (the top of that step: its update not yet taken)"""


@dataclass(frozen=True)
class Notice:
    line: str
    err: bool = False
    """the line is a warning or a stop's report (the CLI prints it to stderr)"""


@dataclass
class SweepOutcome:
    """How a run of the driver ended."""

    plan: Plan
    state: State
    """done: every trial of the plan ran; nothing_to_run: every (config, seed) had a row;
    stopped: a graceful stop, SIGTERM or Ctrl-C ended it (finished trials are written);
    more_to_do: the policy left trials for later (`later`); no_progress: the policy's run
    wrote no row and no newer checkpoint"""
    exit_code: int
    """0 (done, nothing_to_run); 128 + the signal when stopped (143 for a graceful stop or
    SIGTERM, 130 for Ctrl-C); the policy's more_to_do_exit / no_progress_exit"""
    written: list[Outcome] = field(default_factory=list)
    """every trial written by this run, in the order written"""
    later: list[TrialConfig] = field(default_factory=list)
    """configs the policy left for a later run"""
    cut_short: int = 0
    """trials started and not written when the run stopped"""
    logs_dir: str = ""
    """the Ray session's log directory ("" without Ray)"""
    messages: list[str] = field(default_factory=list)
    """lines that say why the run ended other than done (the CLI prints them to stderr)"""

    @property
    def failed(self) -> int:
        """Trials written as failed."""
        return sum(o.error is not None for o in self.written)


@dataclass(frozen=True)
class SweepEnded:
    outcome: SweepOutcome


SweepEvent = SweepStarted | TrialStarted | TrialWritten | CheckpointStored | Notice | SweepEnded
Subscriber = Callable[[SweepEvent], None]
