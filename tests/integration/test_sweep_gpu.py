"""Fractional GPUs scheduled by Ray without a GPU: nodes declare logical GPUs, trials ask for
`gpu: 0.5`, and the Parquet says which node and which logical GPU each trial ran with.

On a `ray.cluster_utils.Cluster` (two worker nodes, 4 CPUs and 2 logical GPUs each) a sweep
of 8 trials at `cpu: 1, gpu: 0.5` runs on Ray Tune (the joined-cluster path): all 8 at once,
4 per node, 2 per logical GPU. On an embedded Ray started by `grokray sweep --num-gpus 2` the
warm workers get the same shares. No CUDA is present: `device: auto` runs on the CPU and says
so once; `device: cuda` fails its rows with one line naming the host and the GPU ids.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import specs
from tests.helpers.rendezvous import Rendezvous
from tests.helpers.sweeps import by_value

ray = pytest.importorskip("ray")
torch = pytest.importorskip("torch")


ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.ray,
              pytest.mark.skipif(torch.cuda.is_available(),
                                 reason="checks the CPU fallback: needs a machine without CUDA")]

SPEC = """\
name: {name}
out: {out}
config: {{train_frac: 0.6, device: {device}, model: {{d: 8, hidden: 16, rank: 8}}}}
axes:
  group: {groups}
  arch: [mlp, forge]
seeds: 1
steps: 20
eval_every: 10
resources: {{cpu: 1, gpu: 0.5}}
concurrency: null
retries: 0
"""


def _spec(tmp_path: Path, name: str, groups: str, device: str = "auto") -> Path:
    return specs.write(tmp_path, SPEC, f"{name}.yaml", name=name, out=tmp_path / "out",
                       groups=groups, device=device)


def _trials(tmp_path: Path, name: str) -> pd.DataFrame:
    files = (tmp_path / "out" / name / "trials").glob("*.parquet")
    return pd.concat(pd.read_parquet(p) for p in files).reset_index(drop=True)


def all_at_once(cfg):
    """The real trial, started only once all 8 trials of the sweep run at the same time (or
    120 s passed); its interval starts at its arrival, so trials that ran together overlap."""
    from grokray.trial import run_trial

    arrived = datetime.now(timezone.utc)
    barrier = ray.get_actor("gpu_barrier")
    deadline = time.monotonic() + 120
    while (not ray.get(barrier.arrive.remote(cfg.config_hash()))
           and time.monotonic() < deadline):
        time.sleep(0.2)
    result = run_trial(cfg)
    result.started_at = arrived
    return result


@pytest.fixture
def gpu_cluster():
    from ray.cluster_utils import Cluster

    by_value(__name__)
    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False, "resources": {"head": 1}})
    for _ in range(2):
        c.add_node(num_cpus=4, num_gpus=2)
    ray.init(address=c.address, log_to_driver=False)
    c.wait_for_nodes()
    yield c
    ray.shutdown()
    c.shutdown()


def test_tune_packs_two_trials_per_logical_gpu(tmp_path, gpu_cluster):
    from grokray.sweep.executors.tune import TuneExecutor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.spec import load_spec
    from grokray.sweep.writer import run_plan

    barrier = Rendezvous.options(name="gpu_barrier", resources={"head": 0.01}).remote(8)
    spec = load_spec(_spec(tmp_path, "gpu", "[Z5, Z7, S3, Z4]"))
    session = RaySession()  # joins the cluster's Ray, connected by the fixture
    backend = TuneExecutor(session, name="gpu", storage_path=str(tmp_path / "ray"), cpu=1,
                           gpu=0.5, retries=0, trial_fn=all_at_once)
    run_plan(make_plan(spec), backend)
    assert ray.get(barrier.seen.remote()) == 8
    t = _trials(tmp_path, "gpu")
    assert len(t) == 8 and set(t["status"]) <= {"grokked", "not_grokked"}, t["error"].tolist()
    # what each trial saw: the CPU (no CUDA here), and one logical GPU id that Ray gave it
    assert set(t["device"]) == {"cpu"} and set(t["cuda_visible_devices"]) == {"0", "1"}
    # 4 trials per node, 2 per (node, logical GPU): the pair saw the same id
    assert sorted(Counter(t["ray_node_id"]).values()) == [4, 4]
    pairs = zip(t["ray_node_id"], t["cuda_visible_devices"], strict=True)
    assert sorted(Counter(pairs).values()) == [2] * 4
    # and they ran at the same time: every trial's interval overlaps every other's
    latest_start, earliest_end = t["started_at"].max(), t["finished_at"].min()
    assert latest_start < earliest_end, (latest_start, earliest_end)

    # device: cuda where there is none: a failed row with one line, never a CPU run
    spec = load_spec(_spec(tmp_path, "gpu_cuda", "[Z5]", device="cuda"))
    run_plan(make_plan(spec), TuneExecutor(session, name="gpu_cuda", cpu=1, gpu=0.5, retries=0,
                                           storage_path=str(tmp_path / "ray")))
    t = _trials(tmp_path, "gpu_cuda")
    assert list(t["status"]) == ["failed", "failed"], t["error"].tolist()
    for err in t["error"]:
        assert err.startswith("ConfigError: device 'cuda' requested but CUDA is not available "
                              "on ") and "CUDA_VISIBLE_DEVICES=" in err, err
        assert err.endswith("; valid: auto, cpu") and "\n" not in err


def test_embedded_ray_with_logical_gpus_runs_warm_workers(tmp_path):
    """`grokray sweep --num-gpus 2 --num-cpus 4`: 4 warm workers at gpu 0.5, two per logical
    GPU; the CPU fallback of `device: auto` is said in one line."""
    spec = _spec(tmp_path, "warm_gpu", "[Z5, Z7]")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["PYTHONPATH"] = str(ROOT)
    p = subprocess.run([sys.executable, "-m", "grokray.cli", "sweep", str(spec), "--num-cpus",
                        "4", "--num-gpus", "2", "--plain", "--no-summary"],
                       env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    said = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.startswith("device auto:")]
    assert len(said) == 1 and "they run on the CPU" in said[0], p.stderr
    t = _trials(tmp_path, "warm_gpu")
    assert len(t) == 4 and set(t["device"]) == {"cpu"}
    assert Counter(t["cuda_visible_devices"]) == {"0": 2, "1": 2}
    assert t["ray_node_id"].nunique() == 1
