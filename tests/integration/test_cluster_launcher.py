"""The cluster path for real, on this machine: `ray up` with cluster.onprem.yaml (a head at
127.0.0.1 and a worker at 127.0.0.2, both reached over SSH), `ray job submit` of the smoke sweep,
the Parquet rows and where the trials ran, `grokray status`, `ray down`. The nodes declare 4 CPUs
and 2 logical GPUs each (`ray start --num-gpus 2`, no GPU present), and a second job runs 8
trials at `gpu: 0.5, cpu: 1`: 4 at once per node, 2 per logical GPU, on the CPU.

Slow and opt-in (--runslow); skipped unless sshd, rsync and key login to 127.0.0.1 are available
(`scripts/loopback_cluster.sh prepare` sets them up). sshd runs in its own PID namespace
(`scripts/loopback_cluster.sh sshd-start`), so the `ray stop` that `ray down` runs sees only this
cluster's processes, never another Ray on the machine; killing the namespace at the end leaves
nothing running. The config is the shipped file with only its CHANGE-marked settings replaced
(a unique cluster name, temp dirs under a fresh directory, this venv)."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "loopback_cluster.sh"
KEY = Path(os.environ.get("GROKRAY_SSH_KEY", "~/.ssh/grokray_cluster")).expanduser()
BIN = Path(sys.prefix) / "bin"
DASHBOARD = "http://127.0.0.1:8265"
WORKER_IP = "127.0.0.2"

pytestmark = [pytest.mark.slow, pytest.mark.ray]


def _port_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex((host, port)) != 0


def _missing() -> str | None:
    """Why this machine cannot run the test, or None."""
    if not (shutil.which("sshd") or os.path.exists("/usr/sbin/sshd")):
        return "no sshd (scripts/loopback_cluster.sh prepare installs it)"
    for tool in ("rsync", "unshare", "ssh"):
        if not shutil.which(tool):
            return f"no {tool} (scripts/loopback_cluster.sh prepare installs it)"
    if not KEY.exists():
        return f"no SSH key {KEY} (scripts/loopback_cluster.sh prepare makes it)"
    if not (Path.home() / ".ray" / "auth_token").exists():
        return "no ~/.ray/auth_token (ray get-auth-token --generate)"
    for host, port in (("127.0.0.1", 22), (WORKER_IP, 22), ("127.0.0.1", 8265),
                       ("127.0.0.1", 6390)):
        if not _port_free(host, port):
            return f"{host}:{port} is in use (another sshd or cluster)"
    return None


def _run(args, env, timeout, check=True) -> subprocess.CompletedProcess:
    p = subprocess.run(args, env=env, timeout=timeout, capture_output=True, text=True,
                       cwd=ROOT)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} -> {p.returncode}\n"
                             f"{p.stdout[-4000:]}\n{p.stderr[-4000:]}")
    return p


def _config(base: Path) -> Path:
    """cluster.onprem.yaml with its CHANGE-marked settings set for this run: each node declares
    4 CPUs and 2 logical GPUs."""
    text = (ROOT / "cluster.onprem.yaml").read_text()
    text = text.replace("/tmp/grokray-ray/", f"{base}/").replace("~/grokray-venv", sys.prefix)
    start = "--num-cpus=1 --object-store-memory"  # the head's and the worker's ray start
    assert text.count(start) == 2
    text = text.replace(start, "--num-cpus=4 --num-gpus=2 --object-store-memory")
    cfg = yaml.safe_load(text)
    cfg["cluster_name"] = f"grokray-test-{os.getpid()}"
    cfg["auth"]["ssh_private_key"] = str(KEY)
    cfg["auth"]["ssh_user"] = subprocess.check_output(["id", "-un"], text=True).strip()
    path = base / "cluster.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _smoke(base: Path) -> Path:
    """sweeps/smoke.yaml at 3 CPUs per trial: with 4 per node, its 2 concurrent trials run on
    two nodes."""
    text = (ROOT / "sweeps" / "smoke.yaml").read_text()
    assert "resources: {cpu: 1, gpu: 0}" in text
    path = base / "smoke.yaml"
    path.write_text(text.replace("resources: {cpu: 1, gpu: 0}", "resources: {cpu: 3, gpu: 0}"))
    return path


GPU_SPEC = """\
name: gpu_share
config: {train_frac: 0.5, device: auto, arch: mlp, model: {d: 8, hidden: 16},
         metrics: {patience: 0}}
axes: {group: [Z5, Z6, Z7, Z8, Z9, S3, D4, Q8]}
seeds: 1
steps: 2500
eval_every: 500
resources: {cpu: 1, gpu: 0.5}
concurrency: null
retries: 0
"""


def most_at_once(rows: pd.DataFrame) -> int:
    """The most rows whose [started_at, finished_at] intervals hold one instant."""
    events = sorted([(s, 1) for s in rows["started_at"]] + [(f, -1) for f in rows["finished_at"]],
                    key=lambda e: (e[0], e[1]))
    now = most = 0
    for _, d in events:
        now += d
        most = max(most, now)
    return most


def _alive_nodes(env) -> list[str]:
    p = _run([BIN / "ray", "list", "nodes", "--address", DASHBOARD, "--format", "json"],
             env, 60, check=False)
    if p.returncode != 0:
        return []
    return sorted(n["node_ip"] for n in json.loads(p.stdout) if n["state"] == "ALIVE")


def _processes_under(path: str) -> list[str]:
    """Command lines of live processes that mention path (this cluster's temp dirs)."""
    found = []
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            args = Path(cmdline).read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if path in args and "pytest" not in args:
            found.append(args[:200])
    return found


def test_ray_up_job_submit_status_down():
    why = _missing()
    if why:
        pytest.skip(why)
    # short paths: Ray's unix sockets live under the temp dir (108-byte limit)
    base = Path(tempfile.mkdtemp(prefix="grc-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(RAY_AUTH_MODE="token", PATH=f"{BIN}:{env.get('PATH', '')}",
               GROKRAY_CLUSTER_STATE=str(base / "sshd"), GROKRAY_VENV=sys.prefix,
               GROKRAY_SSH_KEY=str(KEY))
    env.pop("PYTHONPATH", None)  # the job carries its own code (--working-dir)
    out = base / "results"
    cfg, left = None, []
    took, t0 = {}, time.monotonic()

    def lap(step):  # the step timings, printed (pytest -s) for docs/cluster.md
        nonlocal t0
        took[step] = time.monotonic() - t0
        t0 = time.monotonic()
    try:
        if _run(["bash", SCRIPT, "sshd-start"], env, 60, check=False).returncode != 0:
            pytest.skip("sshd did not start on 127.0.0.1:22 and 127.0.0.2:22")
        if _run(["bash", SCRIPT, "check"], env, 30, check=False).returncode != 0:
            pytest.skip("no key login to 127.0.0.1 (scripts/loopback_cluster.sh prepare)")
        cfg = _config(base)

        # 1. ray up: the head here; its autoscaler (v1) starts the worker over SSH
        lap("sshd")
        _run([BIN / "ray", "up", "-y", "--no-config-cache", cfg], env, 300)
        lap("ray up")
        deadline = time.monotonic() + 240
        while len(nodes := _alive_nodes(env)) < 2 and time.monotonic() < deadline:
            time.sleep(3)
        assert len(nodes) == 2 and WORKER_IP in nodes, nodes
        lap("worker joined")

        # 2. the sweep as a Ray job; the driver on the head, trials on both nodes
        job = _run([BIN / "ray", "job", "submit", "--address", DASHBOARD,
                    "--working-dir", ROOT, "--", "grokray", "sweep", _smoke(base),
                    "--address", "auto", "--out", out, "--plain"], env, 600)
        assert "succeeded" in job.stdout + job.stderr
        lap("job")
        # the printed log path is the head's session under its own temp dir
        assert f"Ray's logs: {base}/head/session_" in job.stdout

        # 3. complete Parquet rows, written once, from trials on both nodes
        files = (out / "smoke" / "trials").glob("*.parquet")
        trials = pd.concat(pd.read_parquet(p) for p in files)
        assert len(trials) == 12  # 3 groups x 2 archs x 2 seeds
        assert trials.groupby(["config_hash", "seed"]).size().max() == 1
        assert set(trials["status"]) <= {"grokked", "not_grokked", "diverged"}
        assert (trials.loc[trials["arch"] == "forge", "status"] == "grokked").all()
        (state,) = glob.glob(str(out / "smoke" / "_ray" / "*" / "experiment_state-*.json"))
        trial_data = json.loads(Path(state).read_text())["trial_data"]
        ran_on = [json.loads(runtime)["last_result"]["node_ip"] for _, runtime in trial_data]
        assert len(ran_on) == 6 and set(ran_on) <= set(nodes), ran_on
        # Both nodes took part: the job placed trial actors on the head and on the worker. Which
        # node finishes which trial is up to Ray Tune: it reuses a free actor for the next trial
        # and cancels one still starting, so with 2-8 s trials the head's actor often runs all
        # six before the worker's (the job's code shipped there, torch imported) is up.
        # The state API keeps a finished job's dead actors only for a while: in 2 of 4 fresh-clone
        # CI runs it answered "No resource in the cluster" for 30 s after the job ended. Then the
        # actor check cannot be made (said on stdout); both nodes joining is asserted above.
        listed = ""
        for _ in range(10):
            listed = _run([BIN / "ray", "list", "actors", "--address", DASHBOARD,
                           "--filter", "class_name=ImplicitFunc", "--format", "json",
                           "--detail", "--limit", "10000"], env, 60).stdout
            if listed.lstrip().startswith("["):
                break
            time.sleep(3)
        if listed.lstrip().startswith("["):
            actors = json.loads(listed)
            ids = {n["node_id"]: n["node_ip"] for n in json.loads(_run(
                [BIN / "ray", "list", "nodes", "--address", DASHBOARD, "--format", "json"],
                env, 60).stdout)}
            hosts = {ids[a["node_id"]] for a in actors}
            print(f"trial actors on {sorted(hosts)}; trials per node: "
                  + ", ".join(f"{ip} {ran_on.count(ip)}" for ip in nodes))
            assert hosts == set(nodes), hosts
        else:
            print(f"trial actors not checked: ray list actors said {listed.strip()!r}")

        # 4. grokray status on that directory
        status = _run([BIN / "grokray", "status", out / "smoke"], env | {"PYTHONPATH": str(ROOT)},
                      120)
        assert "12 seed-rows of 12 planned, 0 pending" in status.stdout

        # 5. fractional GPUs: 8 trials at gpu 0.5 on 2 nodes x 2 logical GPUs, all at once
        (base / "gpu.yaml").write_text(GPU_SPEC)
        job = _run([BIN / "ray", "job", "submit", "--address", DASHBOARD, "--working-dir", ROOT,
                    "--", "grokray", "sweep", base / "gpu.yaml", "--address", "auto", "--out",
                    out, "--plain", "--no-summary"], env, 600)
        said = [ln for ln in (job.stdout + job.stderr).splitlines()
                if ln.startswith("device auto:")]
        assert len(said) == 1 and "they run on the CPU" in said[0], job.stdout[-3000:]
        lap("gpu job")
        t = pd.concat(pd.read_parquet(p) for p in (out / "gpu_share" / "trials").glob("*.parquet"))
        ip = {n["node_id"]: n["node_ip"] for n in json.loads(_run(
            [BIN / "ray", "list", "nodes", "--address", DASHBOARD, "--format", "json"],
            env, 60).stdout)}
        t["node"] = t["ray_node_id"].map(ip)
        assert len(t) == 8 and set(t["status"]) <= {"grokked", "not_grokked"}, t["error"].tolist()
        assert set(t["device"]) == {"cpu"} and set(t["node"]) <= set(nodes), t["node"].tolist()
        assert set(t["cuda_visible_devices"]) <= {"0", "1"}, t["cuda_visible_devices"].tolist()
        per_gpu = t.groupby(["node", "cuda_visible_devices"])
        print("gpu 0.5 trials (node, CUDA_VISIBLE_DEVICES: trials, most at once): " + "; ".join(
            f"{n} {g}: {len(rows)}, {most_at_once(rows)}" for (n, g), rows in per_gpu)
            + "; per node most at once, all-running window (s): " + ", ".join(
            f"{n} {most_at_once(rows)}, "
            f"{(rows['finished_at'].min() - rows['started_at'].max()).total_seconds():.1f}"
            for n, rows in t.groupby("node")))
        # Ray's fractional GPUs: never more than two trials on one (node, logical GPU), never
        # more than four on a node, and trials did share a GPU. Which node takes how many is
        # timing (Tune reuses a finished trial's actor before a slower node's actors start: at
        # load 5-10 the head once ran 7 of the 8); the exact 4 per node, 2 per GPU, all at once
        # is asserted with a barrier in tests/integration/test_sweep_gpu.py.
        assert all(most_at_once(rows) <= 2 for _, rows in per_gpu)
        assert any(most_at_once(rows) == 2 for _, rows in per_gpu)  # a pair shared its GPU
        assert all(most_at_once(rows) <= 4 for _, rows in t.groupby("node"))

        # 6. ray down
        _run([BIN / "ray", "down", "-y", cfg], env, 180)
        lap("ray down")
    finally:
        _run(["bash", SCRIPT, "sshd-stop"], env, 60, check=False)
        if cfg is not None:
            deadline = time.monotonic() + 30
            while (left := _processes_under(str(base))) and time.monotonic() < deadline:
                time.sleep(1)
        shutil.rmtree(base, ignore_errors=True)
        name = f"grokray-test-{os.getpid()}"
        for f in glob.glob(f"/tmp/ray/cluster-{name}.*"):
            os.remove(f)  # the launcher's state and lock files of this test's cluster
        for f in glob.glob("/tmp/ray-config-*"):  # and its cached copies of the config
            with contextlib.suppress(OSError):
                if f'"cluster_name": "{name}"' in Path(f).read_text(errors="replace"):
                    os.remove(f)
    print("step seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in took.items()))
    assert not left, left  # nothing of this cluster is left running
