"""The Ray actor that carries checkpoints between the trials and the driver, at the edge: a
small actor on the driver's node (`grokray-checkpoints`, no CPU) that trials hand their
checkpoints to and ask for the chain to restore, the driver's pump thread that writes what it
holds (`RayChannel`), and the trials' hook (`worker_hook`, an `ActorHook`).

Why an actor: a trial runs in a Ray worker anywhere in the cluster, while storage is the
driver's (a local `--out` on a `ray up` head, an object store whose credentials only the driver
has). The worker's call returns only when the trial ends, so checkpoints cannot ride on it. The
actor lives on the driver's node (a lost worker node does not take it along), is found by name
in the driver's Ray namespace, and holds each running trial's newest chain in memory: a trial
retried after its worker was lost is restored from it without a read of storage.

A running trial polls the actor about once a second (`asked`, without waiting for the answer),
which is also its heartbeat; the driver's `request` raises a generation number, and a trial that
sees it checkpoints at its next step. `wait` returns when every trial that was running has
answered (a checkpoint taken after it saw the request), stopped, or fell silent.

Ray is imported inside the functions that use it (Ray kept at the edge): `--local` and a dry run
load this module without Ray.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from grokray.checkpoint.format import header
from grokray.checkpoint.hook import Chain
from grokray.checkpoint.memory import Held, MemoryStore
from grokray.sweep.checkpoint_store import Channel, Say, _stderr, channel, set_channel

ACTOR_NAME = "grokray-checkpoints"
POLL_S = 1.0
"""how often a trial asks the actor whether the driver wants a checkpoint (seconds of wall
time)"""
PUMP_S = 0.5
"""how often the driver's pump takes what the actor holds"""
SILENT_S = 10.0
"""a trial not heard from for this long is not waited for (its worker is gone)"""


@dataclass
class RunningTrial:
    """A trial running with checkpoints, as the actor sees it."""

    config_hash: str
    step: int | None
    """the step of its last checkpoint (None: none yet in this run)"""
    trained_s: float
    """seconds since it started in its worker"""
    since_checkpoint_s: float
    """seconds since its last checkpoint (or its start)"""
    checkpoint_every: float
    answered: int
    """the newest request its checkpoints answered"""
    silent_s: float
    """seconds since it was last heard from"""
    node_id: str | None = None
    """the Ray node it runs on"""
    pid: int | None = None
    """the worker process it runs in (on that node)"""


def _actor_class() -> Any:
    cls = globals().get("_Box")
    if cls is not None:
        return cls
    import ray

    @ray.remote(num_cpus=0, max_concurrency=1)
    class _Box:
        """The checkpoints in flight of this driver's sweep (module docstring)."""

        def __init__(self) -> None:
            self.memory = MemoryStore()
            self.outbox: list[tuple[int, str, int, bytes, bytes]] = []
            self.sweep = 0
            """the sweep served (a checkpoint of an earlier one is dropped)"""
            self.landed: set[str] = set()
            self.asking = 0
            self.running: dict[str, dict[str, Any]] = {}

        def reset(self, sweep: int, chains: dict[str, tuple[bytes, list[bytes]]]) -> None:
            self.memory, self.outbox, self.landed = MemoryStore(), [], set()
            self.running, self.sweep = {}, sweep
            for h, (state, deltas) in chains.items():
                held = Held(state=(int(header(state)["step"]), state))
                held.deltas = {int(header(d)["step"]): d for d in deltas}
                self.memory.held[h] = held

        def begin(self, h: str, every: float, node: str | None = None, pid: int | None = None
                  ) -> tuple[int, int, tuple[bytes, list[bytes]] | None]:
            now = time.monotonic()
            self.running[h] = {"t0": now, "t_ckpt": now, "seen": now, "step": None,
                               "every": every, "answered": self.asking, "node": node,
                               "pid": pid}
            chain = self.memory.chain(h)
            return self.sweep, self.asking, (None if chain is None else
                                              (chain.state, chain.deltas))

        def put(self, sweep: int, h: str, step: int, delta: bytes, state: bytes,
                seen: int) -> None:
            if sweep != self.sweep or h in self.landed:
                return
            self.memory.put(h, step, delta, state)
            self.outbox.append((sweep, h, step, delta, state))
            r = self.running.get(h)
            if r is not None:
                now = time.monotonic()
                r.update(t_ckpt=now, seen=now, step=step, answered=max(r["answered"], seen))

        def poll(self, hashes: list[str]) -> int:
            now = time.monotonic()
            for h in hashes:
                if h in self.running:
                    self.running[h]["seen"] = now
            return self.asking

        def done(self, h: str) -> None:
            self.running.pop(h, None)

        def take(self) -> list[tuple[int, str, int, bytes, bytes]]:
            out, self.outbox = self.outbox, []
            return out

        def land(self, h: str) -> None:
            self.landed.add(h)
            self.memory.drop(h)
            self.running.pop(h, None)

        def request(self) -> int:
            self.asking += 1
            return self.asking

        def status(self) -> list[RunningTrial]:
            now = time.monotonic()
            return [RunningTrial(h, r["step"], now - r["t0"], now - r["t_ckpt"], r["every"],
                                 r["answered"], now - r["seen"], r["node"], r["pid"])
                    for h, r in self.running.items()]

    globals()["_Box"] = _Box
    return _Box


class RayChannel(Channel):
    """The driver's channel on Ray: the actor, and the pump thread that writes what it holds."""

    def __init__(self) -> None:
        super().__init__()
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = ray.get_runtime_context().get_node_id()
        self.box = _actor_class().options(
            name=ACTOR_NAME, scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False),
        ).remote()
        self.sweep = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def open(self, sweep_dir: str, configs: Any, say: Say = _stderr) -> int:
        import ray

        n = super().open(sweep_dir, configs, say)
        self.sweep = secrets.randbits(62)  # a late checkpoint of an earlier sweep is dropped
        chains = {h: (held.state[1], list(held.deltas.values()))
                  for h, held in self.memory.held.items() if held.state is not None}
        ray.get(self.box.reset.remote(self.sweep, chains))
        self.memory = MemoryStore()  # the actor holds them now
        self._stop.clear()
        self._thread = threading.Thread(target=self._pump_loop, name="grokray-checkpoints",
                                        daemon=True)
        self._thread.start()
        return n

    def _pump_loop(self) -> None:
        while not self._stop.wait(PUMP_S):
            try:
                self.pump()
            except Exception as exc:  # noqa: BLE001 - Ray gone: the sweep is ending
                self.error = exc
                return

    def pump(self) -> int:
        """Write what the actor holds; how many checkpoints."""
        import ray

        items = ray.get(self.box.take.remote())
        written = []
        with self.lock:
            for sweep, h, step, delta, state in items:
                if sweep == self.sweep and h not in self.landed and self.files is not None:
                    self.files.write(h, step, delta, state)
                    written.append((h, step))
        self._tell_stored(written)
        return len(items)

    def land(self, config_hash: str) -> None:
        with self.lock:
            self.landed.add(config_hash)
            try:
                self.box.land.remote(config_hash)
            except Exception:  # noqa: BLE001 - Ray is going away
                pass
            if self.files is not None:
                self.files.remove(config_hash)

    def close(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            try:
                self.pump()  # what came in since the last round
            except Exception:  # noqa: BLE001 - Ray is gone
                pass
        super().close()

    def request(self) -> int:
        import ray

        return int(ray.get(self.box.request.remote()))

    def running(self) -> list[RunningTrial]:
        import ray

        return list(ray.get(self.box.status.remote()))

    def wait(self, gen: int, timeout_s: float) -> int:
        """Until every trial running has answered request `gen` (or stopped, or fell silent),
        and what they handed over is written; returns how many did not answer (in time, or at
        all: fell silent)."""
        deadline = time.monotonic() + timeout_s
        while True:
            pending = [r for r in self.running() if r.answered < gen]
            if all(r.silent_s >= SILENT_S for r in pending) or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        self.pump()
        return len(pending)  # a silent one did not answer either


class ActorHook:
    """A trial's hook (grokray.checkpoint.Hook) on a Ray worker: the actor of its driver."""

    def __init__(self, box: Any) -> None:
        self.box = box
        self.sweep = 0
        self.seen = 0
        """the newest request this worker has seen"""
        self.answered = 0
        self.hashes: list[str] = []
        self._poll: Any = None
        self._t_poll = 0.0

    def chain(self, config_hash: str, every_s: float = 0.0) -> Chain | None:
        import ray

        node = ray.get_runtime_context().get_node_id()
        self.sweep, asking, chain = ray.get(self.box.begin.remote(config_hash, every_s, node,
                                                                  os.getpid()))
        self.answered = self.seen = max(self.seen, asking)  # earlier requests are not ours
        self.hashes.append(config_hash)
        return None if chain is None else Chain(chain[0], list(chain[1]))

    def save(self, config_hash: str, step: int, delta: bytes, state: bytes) -> None:
        import ray

        ray.get(self.box.put.remote(self.sweep, config_hash, step, delta, state, self.seen))
        self.answered = self.seen

    def asked(self) -> bool:
        now = time.monotonic()
        if now - self._t_poll >= POLL_S:  # Ray is asked at most once a second, never waited on
            import ray

            if self._poll is not None:
                ready, _ = ray.wait([self._poll], timeout=0)
                if ready:
                    self._hear(lambda: ray.get(ready[0]))
                    self._poll = None
            if self._poll is None:
                self._poll = self.box.poll.remote(list(self.hashes))
            self._t_poll = now
        return self.seen > self.answered

    def asked_at_end(self) -> bool:
        import ray

        self._hear(lambda: ray.get(self.box.poll.remote(list(self.hashes)), timeout=10))
        return self.seen > self.answered

    def _hear(self, answer: Callable[[], Any]) -> None:
        """Take the driver's newest request from a poll's `answer()` (a call that returns it)."""
        try:
            self.seen = max(self.seen, int(answer()))
        except Exception:  # noqa: BLE001 - the driver is gone: nothing to answer
            pass

    def done(self, config_hash: str) -> None:
        if config_hash in self.hashes:
            self.hashes.remove(config_hash)
        try:
            self.box.done.remote(config_hash)
        except Exception:  # noqa: BLE001
            pass


def worker_hook() -> ActorHook | None:
    """The hook of a trial running in a Ray worker of a driver that serves checkpoints (None:
    its driver has no checkpoint actor, or this process is connected to no Ray, where asking
    Ray for the actor would start a local Ray only to find none)."""
    import ray

    if not ray.is_initialized():
        return None
    try:
        return ActorHook(ray.get_actor(ACTOR_NAME))
    except ValueError:
        return None


_RAY: tuple[tuple[str, str], RayChannel] | None = None
"""the driver's channel on the Ray it is connected to (its actor lives as long as this handle)"""


def serve(backend: Any, sweep_dir: str, configs: Iterable[Any], say: Say = _stderr) -> Channel:
    """The driver's channel, opened for the sweep in `sweep_dir` (`Channel.open`): on Ray (an
    executor with a session) the actor's, made once per Ray connection (`grokray reproduce`'s
    sweeps share it); else this process's own."""
    global _RAY
    session = getattr(backend, "session", None)
    ch = channel()
    if session is not None:
        import ray

        ctx = ray.get_runtime_context()
        key = (ctx.get_node_id(), ctx.get_job_id())  # this driver on this Ray
        if _RAY is None or _RAY[0] != key:
            _RAY = (key, RayChannel())
        ch = session.checkpoints = _RAY[1]
    elif ch is None or type(ch) is not Channel:
        ch = Channel()
    set_channel(ch)
    ch.open(sweep_dir, configs, say)
    return ch
