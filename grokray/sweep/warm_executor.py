"""The warm-worker executor: a grid on an embedded local Ray, run on the session's warm workers
(`workers.WarmWorkers`) without a Ray Tune experiment per sweep.

One batch of configs (`batching.tiny_batches`, longest first) per worker at a time, on at most
as many workers as trials run at once; a batch whose worker died goes through the retry policy
(`retry.Retries`) and the worker is replaced.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from grokray.config import TrialConfig
from grokray.errors import GrokrayError
from grokray.sweep.batching import longest_first, worker_calls
from grokray.sweep.outcome import TrialFn
from grokray.sweep.retry import Retries, worker_lost
from grokray.sweep.search import SearchRun
from grokray.sweep.session import RaySession

if TYPE_CHECKING:
    from grokray.sweep.executor import Sink


class WarmExecutor:
    """Runs a grid's configs on `session`'s warm workers, each holding `cpu` and `gpu`."""

    def __init__(self, session: RaySession, *, cpu: float = 1.0, gpu: float = 0.0,
                 concurrency: int | None = None, retries: int = 2,
                 trial_fn: TrialFn | None = None, pack: int | None = 1):
        self.session = session
        self.pack = pack
        """configs per pack (1: off; None: auto, `batching.pack_size`)"""
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
        configs = list(configs)
        self.session.check_resources(self.cpu, self.gpu)
        batches, packs = worker_calls(configs, self.session.slots(self.cpu, self.concurrency),
                                      self.pack, self.gpu, packable=self.trial_fn is None)
        order = longest_first(configs, batches)
        self.run_batches([[configs[i] for i in batches[b]] for b in order], sink,
                         [packs[b] for b in order])

    def run_batches(self, batches: Sequence[Sequence[TrialConfig]], sink: Sink,
                    packs: Sequence[int] | None = None) -> None:
        """Run every batch, in the order given, one per worker at a time (`packs`: for each
        batch, configs per pack, 1 when it is a batch of configs run one by one); an interrupt
        or a write error stops the workers (what still runs is dropped)."""
        try:
            self._run_batches(batches, sink, packs)
        except BaseException:
            self.session.warm.release()
            raise

    def _run_batches(self, batches: Sequence[Sequence[TrialConfig]], sink: Sink,
                     packs: Sequence[int] | None) -> None:
        import ray
        from ray import exceptions as rx

        policy = Retries(self.retries)
        fn_ref = ray.put(self.trial_fn)
        sizes = list(packs) if packs is not None else [1] * len(batches)
        # a stack: pop() takes the next (batch, configs per pack)
        todo = [(list(b), k) for b, k in reversed(list(zip(batches, sizes, strict=True)))]
        running: dict[Any, tuple[list[TrialConfig], Any]] = {}  # object ref -> (batch, worker)

        def submit(item: tuple[list[TrialConfig], int], actor: Any) -> None:
            batch, size = item
            for cfg in batch:
                sink.started(cfg)
            running[actor.run.remote([c.to_dict() for c in batch], fn_ref, size)] = \
                (batch, actor)

        slots = self.session.slots(self.cpu, self.concurrency)
        for actor in self.session.warm.get(min(slots, len(todo)), self.cpu, self.gpu):
            if todo:
                submit(todo.pop(), actor)
        while running:
            done, _ = ray.wait(list(running), num_returns=1)
            batch, actor = running.pop(done[0])
            try:
                outs = pickle.loads(ray.get(done[0]))
            except rx.RayError as exc:
                if worker_lost(exc):  # its process died: a fresh one
                    actor = self.session.warm.replace(actor)
                again, outs = policy.lost(batch, exc)
                todo.extend((b, 1) for b in reversed(again))  # next in line, one by one
            for out in outs:
                sink.finished(out)
            if todo:
                submit(todo.pop(), actor)
