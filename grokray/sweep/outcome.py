"""What one trial gives back (`Outcome`), how a trial function is run (`execute`) and the
trial-level metrics a search optimizes (`trial_summary`): shared by every executor."""

from __future__ import annotations

import functools
import math
import socket
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from grokray.config import TrialConfig
from grokray.pack import run_pack
from grokray.trial import run_trial

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
    """Ray node id it ran on ("local" for the in-process executor)"""
    wall_s: float = 0.0
    """seconds from start to end of trial_fn"""
    cpu_s: float = 0.0
    """CPU seconds (user + system, every thread) of the process running trial_fn over that
    time: what the trial cost, whatever the load of the machine"""
    traceback: str | None = None
    """full traceback of the error, for the log"""
    hostname: str | None = None
    """host a trial that raised ran on (its result, when there is one, names its own); None
    for an outcome made on the driver for a trial it lost, which ran nowhere it knows"""
    exception: BaseException | None = None
    """the exception Ray gave for a trial it lost (decides whether to retry); driver only"""
    lost: bool = False
    """its worker or node was lost on every try: the trial did not fail by itself, so its
    checkpoints stay (grokray/sweep/checkpoint_store.py) and `--rerun-failed` restores it"""


def default_trial_fn(checkpoints: Any = None) -> TrialFn:
    """`grokray.trial.run_trial` (keeping its checkpoints through `checkpoints`, a
    grokray.checkpoint.Hook, when given)."""
    if checkpoints is None:
        return run_trial
    return functools.partial(run_trial, checkpoints=checkpoints)


def execute(config: TrialConfig, trial_fn: TrialFn) -> Outcome:
    """Run one trial, turning an exception into an Outcome with its one-line error."""
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        result = trial_fn(config)
        return Outcome(config, result, wall_s=time.perf_counter() - t0,
                       cpu_s=time.process_time() - c0)
    except Exception as exc:  # noqa: BLE001 - every trial error becomes a failed row
        return Outcome(config, None, error=one_line(exc), wall_s=time.perf_counter() - t0,
                       cpu_s=time.process_time() - c0, traceback=traceback.format_exc(),
                       hostname=socket.gethostname())


def execute_pack(configs: Sequence[TrialConfig], checkpoints: Any = None) -> list[Outcome]:
    """Run configs of one shape as one pack (`grokray.pack.run_pack`): one Outcome per config.
    Each gets the pack's wall time and its share of the pack's CPU time by the seed-steps it
    ran (so that the CPU times of a sweep still add up); an exception fails every config."""
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        results = run_pack(configs, checkpoints=checkpoints)
    except Exception as exc:  # noqa: BLE001 - every trial error becomes a failed row
        wall, cpu, tb = time.perf_counter() - t0, time.process_time() - c0, traceback.format_exc()
        host = socket.gethostname()
        return [Outcome(c, None, error=one_line(exc), wall_s=wall, cpu_s=cpu / len(configs),
                        traceback=tb, hostname=host) for c in configs]
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    work = [max(1, sum(max(0, s.steps_run - (s.checkpoint_step or s.continued_from_step or 0))
                       for s in r.seeds))
            for r in results]  # the steps each trained here (past a continued or restored start)
    return [Outcome(c, r, wall_s=wall, cpu_s=cpu * w / sum(work))
            for c, r, w in zip(configs, results, work, strict=True)]


def one_line(exc: BaseException | str) -> str:
    """`Type: message`, first line only, at most 500 characters."""
    if isinstance(exc, BaseException):
        text = f"{type(exc).__name__}: {exc}"
    else:
        text = str(exc).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return (lines[0] if lines else text)[:500]


def trial_summary(rows: Sequence[dict[str, Any]], steps: int) -> dict[str, float]:
    """Trial-level metrics over its seeds (what a search optimizes).

    grok_rate: fraction of seeds grokked; grok_step: mean grok step, a seed that did not grok
    counting as the step budget; final_val_acc, final_val_loss: means. NaN when nothing ran.
    """
    ok = [r for r in rows if r.get("status") != "failed"]
    if not ok:
        nan = float("nan")
        return {"grok_rate": nan, "grok_step": nan, "final_val_acc": nan, "final_val_loss": nan}

    def mean(xs: list[float]) -> float:
        xs = [x for x in xs if x is not None and not isnan(x)]
        return sum(xs) / len(xs) if xs else float("nan")

    grokked = [r.get("status") == "grokked" and r.get("grok_step") is not None for r in ok]
    return {
        "grok_rate": sum(r.get("status") == "grokked" for r in ok) / len(ok),
        "grok_step": mean([float(r["grok_step"]) if g else float(steps)
                           for r, g in zip(ok, grokked, strict=True)]),
        "final_val_acc": mean([r.get("final_val_acc") for r in ok]),
        "final_val_loss": mean([r.get("final_val_loss") for r in ok]),
    }


def isnan(x: Any) -> bool:
    """NaN, or not a number at all."""
    try:
        return math.isnan(float(x))
    except (TypeError, ValueError):
        return True


def outcome_summary(outcome: Outcome) -> dict[str, float]:
    """`trial_summary` of an outcome."""
    if outcome.result is None:
        return trial_summary([], outcome.config.steps)
    return trial_summary(outcome.result.seed_rows(), outcome.config.steps)
