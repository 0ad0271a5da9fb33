"""Warm trial workers on an embedded local Ray: a grid sweep without Ray Tune's per-sweep costs.

A Ray Tune experiment starts its own trial actors and stops them when it ends, so every sweep
paid for fresh worker processes that import torch, Ray Tune and grokray (3-4 CPU s each;
3.5-4 s to the first trial on the shared 2-core box at load 1.5, 7-9 s at load 4-5, 18-24 s at
load 20+) and for Tune's set-up and clean-up (benchmarks/README.md, fifth session).
On the embedded local Ray (`grokray sweep` and `grokray reproduce` without --address) a grid
sweep runs instead on a pool of plain Ray actors, one per concurrent slot, each holding the
trial's resources (`cpu`, `gpu`). They are created once per Ray session and, inside one
`grokray reproduce`, serve every sweep (`RayBackend(keep_warm=True)`); `release` stops them.
Searches (Optuna) and joined clusters (--address: autoscaling, nodes that come and go) stay on
Ray Tune.

The contract is the backend's: `sink.started` when a batch goes to a worker, `sink.finished`
once per config; an exception in a trial is a failed outcome (`execute`); a worker whose process
dies is replaced and its batch runs again: a batch of several tiny configs as one-config batches
(which of them killed the worker is unknown; the others must not fail with it), a single config
up to `retries` times, after which it comes back failed ("lost after N tries: ..."); an error
Ray raises before the trial function runs (it cannot be unpickled, ...) fails the batch at once.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

from grokray.config import TrialConfig

_POOL: dict[str, Any] = {"session": None, "key": None, "actors": []}
"""the warm workers of this process: the Ray session they live in, their (cpu, gpu), handles"""


def _session() -> str:
    import ray

    return ray.get_runtime_context().get_session_name()


def _worker_class() -> Any:
    """The Ray actor class (defined on first use: this module imports Ray lazily)."""
    cls = globals().get("_Worker")
    if cls is not None:
        return cls
    import ray

    @ray.remote
    class _Worker:
        """One warm process: imports the trainer once, then runs batches of configs."""

        def __init__(self) -> None:
            import grokray.trainer  # noqa: F401 - warm: the first trial does not pay for it

        def pid(self) -> int:
            import os

            return os.getpid()

        def run(self, configs: list[dict[str, Any]], trial_fn: Any) -> bytes:
            import ray

            from grokray.sweep.outcome import default_trial_fn, execute

            node = ray.get_runtime_context().get_node_id()
            outs = []
            for d in configs:
                out = execute(TrialConfig.from_dict(d), trial_fn or default_trial_fn())
                out.node_id = node
                if out.traceback:
                    print(out.traceback, flush=True)  # lands in Ray's worker log
                outs.append(out)
            return pickle.dumps(outs)

    globals()["_Worker"] = _Worker
    return _Worker


def workers(n: int, cpu: float, gpu: float) -> list[Any]:
    """`n` warm workers with `cpu`/`gpu` each: those of this session with the same resources,
    plus new ones (workers with other resources are stopped first, to free their share)."""
    session, key = _session(), (cpu, gpu)
    if _POOL["session"] != session or _POOL["key"] != key:
        release()
        _POOL.update(session=session, key=key, actors=[])
    actors: list[Any] = _POOL["actors"]
    cls = _worker_class()
    while len(actors) < n:
        actors.append(cls.options(num_cpus=cpu, num_gpus=gpu, max_restarts=0,
                                  max_concurrency=1).remote())
    return actors[:n]


def replace(actor: Any) -> Any:
    """A new worker in place of `actor` (whose process died)."""
    import ray

    actors: list[Any] = _POOL["actors"]
    cpu, gpu = _POOL["key"]
    new = _worker_class().options(num_cpus=cpu, num_gpus=gpu, max_restarts=0,
                                  max_concurrency=1).remote()
    try:
        actors[actors.index(actor)] = new
    except ValueError:
        actors.append(new)
    try:
        ray.kill(actor)
    except Exception:  # noqa: BLE001 - already gone
        pass
    return new


def release() -> None:
    """Stop the warm workers (if Ray is still up) and forget them."""
    actors, _POOL["actors"] = _POOL["actors"], []
    _POOL.update(session=None, key=None)
    if not actors:
        return
    import ray

    if not ray.is_initialized():
        return
    for a in actors:
        try:
            ray.kill(a)
        except Exception:  # noqa: BLE001 - already gone
            pass


def warm_pids() -> list[int]:
    """Process ids of the warm workers (tests: the same processes serve two sweeps)."""
    import ray

    return ray.get([a.pid.remote() for a in _POOL["actors"]])


def run_batches(configs: Sequence[TrialConfig], batches: Sequence[Sequence[int]], sink: Any,
                *, trial_fn: Any, cpu: float, gpu: float, slots: int, retries: int) -> None:
    """Run every batch (indices into `configs`), in the order given, on at most `slots` warm
    workers, one batch per worker at a time; report to `sink` as the backend's contract says
    (module docstring)."""
    import ray
    from ray import exceptions as rx

    from grokray.sweep.outcome import Outcome, one_line

    batches = [list(b) for b in batches]  # grows: a batch whose worker died runs split
    dicts = [c.to_dict() for c in configs]
    fn_ref = ray.put(trial_fn)
    todo = list(range(len(batches)))[::-1]  # a stack: pop() takes the first batch
    tries = [0] * len(batches)
    running: dict[Any, tuple[int, Any]] = {}  # object ref -> (batch, worker)

    def submit(b: int, actor: Any) -> None:
        for i in batches[b]:
            sink.started(configs[i])
        running[actor.run.remote([dicts[i] for i in batches[b]], fn_ref)] = (b, actor)

    for actor in workers(min(slots, len(batches)), cpu, gpu):
        if todo:
            submit(todo.pop(), actor)
    while running:
        done, _ = ray.wait(list(running), num_returns=1)
        ref = done[0]
        b, actor = running.pop(ref)
        try:
            outs = pickle.loads(ray.get(ref))
        except (rx.RayActorError, rx.WorkerCrashedError, rx.ObjectLostError,
                rx.OwnerDiedError) as exc:  # the worker's process died: a fresh one
            actor = replace(actor)
            if len(batches[b]) > 1:  # which config killed it is unknown: each alone, untried
                for i in reversed(batches[b]):
                    batches.append([i])
                    tries.append(0)
                    todo.append(len(batches) - 1)
            else:
                tries[b] += 1
                if tries[b] <= retries:
                    todo.append(b)  # next in line
                else:
                    for i in batches[b]:
                        sink.finished(Outcome(configs[i], None, error=one_line(
                            f"lost after {tries[b]} tries: {one_line(exc)}"), exception=exc))
        except rx.RayError as exc:  # before the trial ran (unpicklable trial function, ...)
            for i in batches[b]:
                sink.finished(Outcome(configs[i], None, error=one_line(exc), exception=exc))
        else:
            for out in outs:
                sink.finished(out)
        if todo:
            submit(todo.pop(), actor)
