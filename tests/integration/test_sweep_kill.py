"""SIGKILL of the driver mid-sweep, then a rerun: exactly one row per (config, seed), no corrupt
file, nothing lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.helpers import sweeps as helpers

pytest.importorskip("ray")


pytestmark = pytest.mark.ray  # Ray starts in the child process


def _sweep(spec, **kw):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("RAY_ADDRESS", None)
    cmd = [sys.executable, "-m", "grokray.cli", "sweep", str(spec), "--plain", "--num-cpus", "2"]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, **kw)


def test_sigkill_driver_then_rerun(tmp_path):
    spec = helpers.tiny_spec(tmp_path, groups=("Z5", "Z7", "S3", "D4"), steps=150,
                             concurrency=1)
    trials_dir = tmp_path / "out" / "tiny" / "trials"
    proc = _sweep(spec, start_new_session=True)  # its own process group, to clean up below
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if trials_dir.exists() and any(trials_dir.glob("*.parquet")):
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the sweep ended before it could be killed:\n" + proc.stdout.read()
    os.kill(proc.pid, signal.SIGKILL)  # the driver only
    proc.wait(timeout=30)
    proc.stdout.close()
    time.sleep(1.0)
    try:  # Ray's helper processes of the dead driver that outlived it
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    written = [p for p in trials_dir.glob("*.parquet")]
    assert 1 <= len(written) < 8
    for p in written:  # every file on disk is whole
        pq.read_table(p)

    rerun = _sweep(spec)
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out
    assert "done: " in out and "to run: " in out
    trials = pd.concat(pd.read_parquet(p) for p in trials_dir.glob("*.parquet"))
    assert len(trials) == 4 * 2 * 2
    assert trials.groupby(["config_hash", "seed"]).size().eq(1).all()
    assert not [p for p in trials_dir.iterdir() if p.name.startswith(".")]
    curves_dir = tmp_path / "out" / "tiny" / "curves"
    curve_keys = {p.name for p in curves_dir.glob("*.parquet")}
    assert curve_keys == {p.name for p in trials_dir.glob("*.parquet")}
