"""The sweep driver: run one sweep spec in this process, the library every caller uses
(`grokray sweep`, `grokray reproduce`, `grokray slurm`'s job, a service, a notebook, a test).

    driver = SweepDriver(spec, pack=1)          # spec: grokray.sweep.spec.SweepSpec
    driver.subscribe(print_event)               # progress events (grokray.sweep.events)
    with RaySession(num_cpus=4) as session:     # or session=None: in process, one by one
        outcome = driver.run(session)           # blocks; driver.stop() from any thread
    outcome.state, outcome.exit_code            # "done", 0

`run` holds the sweep dir's writer lock (grokray.sweep.lock) for the whole run, makes the plan
(what has no row yet), runs it on the executor the session gives (grokray.sweep.executors),
and writes each finished trial as it ends (grokray.sweep.writer). A `SchedulingPolicy` (a
Slurm allocation's deadline, grokray.slurm.deadline) decides which trials start when.

A graceful stop (`stop()`, or SIGTERM when `run` is called on the main thread) asks the
running trials to checkpoint, waits for them (at most the policy's `stop_wait_s`, else
STOP_WAIT_S), then ends the run: the rows of every finished trial are kept, the next run of
the same spec restores the trials cut short from their checkpoints. Ctrl-C (SIGINT) stops
without asking for checkpoints. Either way `run` returns a SweepOutcome in state "stopped".
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from grokray.sweep.events import (
    CheckpointStored,
    Notice,
    Subscriber,
    SweepEnded,
    SweepEvent,
    SweepOutcome,
    SweepStarted,
    TrialStarted,
    TrialWritten,
)
from grokray.sweep.interrupt import Interrupted, on_signals
from grokray.sweep.lock import WriterLock

if TYPE_CHECKING:  # pragma: no cover
    from grokray.config import TrialConfig
    from grokray.result import TrialResult
    from grokray.sweep.outcome import Outcome
    from grokray.sweep.plan import Plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.spec_model import SweepSpec

__all__ = ["STOP_WAIT_S", "GracefulStop", "SchedulingPolicy", "Slots", "SweepDriver",
           "SweepOutcome", "checkpoint_running"]

EXIT_OK = 0
STOP_WAIT_S = 30.0
"""seconds a graceful stop waits for the running trials' checkpoints without a policy"""


class Slots(Protocol):
    """How many trials run at once on a Ray session (grokray.sweep.session.RaySession)."""

    def slots(self, cpu: float, concurrency: int | None) -> int: ...

    def gpu_slots(self, gpu: float, concurrency: int | None) -> int: ...


@runtime_checkable
class SchedulingPolicy(Protocol):
    """When the trials of a plan start, and what a stop may cost: grokray.slurm.deadline's
    `Deadline` (start only what can end before the allocation does, in rounds)."""

    more_to_do_exit: int
    """the exit code of a run that left trials for later, after making progress"""
    no_progress_exit: int
    """the exit code of a run that wrote no row and no newer checkpoint"""

    def run(self, plan: Plan, run_part: Callable[[Plan], None], session: Slots | None,
            outcomes: Callable[[], Sequence[Outcome]] | None = None,
            say: Callable[[str], None] = print) -> list[TrialConfig]:
        """Run `plan` through `run_part` (parts of it: `replace(plan, todo=...)`), reading
        the pace of the trials finished so far from `outcomes`; `say` tells the user about
        each round. The configs left for later (empty when everything ran)."""
        ...

    def stop_wait_s(self, default_s: float) -> float:
        """Seconds a graceful stop may wait for the running trials' checkpoints."""
        ...

    def made_progress(self, plan: Plan) -> bool:
        """Did this run write a row, or a checkpoint newer than its start?"""
        ...

    def later_line(self, later: Sequence[TrialConfig]) -> str:
        """What waits for later, as one line."""
        ...

    def no_progress_line(self, later: Sequence[TrialConfig]) -> str:
        """The one line of a run that made no progress."""
        ...


class GracefulStop(Interrupted):
    """Raised in the driver's thread by `SweepDriver.stop()` (as SIGTERM would be)."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__(signum)


class _Sink:
    """The writer's display: fans TrialStarted / TrialWritten / CheckpointStored out to the
    subscribers and keeps the trials started and not yet written."""

    def __init__(self, emit: Callable[[SweepEvent], None]):
        self.emit = emit
        self.running: dict[str, TrialConfig] = {}

    def started(self, config: TrialConfig) -> None:
        self.running[config.config_hash()] = config
        self.emit(TrialStarted(config))

    def finished(self, outcome: Outcome, result: TrialResult) -> None:
        self.running.pop(outcome.config.config_hash(), None)
        self.emit(TrialWritten(outcome, result))

    def checkpoint_stored(self, config_hash: str, step: int) -> None:
        self.emit(CheckpointStored(config_hash, step))


class SweepDriver:
    """Runs one sweep spec in this process (module docstring; docs/api.md).

    `spec`: a SweepSpec, a spec file or a shipped spec's name (`grokray specs`); `out`: the
    output root instead of the spec's; `rerun_failed`: run failed rows again; `force`: run
    everything again into a new run id; `pack`: configs per pack (1: off, None: auto; grids
    only); `policy`: when trials start (None: all at once); `holder`: who holds the writer
    lock (shown to another driver)."""

    def __init__(self, spec: SweepSpec | str | os.PathLike[str], *, out: str | None = None,
                 rerun_failed: bool = False, force: bool = False, pack: int | None = 1,
                 policy: SchedulingPolicy | None = None,
                 holder: str = "grokray (in-process driver)"):
        if not hasattr(spec, "sweep_dir"):  # a spec file, or a shipped spec's name
            from grokray import shipped
            from grokray.sweep.spec import load_spec

            spec = load_spec(shipped.resolve(os.fspath(spec), shipped.SWEEP))
        if out is not None:
            spec = replace(spec, out=out)
        self.spec: SweepSpec = spec  # type: ignore[assignment]
        self.rerun_failed = rerun_failed
        self.force = force
        self.pack = pack
        self.policy = policy
        self.holder = holder
        self._subscribers: list[Subscriber] = []
        self._lock = threading.Lock()
        self._thread: int | None = None
        """the thread id of a run between its executor's start and end (None otherwise)"""
        self._stop_asked = False
        self._raised = False

    # ------------------------------------------------------------------ the public API

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call `subscriber(event)` for every event of every later run; returns the call that
        unsubscribes it."""
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    def stop(self) -> None:
        """Stop the run gracefully, from any thread (a subscriber's too): the running trials
        checkpoint (waiting at most the policy's stop_wait_s, else STOP_WAIT_S), then `run`
        returns state "stopped", exit code 143, the rows of the finished trials kept. Before
        `run` starts its trials, the run stops there; a second call does nothing."""
        with self._lock:
            if self._stop_asked:
                return
            self._stop_asked = True
            running = self._thread is not None
        if running:
            self._checkpoint_now()
        with self._lock:
            if self._thread is not None and not self._raised:
                self._raised = True
                _raise_in(self._thread, GracefulStop)

    @property
    def stop_asked(self) -> bool:
        return self._stop_asked

    def run(self, session: RaySession | None = None, *,
            handle_signals: bool = True) -> SweepOutcome:
        """Run the spec's missing trials on `session` (a RaySession, opened here for this run
        when it is not open yet; None: in process, one after another), holding the sweep
        dir's writer lock; returns when every trial ran, the policy left the rest for later,
        or a stop came. On the main thread with `handle_signals`, SIGTERM is a graceful stop
        and Ctrl-C a stop (the old handlers come back after). A GrokrayError (a held lock, a
        full disk, ...) propagates."""
        from grokray.sweep.plan import make_plan

        with self._held_lock():
            plan = make_plan(self.spec, rerun_failed=self.rerun_failed, force=self.force)
            self._emit(SweepStarted(plan))
            if not plan.n_todo_trials:
                return self._end(SweepOutcome(plan, "nothing_to_run", EXIT_OK))
            return self._end(self._run_plan(plan, session, handle_signals))

    # ------------------------------------------------------------------ running

    def _run_plan(self, plan: Plan, session: RaySession | None,
                  handle_signals: bool) -> SweepOutcome:
        from grokray.sweep.writer import Writer, trials_written

        sink = _Sink(self._emit)  # the writer calls it under its own lock
        writer = Writer(plan, sink)
        main = threading.current_thread() is threading.main_thread()
        signals = on_signals() if handle_signals and main else None
        if signals is not None:  # SIGTERM: the running trials checkpoint while Ray runs them
            signals.on_term = self._checkpoint_now
        policy = self.policy
        later: list[TrialConfig] = []
        logs = ""
        # a session not yet open is opened here, for this run only (Ray starts only when there
        # is something to run); an open one (reproduce's, shared by its sweeps) stays open
        ray = session if session is not None and not session.open else contextlib.nullcontext()
        try:
            with signals or contextlib.nullcontext(), ray:
                if signals is not None:
                    signals.install()  # again: after Ray's start, which sets its own
                self._enter()
                try:
                    if policy is None:
                        self._run_part(plan, writer, session)
                    else:
                        # the pace of trials that finish here scales the policy's estimates
                        # (not of packs: each config of one reports the whole pack's time)
                        outcomes = (lambda: writer.outcomes) if self.pack == 1 else None
                        later = policy.run(plan, lambda part: self._run_part(
                            part, writer, session), session, outcomes, self._say)
                    self._leave()
                finally:
                    self._thread = None
                    if session is not None:  # asked while still connected: Ray's temp dir
                        logs = session.logs_dir()
        except KeyboardInterrupt as exc:  # a stop, SIGTERM, Ctrl-C, or Ray's re-raise of it
            if signals is not None and signals.received:
                code = signals.exit_code
            else:  # stop(): 143 (also when Ray re-raised it as a plain KeyboardInterrupt)
                code = GracefulStop().exit_code if self._raised else \
                    getattr(exc, "exit_code", 130)
            lines = [f"interrupted: {trials_written(plan)} trials written; run the same "
                     "command to resume"]
            cut = len(sink.running)
            if policy is not None and cut:  # started, not written
                lines.append(f"grokray sweep: {cut} trial{' was' if cut == 1 else 's were'} "
                             "cut short")
            out = SweepOutcome(plan, "stopped", code, list(writer.outcomes), cut_short=cut,
                               logs_dir=logs, messages=lines)
            return self._policy_exit(out)
        out = SweepOutcome(plan, "done", EXIT_OK, list(writer.outcomes), logs_dir=logs)
        if later and policy is not None:  # trials that could not finish before the limit
            out = replace(out, state="more_to_do", exit_code=policy.more_to_do_exit,
                          later=list(later), messages=[policy.later_line(later)])
            return self._policy_exit(out)
        return out

    def _run_part(self, plan: Plan, writer: object, session: RaySession | None) -> None:
        # lazy: loads torch and pandas
        from grokray.sweep.executors.factory import make_executor
        from grokray.sweep.writer import run_plan

        run_plan(plan, make_executor(plan.spec, plan.run_id, session, self.pack), None,
                 writer)  # type: ignore[arg-type]

    def _policy_exit(self, out: SweepOutcome) -> SweepOutcome:
        """A policy's run that wrote nothing new: one line and the policy's no-progress exit."""
        policy = self.policy
        if policy is None or policy.made_progress(out.plan):
            return out
        return replace(out, state="no_progress", exit_code=policy.no_progress_exit,
                       messages=[*out.messages, policy.no_progress_line(out.later)])

    # ------------------------------------------------------------------ stopping

    def _enter(self) -> None:
        with self._lock:
            if self._stop_asked:  # asked before the trials started: stop here
                self._raised = True
                raise GracefulStop()
            self._thread = threading.get_ident()
            self._raised = False

    def _leave(self) -> None:
        """The trials are over: no stop may land after this; one already sent lands here."""
        with self._lock:
            tid, self._thread = self._thread, None
            if self._raised and tid is not None:
                _raise_in(tid, None)  # cancel it if not yet delivered, and raise it now
                raise GracefulStop()

    def _checkpoint_now(self) -> None:
        """Ask the running trials to checkpoint and wait; its line as a Notice."""
        wait = self.policy.stop_wait_s(STOP_WAIT_S) if self.policy is not None else STOP_WAIT_S
        line = checkpoint_running(wait)
        if line:
            self._emit(Notice(line, err=True))

    # ------------------------------------------------------------------ events

    @contextlib.contextmanager
    def _held_lock(self) -> Iterator[None]:
        with WriterLock(self.spec.sweep_dir, self.holder) as lock:
            if lock.notice:
                self._emit(Notice(lock.notice, err=True))
            yield

    def _emit(self, event: SweepEvent) -> None:
        for s in list(self._subscribers):
            s(event)

    def _say(self, line: str) -> None:
        self._emit(Notice(line))

    def _end(self, out: SweepOutcome) -> SweepOutcome:
        self._emit(SweepEnded(out))
        return out


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    """Raise `exc` in the thread `thread_id` at its next Python instruction (None: cancel a
    pending one). A thread blocked in C gets it when it returns to Python."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                               ctypes.py_object(exc) if exc else None)


def checkpoint_running(timeout_s: float) -> str | None:
    """Ask every running trial of this process's sweep to checkpoint now and wait until each
    has (or finished, or `timeout_s` ran out). The line to show, None when no sweep with
    checkpoints runs."""
    try:
        from grokray.sweep.checkpoint_store import channel
    except ImportError:  # a grokray without trial checkpoints
        return None
    ch = channel()
    if ch is None:
        return None
    t0 = time.time()
    missing = ch.wait(ch.request(), timeout_s)
    took = time.time() - t0
    if missing:
        return (f"asked the running trials to checkpoint: {missing} did not answer within "
                f"{timeout_s:.0f} s (they are restored from their last periodic checkpoint)")
    return f"asked the running trials to checkpoint: done in {took:.1f} s"
