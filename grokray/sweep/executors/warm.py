"""The warm-worker executor: a grid on an embedded local Ray, run on the session's warm workers
(`sweep.workers.WarmWorkers`) without a Ray Tune experiment per sweep.

One worker call (`calls.worker_calls`, longest first) per worker at a time, on at most as many
workers as trials run at once; a call whose worker died goes through the retry loop
(`retry.CallQueue`) and the worker is replaced.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

from grokray.config import TrialConfig
from grokray.errors import GrokrayError
from grokray.sweep.executors.base import Sink
from grokray.sweep.executors.calls import WorkerCall, longest_first, worker_calls
from grokray.sweep.executors.retry import CallQueue, worker_lost
from grokray.sweep.outcome import TrialFn
from grokray.sweep.search import SearchRun
from grokray.sweep.session import RaySession


class WarmExecutor:
    """Runs a grid's configs on `session`'s warm workers, each holding `cpu` and `gpu`."""

    def __init__(self, session: RaySession, *, cpu: float = 1.0, gpu: float = 0.0,
                 concurrency: int | None = None, retries: int = 2,
                 trial_fn: TrialFn | None = None, pack: int | None = 1):
        self.session = session
        self.pack = pack
        """configs per pack (1: off; None: auto, `packing.packs`)"""
        self.cpu, self.gpu = cpu, gpu
        self.concurrency = concurrency
        self.retries = retries
        self.trial_fn = trial_fn

    def run_search(self, search: SearchRun, sink: Sink) -> None:
        raise GrokrayError("a search runs on Ray Tune (TuneExecutor), not on warm workers")

    def run(self, configs: Sequence[TrialConfig], sink: Sink) -> None:
        """Run every config (blocking), tiny ones several to a call, the longest calls first."""
        if not configs:
            return
        self.session.check_resources(self.cpu, self.gpu)
        calls = worker_calls(list(configs), self.session.slots(self.cpu, self.concurrency),
                             self.pack, self.gpu, packable=self.trial_fn is None)
        self.run_calls([calls[i] for i in longest_first(calls)], sink)

    def run_calls(self, calls: Sequence[WorkerCall], sink: Sink) -> None:
        """Run every call, in the order given, one per worker at a time; an interrupt or a
        write error stops the workers (what still runs is dropped)."""
        try:
            self._run_calls(calls, sink)
        except BaseException:
            self.session.warm.release()
            raise

    def _run_calls(self, calls: Sequence[WorkerCall], sink: Sink) -> None:
        import ray  # a warm executor exists only inside a RaySession: Ray is up

        todo = CallQueue(calls, self.retries, sink)
        fn_ref = ray.put(self.trial_fn)
        running: dict[Any, tuple[WorkerCall, Any]] = {}  # object ref -> (call, worker)

        def submit(call: WorkerCall, actor: Any) -> None:
            for cfg in call.configs:
                sink.started(cfg)
            ref = actor.run.remote([c.to_dict() for c in call.configs], fn_ref, call.packed)
            running[ref] = (call, actor)

        slots = self.session.slots(self.cpu, self.concurrency)
        for actor in self.session.warm.get(min(slots, len(todo)), self.cpu, self.gpu):
            if todo:
                submit(todo.next(), actor)
        try:
            self._collect(running, todo, submit, sink)
        except KeyboardInterrupt:
            _report_ready(running, sink)
            raise

    def _collect(self, running: dict[Any, tuple[WorkerCall, Any]], todo: CallQueue,
                 submit: Any, sink: Sink) -> None:
        import ray  # as in _run_calls
        from ray import exceptions as rx

        while running:
            # a timed wait: a stop raised in this thread from another one (the sweep driver's
            # `stop`) lands between two waits, not only when a trial ends
            done, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            if not done:
                continue
            call, actor = running.pop(done[0])
            try:
                outs = pickle.loads(ray.get(done[0]))
            except rx.RayError as exc:
                if worker_lost(exc):  # its process died: a fresh one
                    actor = self.session.warm.replace(actor)
                todo.lost(call, exc)
                outs = []
            for out in outs:
                sink.finished(out)
            if todo:
                submit(todo.next(), actor)


def _report_ready(running: dict[Any, tuple[WorkerCall, Any]], sink: Sink) -> None:
    """Interrupted: report the calls that had already come back (a trial that ended while a
    graceful stop asked for checkpoints), so that their results are written, not run again."""
    import ray  # as in _run_calls

    if not running:
        return
    try:
        ready, _ = ray.wait(list(running), num_returns=len(running), timeout=0)
        for ref in ready:
            for out in pickle.loads(ray.get(ref, timeout=0)):
                sink.finished(out)
    except Exception:  # noqa: BLE001 - a lost call or Ray going away: it runs again
        pass
