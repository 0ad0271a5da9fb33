"""Exactly-once under a crowd: two drivers on one dir, a foreign Ray cluster on the machine,
and Ctrl-C / SIGTERM mid-sweep (exit 130 / 143, a one-line summary, no traceback)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from tests.helpers import sweeps as helpers

ray = pytest.importorskip("ray")


def _sweep(spec, *extra, threads=None, **kw):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("RAY_ADDRESS", None)
    if threads:  # an in-process (--local) driver's torch threads
        env["OMP_NUM_THREADS"] = str(threads)
    cmd = [sys.executable, "-m", "grokray.cli", "sweep", str(spec), "--plain", "--no-summary",
           *extra]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


def _rows(tmp_path) -> pd.DataFrame:
    files = sorted((tmp_path / "out" / "tiny" / "trials").glob("*.parquet"))
    return pd.concat([pd.read_parquet(f) for f in files]) if files else pd.DataFrame()


def _wait_for_a_row(proc, tmp_path, timeout=240):
    trials = tmp_path / "out" / "tiny" / "trials"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if trials.exists() and any(trials.glob("*.parquet")):
            return
        time.sleep(0.05)
    out, err = proc.communicate()
    raise AssertionError(f"the sweep ended before a row was written:\n{out}\n{err}")


def test_two_concurrent_drivers_leave_no_duplicates(tmp_path):
    spec = helpers.tiny_spec(tmp_path, groups=("Z5", "Z7", "S3", "D4"), steps=40,
                             concurrency=1)
    # one torch thread each: two drivers of tiny trials on 2 cores (with 2 threads each they
    # contend, and a trial of 40 steps takes seconds instead of a fraction of one)
    procs = [_sweep(spec, "--local", threads=1) for _ in range(2)]
    results = [p.communicate(timeout=600) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes in ([0, 0], [0, 2]), (codes, results)
    if codes == [0, 2]:
        err = next(e for p, (_, e) in zip(procs, results, strict=True) if p.returncode == 2)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "being written by another grokray process" in lines[0]
        assert "pid " in lines[0] and "host " in lines[0]
    rows = _rows(tmp_path)
    assert len(rows) == 16
    assert not rows.duplicated(["config_hash", "seed"]).any()


class Foreign:
    """A Ray cluster of someone else's on the machine (a head node of 1 CPU), shared by the
    module's tests that need one alive: `start` starts it unless it is up, `shutdown` takes it
    away."""

    def __init__(self):
        self.cluster = None

    def start(self) -> str:
        from ray.cluster_utils import Cluster

        if self.cluster is None:
            self.cluster = Cluster(initialize_head=True, head_node_args={
                "num_cpus": 1, "include_dashboard": False})
        return self.cluster.address

    def shutdown(self) -> None:
        if self.cluster is not None:
            self.cluster.shutdown()
            self.cluster = None


@pytest.fixture(scope="module")
def foreign():
    """One foreign cluster for the module (each start costs a Ray head's start-up): the test
    that takes it away mid-sweep comes after the one that only needs it there."""
    f = Foreign()
    yield f
    f.shutdown()


@pytest.mark.ray
def test_embedded_ray_is_a_new_node_and_the_context_stops_it(foreign):
    from grokray.sweep.session import RaySession

    if ray.is_initialized():
        ray.shutdown()
    address = foreign.start()
    session = RaySession(num_cpus=1)
    with session:
        assert session.started_ray
        nodes = [n for n in ray.nodes() if n["Alive"]]
        assert len(nodes) == 1  # its own node, not the foreign cluster's
        ours = ray.get_runtime_context().gcs_address
        assert ours != address
    assert not ray.is_initialized()  # the context stops what it started


@pytest.mark.ray
def test_a_foreign_cluster_changes_nothing(tmp_path, foreign):
    """A Ray cluster already running on the machine (and going away mid-sweep) is not joined."""
    foreign.start()
    try:
        spec = helpers.tiny_spec(tmp_path, groups=("Z5", "Z7", "Z3", "Z4"), steps=60,
                                 concurrency=1)
        env_addr = os.environ.get("RAY_ADDRESS")
        proc = _sweep(spec, "--num-cpus", "1")
        _wait_for_a_row(proc, tmp_path)
        foreign.shutdown()  # the foreign cluster goes away mid-sweep
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        assert env_addr == os.environ.get("RAY_ADDRESS")
    finally:
        foreign.shutdown()
    rows = _rows(tmp_path)
    assert len(rows) == 16 and (rows["status"] != "failed").all()
    assert not rows.duplicated(["config_hash", "seed"]).any()


@pytest.mark.ray
@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_exit_code_and_resume(tmp_path, sig, code):
    # groups of different orders above 23 at 300 steps: no config is tiny and no two share a
    # shape, so each runs in a call of its own and the signal finds calls not yet started
    # (tiny configs share one call, whose rows all come back together)
    spec = helpers.tiny_spec(tmp_path, groups=("Z24", "Z25", "Z26", "Z27"), steps=300,
                             concurrency=1)
    proc = _sweep(spec, "--num-cpus", "1", start_new_session=True)
    _wait_for_a_row(proc, tmp_path)
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == code, err
    written = len({f for f in (tmp_path / "out" / "tiny" / "trials").glob("*.parquet")})
    assert f"interrupted: {written} trials written; run the same command to resume" in err
    assert "Traceback" not in err + out and "Tuner.restore" not in err + out
    assert "Fatal Python error" not in err
    done = _rows(tmp_path)
    assert 0 < len(done) < 16
    # the same command resumes: only the missing identities run
    proc = _sweep(spec, "--num-cpus", "1")
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    rows = _rows(tmp_path)
    assert len(rows) == 16 and not rows.duplicated(["config_hash", "seed"]).any()

