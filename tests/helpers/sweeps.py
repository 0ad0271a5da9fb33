"""Shared bits of the sweep tests: a tiny spec, synthetic trial functions, the Ray fixtures, a
Recorder sink, a sweep's rows against an uncut run, the checkpoint channel's running trials, the
checkpoints the driver-side store wrote (`StoredCheckpoints`) and a helper thread whose
exception reaches the test. A test module imports what it uses (`from tests.helpers import
sweeps`; a fixture by name: `from tests.helpers.sweeps import ray_session`)."""

from __future__ import annotations

import os
import sys
import threading
import time
from datetime import datetime, timezone

import pandas as pd
import pytest

from grokray.config import TrialConfig
from grokray.result import SeedResult, TrialResult
from tests.helpers.specs import TINY, tiny_spec  # noqa: F401 - one import for the sweep tests


def by_value(*modules: str) -> None:
    """tests.helpers (and the named modules, e.g. a test module's own `__name__`) travel to
    Ray's workers by value: the workers cannot import tests/."""
    from ray import cloudpickle

    for name in ("tests.helpers", *modules):
        cloudpickle.register_pickle_by_value(sys.modules[name])


@pytest.fixture(scope="module")
def ray_session():
    """An embedded Ray of the test module's own (never another's), with tests.helpers' trial
    functions pickled by value so its workers need not import tests/."""
    import ray

    by_value()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def cluster():
    """A `ray.cluster_utils.Cluster` the driver is connected to: a head without CPUs (with a
    custom resource `head`, for what must stay on it when a worker node goes) and two worker
    nodes of one CPU each, health-checked every 0.5 s (a removed node is dead within about
    2 s); tests.helpers' trial functions pickled by value. Yields (cluster, worker nodes).
    A test module uses it by importing it (`from tests.helpers.sweeps import cluster`)."""
    import ray
    from ray.cluster_utils import Cluster

    by_value()
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "resources": {"head": 1},
        "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 4},
    })
    workers = [c.add_node(num_cpus=1) for _ in range(2)]
    ray.init(address=c.address, log_to_driver=False)
    c.wait_for_nodes()
    yield c, workers
    ray.shutdown()
    c.shutdown()


def synthetic(cfg: TrialConfig, sleep: float = 0.0) -> TrialResult:
    """A TrialResult without training (grokked at step 10); raises when group is S3."""
    if cfg.group == "S3":
        raise RuntimeError("boom: S3 is cursed")
    time.sleep(sleep)
    now = datetime.now(timezone.utc)
    curves = pd.DataFrame({"seed": list(cfg.seeds), "step": 10, "train_loss": 0.1,
                           "train_acc": 1.0, "val_loss": 0.1, "val_acc": 1.0})
    seeds = [SeedResult(seed=s, data_seed=s, status="grokked", grok_step=10, steps_run=10,
                        final={"final_val_acc": 1.0}) for s in cfg.seeds]
    return TrialResult(config=cfg, n_params=1, device="cpu", wall_s=sleep, started_at=now,
                       finished_at=now, seeds=seeds, curves=curves, group_order=1)


def slow_synthetic(cfg: TrialConfig) -> TrialResult:
    """`synthetic` that never raises and takes a second (trials in flight when a node goes)."""
    result = synthetic(cfg.with_overrides({"group": "Z3"}) if cfg.group == "S3" else cfg,
                       sleep=1.0)
    result.config = cfg
    return result


def dies_on_z4(cfg: TrialConfig) -> TrialResult:
    """`synthetic`, except that a Z4 config kills its worker process, every time."""
    if cfg.group == "Z4":
        os._exit(1)
    return synthetic(cfg)


class Recorder:
    """A sink that keeps what an executor reports."""

    def __init__(self):
        self.began, self.outcomes = [], []

    def started(self, config):  # noqa: D102 - the Sink protocol
        self.began.append(config)

    def finished(self, outcome):  # noqa: D102
        self.outcomes.append(outcome)


def assert_only_the_culprit_failed(outcomes, innocents, culprit, tries: int) -> None:
    """Each config finished exactly once; the innocents grokked (every seed), the culprit
    failed as lost after `tries` tries."""
    by = {o.config.config_hash(): o for o in outcomes}
    assert len(outcomes) == len(innocents) + 1 and len(by) == len(outcomes)
    for c in innocents:
        assert by[c.config_hash()].error is None, by[c.config_hash()].error
        assert [s.status for s in by[c.config_hash()].result.seeds] == ["grokked"] * len(c.seeds)
    lost = by[culprit.config_hash()]
    assert lost.result is None and lost.error.startswith(f"lost after {tries} tries: "), \
        lost.error


def read_rows(sweep_dir: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The sweep's trials and curves tables, every file of each."""
    t = pd.concat(pd.read_parquet(p.path) for p in os.scandir(f"{sweep_dir}/trials"))
    c = pd.concat(pd.read_parquet(p.path) for p in os.scandir(f"{sweep_dir}/curves"))
    return t.reset_index(drop=True), c.reset_index(drop=True)


VOLATILE = ["run_id", "wall_s", "started_at", "finished_at", "checkpoint_step", "hostname",
            "ray_node_id", "ray_version", "cuda_visible_devices", "sweep"]
"""trials columns that differ between two runs of one trial (times, ids, where it ran)"""


def assert_rows_equal_uninterrupted(sweep_dir: str, configs, rtol: float = 1e-12,
                                    cpu: float = 1.0) -> pd.DataFrame:
    """One row per (config, seed); every trials column but the volatile ones and every curve
    value equal to each config's trial run here, never cut (float64: to `rtol`, atol 1e-12).
    Returns the trials table. The reference runs as a sweep's trial holding `cpu` CPUs does
    (`calls.run_call`, on the torch threads grokray/threads.py gives it), without checkpoints:
    float64 sums taken on another thread count differ in the last bits, and a few thousand
    steps can grow that past 1e-12."""
    from grokray.schema import curve_frame, trial_frame
    from grokray.sweep.executors.calls import WorkerCall, run_call
    from grokray.trial import run_trial

    t, c = read_rows(sweep_dir)
    assert t.groupby(["config_hash", "seed"]).size().eq(1).all()
    assert len(t) == sum(len(cfg.seeds) for cfg in configs)
    for cfg in configs:
        h = cfg.config_hash()
        (out,) = run_call(WorkerCall([cfg]), run_trial, node="local", cpu=cpu)
        assert out.error is None, out.traceback
        ref = out.result
        t0 = trial_frame(ref, "s", "r").drop(columns=VOLATILE, errors="ignore")
        t1 = t[t["config_hash"] == h].drop(columns=VOLATILE, errors="ignore")
        t1 = t1.sort_values("seed").reset_index(drop=True)
        pd.testing.assert_frame_equal(t1[t0.columns], t0, check_exact=False, rtol=rtol,
                                      atol=1e-12, check_dtype=False)
        key = ["seed", "step"]
        c0 = curve_frame(ref, "s", "r").drop(columns=["run_id", "sweep"]).sort_values(key)
        c1 = c[c["config_hash"] == h].sort_values(key)
        pd.testing.assert_frame_equal(c1[c0.columns].reset_index(drop=True),
                                      c0.reset_index(drop=True), check_exact=False, rtol=rtol,
                                      atol=1e-12, check_dtype=False)
    return t


def checkpoint_steps(sweep_dir: str, config_hash: str) -> list[int]:
    """The steps of a trial's state checkpoints in the sweep's storage."""
    from grokray.sweep.checkpoint_store import Files

    return Files(sweep_dir).state_steps(config_hash)


class StoredCheckpoints:
    """A display for `run_plan` that keeps, per trial, the step of the checkpoint the
    driver-side store wrote last (its `stored` hook, through the writer: what the sweep
    driver sends as CheckpointStored), which is the newest in storage; `wait` waits for it."""

    def __init__(self) -> None:
        self.steps: dict[str, int] = {}
        self._cond = threading.Condition()

    def started(self, config) -> None:  # noqa: D102 - the writer's display
        pass

    def finished(self, outcome, result) -> None:  # noqa: D102
        pass

    def checkpoint_stored(self, config_hash: str, step: int) -> None:  # noqa: D102
        with self._cond:
            self.steps[config_hash] = step
            self._cond.notify_all()

    def wait(self, want: dict[str, int], timeout: float) -> dict[str, int] | None:
        """The stored step of each trial of `want` once each is at least its `want`; None when
        `timeout` s pass first."""
        with self._cond:
            if not self._cond.wait_for(lambda: all(self.steps.get(h, -1) >= s
                                                   for h, s in want.items()), timeout):
                return None
            return {h: self.steps[h] for h in want}


def running_trials() -> list:
    """The trials the driver's checkpoint channel sees running (`RunningTrial`s); none before a
    sweep opens its channel, nor between sweeps (the channel of one that ended can be gone)."""
    from grokray.sweep import checkpoint_store

    ch = checkpoint_store.channel()
    try:
        return ch.running() if ch is not None and ch.files is not None else []
    except Exception:  # noqa: BLE001 - between sweeps: the caller looks again
        return []


def wait_for_running(ready, stop: threading.Event | None = None, timeout: float = 180.0,
                     poll_s: float = 0.02) -> list:
    """The checkpoint channel's running trials once `ready(running)` holds for them (looked at
    every `poll_s`: the state the driver's checkpoint actor exposes, not a time). Raises
    AssertionError naming what it last saw when `timeout` passes or `stop` is set first (the
    test's sweep ended)."""
    deadline = time.monotonic() + timeout
    running: list = []
    while time.monotonic() < deadline and not (stop is not None and stop.is_set()):
        running = running_trials()
        if ready(running):
            return running
        time.sleep(poll_s)
    raise AssertionError(f"the running trials never got there; last seen: {running}")


def in_thread(target, seen: dict) -> threading.Thread:
    """`target(stop)` in a daemon thread; an exception it raises goes to seen["error"] (which
    the test asserts on) instead of ending the thread unseen. The test sets the thread's `stop`
    event when its sweep has ended, then joins it (`done`)."""
    stop = threading.Event()

    def run():
        try:
            target(stop)
        except BaseException as exc:  # noqa: BLE001 - reported by the test's assertion
            seen["error"] = f"{type(exc).__name__}: {exc}"

    th = threading.Thread(target=run, daemon=True)
    th.stop = stop
    th.start()
    return th


def done(th: threading.Thread) -> None:
    """The sweep has ended: stop the thread's looking and wait for it."""
    th.stop.set()
    th.join(timeout=30)
    assert not th.is_alive()
