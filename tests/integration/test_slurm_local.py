"""`grokray slurm` against a real Slurm on this machine (scripts/local_slurm.sh: munge,
slurmctld and slurmd started by hand, each slurmd in its own PID and UTS namespace): a small
sweep (rows once, each row naming the node it ran on) at the same time as a sweep on fake GPUs
(gres on mknod'ed device files), on one node; a sweep longer than its time limit (signalled,
requeued, finished, rows once); a graceful stop and a plain `scancel`, each then run again;
and, with two nodes up (one slurmd per network namespace), a Ray cluster over both.

Slow and opt-in (--runslow); skipped unless the local Slurm answers (`scripts/local_slurm.sh up
[--gpus 2] [--nodes 2]`; SLURM_CONF from $GROKRAY_SLURM_CONF, default
/tmp/grokray-slurm/slurm.conf). .ci/run brings it up where it can (root with apt-get)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import specs

pytestmark = [pytest.mark.slow, pytest.mark.ray]

ROOT = Path(__file__).resolve().parents[2]
CONF = os.environ.get("GROKRAY_SLURM_CONF", "/tmp/grokray-slurm/slurm.conf")
BIN = Path(sys.prefix) / "bin"

SPEC = """\
name: {name}
out: {out}
config: {{group: {group}, arch: mlp, device: cpu, train_frac: 0.5, metrics: {{patience: 0}},
          checkpoint_every: {ck}}}
axes:
  optim.weight_decay: {wds}
seeds: {seeds}
steps: {steps}
eval_every: 100
resources: {{cpu: 1, gpu: {gpu}}}
concurrency: {conc}
retries: 1
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "RAY_"))}
    env["SLURM_CONF"] = CONF
    env["PATH"] = f"{BIN}:{env['PATH']}"
    return env


def _sinfo() -> list[str]:
    try:
        p = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t %G"], env=_env(),
                           capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    return p.stdout.split("\n") if p.returncode == 0 else []


NODES = [ln.split() for ln in _sinfo() if ln.strip()]
if not NODES:
    pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.skip(
        reason=f"no local Slurm ({CONF}): scripts/local_slurm.sh install && up")]


def _gpus() -> int:
    for n in NODES:
        m = re.search(r"gpu:(\d+)", " ".join(n[2:]))
        if m:
            return int(m.group(1))
    return 0


def _spec(tmp: Path, name: str, n: int = 2, seeds: int = 1, steps: int = 200,
          group: str = "Z5", gpu: float = 0, conc: int = 2, ck: float = 600) -> Path:
    wds = [round(0.1 * (i + 1), 1) for i in range(n)]
    return specs.write(tmp, SPEC, f"{name}.yaml", name=name, out=tmp / "results", group=group,
                       wds=wds, seeds=seeds, steps=steps, gpu=gpu, conc=conc, ck=ck)


_TIMING = """
import sys, time, torch
torch.set_num_threads(1)
from grokray.config import TrialConfig
from grokray.trial import run_trial

def timed(steps):
    cfg = TrialConfig.from_dict({"group": "Z13", "arch": "mlp", "device": "cpu",
                                 "train_frac": 0.5, "steps": steps, "eval_every": 100,
                                 "seeds": [0], "metrics": {"patience": 0}})
    t0 = time.perf_counter()
    run_trial(cfg)
    return time.perf_counter() - t0

timed(200)  # the first trial of a process pays for its set-up
print(timed(2000))
"""


def _steps_for(seconds: float) -> int:
    """Steps of a Z13 MLP trial that take about `seconds` in a job on this machine now: timed
    on 2,000 steps as the job's trials run, two at once, each on one torch thread (Ray gives a
    `cpu: 1` worker OMP_NUM_THREADS=1) and at nice 15 (Ray's worker niceness), so that the
    other work on a shared machine slows the timing as it slows the trials. Timed in the test
    process at torch's default of a thread per core, a loaded 2-core machine ran the 2,000
    steps 60-150x slower than a worker did (and the sweep fitted in one allocation); alone at
    normal priority, 2-4x faster than the job's trials (and the sweep took 5-6 allocations)."""
    cmd = ["nice", "-n", "15", sys.executable, "-c", _TIMING]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    took = [float(p.communicate(timeout=600)[0].split()[-1]) for p in procs]
    return max(2000, int(2000 * seconds / (sum(took) / len(took))) // 100 * 100)


def _submit(spec: Path, *args: str) -> str:
    p = subprocess.run([str(BIN / "grokray"), "slurm", str(spec), *args], env=_env(),
                       capture_output=True, text=True, timeout=120, cwd=spec.parent)
    assert p.returncode == 0, p.stdout + p.stderr
    return re.search(r"submitted Slurm job (\d+)", p.stdout).group(1)


def _job(job: str) -> dict[str, str]:
    p = subprocess.run(["scontrol", "show", "job", "-o", job], env=_env(), capture_output=True,
                       text=True, timeout=30)
    return dict(re.findall(r"(\w+)=(\S*)", p.stdout))


def _wait(job: str, timeout: float = 600.0, states=("COMPLETED", "FAILED", "CANCELLED",
                                                     "TIMEOUT", "NODE_FAIL")) -> dict:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        info = _job(job)
        if info.get("JobState") in states:
            return info
        time.sleep(3)
    subprocess.run(["scancel", job], env=_env(), timeout=30)
    raise AssertionError(f"job {job} still {_job(job).get('JobState')} after {timeout:.0f} s")


def _rows(sweep_dir: Path) -> pd.DataFrame:
    files = sorted((sweep_dir / "trials").glob("*.parquet"))
    return pd.concat([pd.read_parquet(f) for f in files]) if files else pd.DataFrame()


def _log(sweep_dir: Path, job: str) -> str:
    return next((sweep_dir / "slurm").glob(f"*-{job}.out")).read_text()


def _assert_rows_once(df: pd.DataFrame, n: int) -> None:
    assert len(df) == n, df[["config_hash", "seed"]]
    assert df.groupby(["config_hash", "seed"]).size().max() == 1
    assert (df["status"] != "failed").all(), df["error"].tolist()


def test_time_limit_requeues_and_finishes(tmp_path):
    """A sweep of about two allocations' work: Slurm signals the batch shell before the limit,
    the driver asks the running trials to checkpoint, writes what finished and exits 143, the
    job requeues itself and the next run finishes the rest, at least one trial resumed from its
    checkpoint at a step > 0; every (config, seed) has one row."""
    # Z13 configs, not tiny, so each is a Tune trial of its own (tiny ones share a call, whose
    # results come back only at its end), sized on this machine now to about 70 s each. An
    # allocation of 3 minutes leaves the driver 35-95 s before the signal (Ray's start, and
    # Slurm's signal comes up to 60 s before the 60 s asked), 70-190 slot-seconds on 2 slots:
    # the 4 trials (280) never fit in one, and fit in two or three. Checkpoints every 20 s: a
    # trial need only reach its first one before the limit, so trials start that the signal cuts
    spec = _spec(tmp_path, "long", n=4, steps=_steps_for(70.0), group="Z13", ck=20)
    job = _submit(spec, "--time", "00:03:00", "--signal-lead", "60", "--cpus-per-node", "2",
                  "--max-requeues", "6")
    info = _wait(job, timeout=1800)
    sweep = tmp_path / "results" / "long"
    log = _log(sweep, job)
    assert info["JobState"] == "COMPLETED", log
    assert int(info["Restarts"]) >= 1, log
    assert "requeued (run 1 of at most 7)" in log
    df = _rows(sweep)
    _assert_rows_once(df, 4)
    # the signal asked the running trials to checkpoint; the next run resumed from there
    assert "asked the running trials to checkpoint" in log
    assert (df["checkpoint_step"].fillna(0) > 0).any(), df["checkpoint_step"].tolist()
    # the lock of run 0 was released on its way out, or taken over by run 1 (same job)
    assert "being written by another grokray process" not in log


def test_two_jobs_at_once_on_one_node(tmp_path):
    """Two jobs on one node at the same time, no port or temp-dir collision: a small sweep
    (rows once, each naming the node it ran on; its lock and temp dir gone after), the second
    job on its next port block since a port of its first is held on the node, and, where
    the node has fake GPUs, a sweep whose trials each hold one: Slurm grants the node's two
    GPUs, Ray gives one to each trial (every trial saw one of the ids Slurm gave; both used)."""
    from grokray.slurm.script import PORT_BLOCK, PORT_SLOTS, PORT_STRIDE

    gpus = _gpus() >= 2
    a = _spec(tmp_path, "twin_a", n=2, seeds=2, steps=2000)
    b = _spec(tmp_path, "twin_b", n=4, steps=2000, gpu=1 if gpus else 0)
    ja = _submit(a, "--time", "00:10:00", "--cpus-per-node", "2")
    # a process on the node holds a port of the next job's first port block (as a job 250 ids
    # away, or anything else, may): that job's Ray takes its next candidate block
    nxt = int(ja) + 1
    taken = 10000 + (nxt % PORT_SLOTS) * PORT_BLOCK
    moved = 10000 + ((nxt + PORT_STRIDE) % PORT_SLOTS) * PORT_BLOCK
    with socket.socket() as held:
        held.bind(("", taken + 1))  # its node manager's port
        held.listen()
        jb = _submit(b, "--time", "00:10:00", "--cpus-per-node", "2",
                     *(["--gpus-per-node", "2"] if gpus else []))
        both = False
        t0 = time.monotonic()
        while time.monotonic() - t0 < 300 and not both:
            both = _job(ja).get("JobState") == "RUNNING" == _job(jb).get("JobState")
            time.sleep(2)
        ia, ib = _wait(ja), _wait(jb)
    sa, sb = tmp_path / "results" / "twin_a", tmp_path / "results" / "twin_b"
    la, lb = _log(sa, ja), _log(sb, jb)
    assert ia["JobState"] == ib["JobState"] == "COMPLETED", la + lb
    assert ia["ExitCode"] == "0:0", la
    assert both, "the two jobs never ran at the same time"
    heads = [re.search(r"Ray head (\S+),", x).group(1) for x in (la, lb)]
    assert heads[0] != heads[1]  # ports of their own
    assert int(jb) == nxt and heads[1].endswith(f":{moved}"), heads
    assert f"ports {taken}.. are taken on a node; this job's Ray uses {moved}.." in lb
    df = _rows(sa)
    _assert_rows_once(df, 4)
    # each row names the node its trial ran on (slurmd's own host name), not the driver's host
    assert set(df["hostname"]) <= {n[0] for n in NODES}, set(df["hostname"])
    assert "trials written" in la and not (sa / ".lock").exists()
    assert not list(Path("/tmp").glob(f"gr-{ja}-*"))  # its Ray temp dir went with it
    db = _rows(sb)
    _assert_rows_once(db, 4)
    if gpus:
        assert set(db["cuda_visible_devices"]) == {"0", "1"}, db["cuda_visible_devices"].tolist()


def test_graceful_stop_then_scancel_then_rerun(tmp_path):
    spec = _spec(tmp_path, "stop", n=6, steps=6000, group="S3")
    sweep = tmp_path / "results" / "stop"
    job = _submit(spec, "--time", "00:20:00", "--cpus-per-node", "2")
    t0 = time.monotonic()
    while _rows(sweep).empty:  # the first rows
        assert time.monotonic() - t0 < 300, _job(job)
        time.sleep(2)
    subprocess.run(["scancel", "--batch", "--signal=TERM", job], env=_env(), check=True)
    info = _wait(job)
    log = _log(sweep, job)
    assert info["ExitCode"] == "143:0" and int(info["Restarts"]) == 0, log  # not requeued
    assert "interrupted:" in log and not (sweep / ".lock").exists()
    n_first = len(_rows(sweep))
    # again from the written script; a plain scancel kills every step
    script = sweep / "slurm" / "stop.sbatch"
    p = subprocess.run(["sbatch", "--parsable", str(script)], env=_env(), capture_output=True,
                       text=True, check=True)
    job2 = p.stdout.strip()
    while len(_rows(sweep)) == n_first:
        assert time.monotonic() - t0 < 600, _job(job2)
        time.sleep(2)
    subprocess.run(["scancel", job2], env=_env(), check=True)
    _wait(job2)
    # the third run finishes: the lock a killed driver left on this host is stale (its pid gone)
    p = subprocess.run(["sbatch", "--parsable", str(script)], env=_env(), capture_output=True,
                       text=True, check=True)
    info = _wait(p.stdout.strip(), timeout=600)
    assert info["JobState"] == "COMPLETED", _log(sweep, p.stdout.strip())
    _assert_rows_once(_rows(sweep), 6)


@pytest.mark.skipif(len(NODES) < 2, reason="one node up (scripts/local_slurm.sh up --nodes 2)")
def test_two_nodes_one_ray_cluster(tmp_path):
    spec = _spec(tmp_path, "multi", n=6, steps=3000, conc=4)
    job = _submit(spec, "--nodes", "2", "--time", "00:10:00", "--cpus-per-node", "2")
    info = _wait(job)
    sweep = tmp_path / "results" / "multi"
    log = _log(sweep, job)
    assert info["JobState"] == "COMPLETED", log
    assert "2 of 2 nodes" in log
    df = _rows(sweep)
    _assert_rows_once(df, 6)
    assert set(df["hostname"]) == {"gr1", "gr2"}, df["hostname"].tolist()  # trials on both
    assert df["ray_node_id"].nunique() == 2
