"""Where a lost worker is retried: one test of "the worker was lost" (`worker_lost`, by Ray's
exception types), one retry policy (`Retries`) and the one retry loop (`CallQueue`) that the
warm and the Tune executors both drive.

A worker call (`calls.WorkerCall`) that fails because its worker process or node went away runs
again: a call of several configs as one-config calls (which of them killed the worker is
unknown; the others must not fail with it), a single config up to `retries` more times, after
which it fails as "lost after N tries: ...". When Ray could not even set the call up (the trial
function cannot be unpickled or imported, the worker's creation raised), running it again fails
the same way: the call fails at once. Exceptions of a trial itself never get here: they come
back as failed outcomes (`outcome.execute`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING

from grokray.config import TrialConfig
from grokray.sweep.executors.calls import WorkerCall
from grokray.sweep.outcome import Outcome, one_line

if TYPE_CHECKING:
    from grokray.sweep.executors.base import Sink


def _lost_types() -> tuple[type, ...]:
    """Ray's exceptions for a call whose worker process or node went away."""
    from ray import exceptions as rx  # Ray only when a call failed: this module loads without it

    return (rx.WorkerCrashedError, rx.NodeDiedError, rx.LocalRayletDiedError, rx.ObjectLostError,
            rx.OwnerDiedError, rx.ActorUnavailableError, rx.OutOfMemoryError, rx.RaySystemError)


def worker_lost(exc: BaseException | None) -> bool:
    """Was the worker lost (worth running again), rather than the call impossible to set up?

    Decided by the exception's type, never its text: the types of `_lost_types`, an actor that
    died of a system error, or no exception object at all are a lost worker; a task error (the
    trial function cannot be imported or unpickled) or an actor whose creation raised is not."""
    if exc is None or isinstance(exc, _lost_types()):
        return True
    from ray import exceptions as rx  # as in _lost_types

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
        no exception object): the configs of each call to run again and the failed outcomes to
        report."""
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
        return [], [Outcome(cfg, None, error=error, traceback=text or None, exception=exc,
                            lost=True)]


class CallQueue:
    """The worker calls of one executor run still to start, in order, and what becomes of a
    lost one (`lost`: the retry policy's calls go next in line, its failures to the sink). The
    warm executor takes one call at a time as a worker frees (`next`), the Tune executor all of
    them for one `Tuner.fit` (`take_all`)."""

    def __init__(self, calls: Sequence[WorkerCall], retries: int, sink: Sink):
        self.policy = Retries(retries)
        self.sink = sink
        self._todo: deque[WorkerCall] = deque(calls)

    def __len__(self) -> int:
        return len(self._todo)

    def next(self) -> WorkerCall:
        """The next call to start."""
        return self._todo.popleft()

    def take_all(self) -> list[WorkerCall]:
        """Every call still to start, in order (the queue is left empty)."""
        calls, self._todo = list(self._todo), deque()
        return calls

    def lost(self, call: WorkerCall, exc: BaseException | None, text: str = "") -> None:
        """`call` failed with `exc` (`text`: Ray's description): what the policy runs again goes
        next in line, one config a call; what it gives up on is reported failed."""
        again, failed = self.policy.lost(call.configs, exc, text)
        self._todo.extendleft(WorkerCall(c) for c in reversed(again))
        for out in failed:
            self.sink.finished(out)
