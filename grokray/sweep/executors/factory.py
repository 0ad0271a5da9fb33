"""`make_executor`: which of the three executors runs a sweep. It lives outside the interface
(`base.py`), so that the interface never imports the executors that implement it.

    LocalExecutor   in this process, one config after another (--local, tests)
    WarmExecutor    a grid on the warm workers of an embedded local Ray
    TuneExecutor    a search, or any sweep on a joined cluster, on Ray Tune
"""

from __future__ import annotations

import os

from grokray.reader import join_uri
from grokray.sweep.executors.base import Executor
from grokray.sweep.executors.local import LocalExecutor
from grokray.sweep.executors.tune import TuneExecutor
from grokray.sweep.executors.warm import WarmExecutor
from grokray.sweep.session import RaySession
from grokray.sweep.spec_model import SweepSpec


def make_executor(spec: SweepSpec, run_id: str, session: RaySession | None,
                  pack: int | None = 1) -> Executor:
    """The executor of `spec` in this run: in process without a `session`; a search or a joined
    cluster on Ray Tune (its experiment state under `<sweep dir>/_ray`); a grid on an embedded
    local Ray on the session's warm workers. `pack` (configs per pack, 1: off, None: auto) packs
    a grid in process, on warm workers and on Ray Tune (a Tune trial is one pack); a search runs
    one config per trial."""
    if session is None:
        return LocalExecutor(pack=pack, cpu=spec.cpu)
    res = dict(cpu=spec.cpu, gpu=spec.gpu, concurrency=spec.concurrency, retries=spec.retries)
    if spec.search is None and not session.joined:
        return WarmExecutor(session, **res, pack=pack)
    storage = join_uri(spec.sweep_dir, "_ray")
    if "://" not in storage:
        storage = os.path.abspath(storage)
    return TuneExecutor(session, name=f"{spec.name}-{run_id}", storage_path=storage, **res,
                        pack=pack)
