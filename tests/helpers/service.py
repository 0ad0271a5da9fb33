"""The sweep service for its tests: in this process on a thread (`in_thread`, real HTTP on a
loopback port), or as a `grokray serve` process (`Process`, to be SIGKILLed); the spec texts its
tests submit (`queue_spec`, `local_spec`, `ray_spec`); and `wait_for`, a wait on a state."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

from grokray.service.api import Settings, make_app
from grokray.service.state import State

QUEUE_SPEC = """name: {name}
out: results
config: {{group: Z5, arch: mlp, train_frac: 0.5, device: cpu}}
axes: {{optim.lr: [0.001, 0.002]}}
seeds: 2
steps: 40
eval_every: 20
resources: {{cpu: 1, gpu: 0}}
"""

LOCAL_SPEC = """\
name: {name}
out: {out}
config: {{group: Z5, op: add, eval_every: 10, dtype: float64, device: cpu,
          model: {{hidden: 8, d: 4}}}}
axes:
  optim.weight_decay: {wds}
seeds: {seeds}
steps: {steps}
resources: {{cpu: 1}}
"""

RAY_SPEC = """\
name: {name}
out: {out}
config: {{group: Z23, op: add, eval_every: 100, dtype: float64, device: cpu,
          checkpoint_every: {ck}, model: {{hidden: 32, d: 16}}}}
axes:
  optim.weight_decay: {wds}
seeds: 1
steps: {steps}
resources: {{cpu: 1}}
retries: 1
"""

RAY_WAIT_S = 1500.0
"""the longest a test waits for a state of sweeps the service runs on Ray (a loaded 2-core
machine)"""


def queue_spec(name: str = "tiny") -> str:
    """A spec the queue tests submit (nothing trains it): two learning rates x two seeds of a
    small MLP on Z5, 40 steps."""
    return QUEUE_SPEC.format(name=name)


def local_spec(name: str, out: object, wds=(0.5, 1.0), seeds: int = 1, steps: int = 20) -> str:
    """A spec that trains in seconds in this process (`grokray sweep --local`): weight decays
    `wds` of a tiny float64 MLP on Z5 addition, writing into `out`."""
    return LOCAL_SPEC.format(name=name, out=out, wds=list(wds), seeds=seeds, steps=steps)


def ray_spec(name: str, wds, steps: int, ck: float = 0, out: object = "unused") -> str:
    """A spec the service's runner trains on Ray: weight decays `wds` of a float64 MLP on Z23
    addition, one seed, a checkpoint every `ck` s (0: none), writing into `out` (the text
    submitted to the service leaves it "unused": the service sets a sweep's dir)."""
    return RAY_SPEC.format(name=name, out=out, wds=list(wds), steps=steps, ck=ck)


@contextlib.contextmanager
def in_thread(db: str, store: str, **settings) -> Iterator[tuple[str, State]]:
    """(the service's URL, its State) while an API server over `db` answers on 127.0.0.1."""
    from aiohttp import web

    st = State.open(db)
    app = make_app(st, Settings(store, **settings))
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict = {}

    async def start() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        box["runner"] = runner
        box["port"] = site._server.sockets[0].getsockname()[1]
        ready.set()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        loop.run_forever()

    t = threading.Thread(target=run, name="service-under-test", daemon=True)
    t.start()
    assert ready.wait(30), "the test service did not start"
    try:
        yield f"http://127.0.0.1:{box['port']}", st
    finally:
        asyncio.run_coroutine_threadsafe(box["runner"].cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        t.join(30)
        st.close()


def call(url: str, method: str = "GET", token: str | None = None, body: bytes | None = None,
         headers: dict | None = None, timeout: float = 60) -> tuple[int, dict]:
    """(status, JSON) of one raw HTTP request (errors included)."""
    hdrs = dict(headers or {})
    if token is not None:
        hdrs["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=body, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


class Process:
    """`grokray serve --no-runner` as a process on a free port (`url`; a restart listens on
    the same one); `kill()` SIGKILLs it."""

    def __init__(self, db: str, store: str, log: str, extra: tuple[str, ...] = ()) -> None:
        self.db, self.store, self.log, self.extra = db, store, log, extra
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.port = 0

    def start(self, timeout: float = 120) -> str:
        out = open(self.log, "a")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "grokray.cli", "serve", "--db", self.db, "--store",
             self.store, "--port", str(self.port), "--no-runner", *self.extra],
            stdout=subprocess.PIPE, stderr=out, text=True, env={**os.environ})
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                self.url = m.group(1)
                self.port = int(self.url.rsplit(":", 1)[1])
                return self.url
            if self.proc.poll() is not None:
                break
        raise AssertionError(f"grokray serve did not start: {line!r}; log {self.log}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None:
            terminate(self.proc, 30)


def terminate(proc: subprocess.Popen, wait_s: float) -> None:
    """SIGTERM (a graceful stop), then SIGKILL when `proc` has not ended in `wait_s` s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


def wait_for(what: str, cond, timeout: float = RAY_WAIT_S) -> None:  # noqa: ANN001 - a callable
    """Poll `cond()` until it holds (AssertionError naming `what` after `timeout` s): a test
    waits on a state the service exposes (a sweep's state, an event, a file), not on a time."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)

