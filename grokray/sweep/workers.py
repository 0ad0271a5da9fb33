"""Warm trial workers: plain Ray actors, one per concurrent slot, that import the trainer once
and then run worker calls (`executors.calls.run_call`) for every sweep of a Ray session.

A Ray Tune experiment starts trial actors of its own and stops them when it ends, so each sweep
on Tune pays for fresh processes importing torch, Ray Tune and grokray (3-4 CPU s each,
benchmarks/README.md); these are created once per `RaySession`, which stops them on leaving.
"""

from __future__ import annotations

import os
import pickle
from typing import Any

from grokray.config import TrialConfig
from grokray.sweep.executors.calls import WorkerCall, run_call


def _worker_class() -> Any:
    """The Ray actor class (defined on first use: this module imports Ray lazily)."""
    cls = globals().get("_Worker")
    if cls is not None:
        return cls
    # lazy: Ray only where a Ray session runs (--local, dry runs load none)
    import ray

    @ray.remote
    class _Worker:
        """One warm process: imports the trainer once, then runs worker calls."""

        def __init__(self, cpu: float = 1.0) -> None:
            import grokray.trainer  # noqa: F401 - warm: the first trial does not pay for it

            self.cpu = cpu
            """the CPUs it holds: its calls train on `grokray.threads.trial_threads(cpu)`"""

        def pid(self) -> int:
            return os.getpid()

        def run(self, configs: list[dict[str, Any]], trial_fn: Any, packed: bool = False) -> bytes:
            node = ray.get_runtime_context().get_node_id()
            call = WorkerCall([TrialConfig.from_dict(d) for d in configs], packed)
            return pickle.dumps(run_call(call, trial_fn, node, cpu=self.cpu, log=True))

    globals()["_Worker"] = _Worker
    return _Worker


class WarmWorkers:
    """The warm workers of one Ray session, all with the same resources (`cpu`, `gpu`)."""

    def __init__(self) -> None:
        self.actors: list[Any] = []
        self.key: tuple[float, float] | None = None
        """(cpu, gpu) of every actor"""

    def get(self, n: int, cpu: float, gpu: float) -> list[Any]:
        """`n` workers with `cpu`/`gpu` each: those already up with the same resources, plus
        new ones (workers with other resources are stopped first, to free their share)."""
        if self.key != (cpu, gpu):
            self.release()
            self.key = (cpu, gpu)
        while len(self.actors) < n:
            self.actors.append(self._new())
        return self.actors[:n]

    def _new(self) -> Any:
        cpu, gpu = self.key or (1.0, 0.0)
        return _worker_class().options(num_cpus=cpu, num_gpus=gpu, max_restarts=0,
                                       max_concurrency=1).remote(cpu)

    def replace(self, actor: Any) -> Any:
        """A new worker in place of `actor` (whose process died)."""
        new = self._new()
        try:
            self.actors[self.actors.index(actor)] = new
        except ValueError:
            self.actors.append(new)
        _kill(actor)
        return new

    def release(self) -> None:
        """Stop the workers (if Ray is still up) and forget them."""
        actors, self.actors, self.key = self.actors, [], None
        if not actors:
            return
        # lazy: Ray only where a Ray session runs (--local, dry runs load none)
        import ray

        if ray.is_initialized():
            for a in actors:
                _kill(a)

    def pids(self) -> list[int]:
        """Process ids of the workers (tests: the same processes serve two sweeps)."""
        # lazy: Ray only where a Ray session runs (--local, dry runs load none)
        import ray

        return ray.get([a.pid.remote() for a in self.actors])


def _kill(actor: Any) -> None:
    # lazy: Ray only where a Ray session runs (--local, dry runs load none)
    import ray

    try:
        ray.kill(actor)
    except Exception:  # noqa: BLE001 - already gone
        pass
