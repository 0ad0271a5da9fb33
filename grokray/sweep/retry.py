"""Where a lost worker is retried: one test of "the worker was lost" (`worker_lost`, by Ray's
exception types) and one retry policy (`Retries`), used by every Ray executor.

A batch of configs runs in one worker call. When the call fails because its worker process or
node went away, the batch runs again: a batch of several configs as one-config batches (which of
them killed the worker is unknown; the others must not fail with it), a single config up to
`retries` more times, after which it fails as "lost after N tries: ...". When Ray could not even
set the call up (the trial function cannot be unpickled or imported, the worker's creation
raised), running it again fails the same way: the batch fails at once. Exceptions of a trial
itself never get here: they come back as failed outcomes (`outcome.execute`).
"""

from __future__ import annotations

from collections.abc import Sequence

from grokray.config import TrialConfig
from grokray.sweep.outcome import Outcome, one_line


def _lost_types() -> tuple[type, ...]:
    """Ray's exceptions for a call whose worker process or node went away."""
    from ray import exceptions as rx

    return (rx.WorkerCrashedError, rx.NodeDiedError, rx.LocalRayletDiedError, rx.ObjectLostError,
            rx.OwnerDiedError, rx.ActorUnavailableError, rx.OutOfMemoryError, rx.RaySystemError)


def worker_lost(exc: BaseException | None) -> bool:
    """Was the worker lost (worth running again), rather than the call impossible to set up?

    Decided by the exception's type, never its text: the types of `_lost_types`, an actor that
    died of a system error, or no exception object at all are a lost worker; a task error (the
    trial function cannot be imported or unpickled) or an actor whose creation raised is not."""
    if exc is None or isinstance(exc, _lost_types()):
        return True
    from ray import exceptions as rx

    if isinstance(exc, rx.ActorDiedError):
        return not getattr(exc, "_actor_init_failed", False)
    return isinstance(exc, rx.RayActorError)


class Retries:
    """The retry policy of one executor run (module docstring): what runs again, what fails."""

    def __init__(self, retries: int):
        self.retries = retries
        """times a single config whose worker was lost runs again"""
        self.tries: dict[str, int] = {}
        """config hash -> calls of it that lost their worker"""

    def lost(self, configs: Sequence[TrialConfig], exc: BaseException | None,
             text: str = "") -> tuple[list[list[TrialConfig]], list[Outcome]]:
        """A call running `configs` failed with `exc` (`text`: Ray's description when there is
        no exception object): the batches to run again and the failed outcomes to report."""
        lines = [ln for ln in text.splitlines() if ln.strip()]
        why = one_line(exc) if exc is not None else one_line(lines[-1] if lines else "lost")
        if not worker_lost(exc):
            return [], [Outcome(c, None, error=why, traceback=text or None, exception=exc)
                        for c in configs]
        if len(configs) > 1:
            return [[c] for c in configs], []
        cfg = configs[0]
        key = cfg.config_hash()
        self.tries[key] = self.tries.get(key, 0) + 1
        if self.tries[key] <= self.retries:
            return [[cfg]], []
        error = one_line(f"lost after {self.tries[key]} tries: {why}")
        return [], [Outcome(cfg, None, error=error, traceback=text or None, exception=exc)]
