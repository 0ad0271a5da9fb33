"""What one trial gives back (`Outcome`) and how a trial function is run (`execute`): shared by
the backends (`grokray.sweep.backend`) and the warm workers (`grokray.sweep.pool`)."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grokray.config import TrialConfig

TrialFn = Callable[[TrialConfig], Any]


@dataclass
class Outcome:
    """What came back from one trial."""

    config: TrialConfig
    """the config that ran (with the seeds it ran)"""
    result: Any | None
    """the TrialResult, or None when the trial raised or its worker was lost"""
    error: str | None = None
    """one-line error text when `result` is None"""
    node_id: str | None = None
    """Ray node id it ran on ("local" for the in-process backend)"""
    wall_s: float = 0.0
    """seconds from start to end of trial_fn"""
    cpu_s: float = 0.0
    """CPU seconds (user + system, every thread) of the process running trial_fn over that
    time: what the trial cost, whatever the load of the machine"""
    traceback: str | None = None
    """full traceback of the error, for the log"""
    exception: BaseException | None = None
    """the exception Ray gave for a trial it lost (decides whether to retry); driver only"""


def default_trial_fn() -> TrialFn:
    """`grokray.trainer.run_trial`."""
    from grokray.trainer import run_trial

    return run_trial


def execute(config: TrialConfig, trial_fn: TrialFn) -> Outcome:
    """Run one trial, turning an exception into an Outcome with its one-line error."""
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        result = trial_fn(config)
        return Outcome(config, result, wall_s=time.perf_counter() - t0,
                       cpu_s=time.process_time() - c0)
    except Exception as exc:  # noqa: BLE001 - every trial error becomes a failed row
        return Outcome(config, None, error=one_line(exc), wall_s=time.perf_counter() - t0,
                       cpu_s=time.process_time() - c0, traceback=traceback.format_exc())


def one_line(exc: BaseException | str) -> str:
    """`Type: message`, first line only, at most 500 characters."""
    if isinstance(exc, BaseException):
        text = f"{type(exc).__name__}: {exc}"
    else:
        text = str(exc).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return (lines[0] if lines else text)[:500]
