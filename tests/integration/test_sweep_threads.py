"""A trial's numbers do not depend on which executor ran it: a float64 config run in process
(`--local`, the driver at 2 torch threads), on warm workers and on Ray Tune (workers started with
OMP_NUM_THREADS=2, as under a user's `export OMP_NUM_THREADS=2`) gives the same trials and curves
values, exactly, and those of the trial trained here on 1 thread: each trains on the threads of
its `resources.cpu` (1; grokray/threads.py), and the driver keeps its own count. This config's
float64 losses at 1 and 2 threads differ in the last bits within 200 steps (one seed: its
matmuls split across threads; stacked seeds split by seed, and agree), so a path that kept its
process's count would fail here."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import specs
from tests.helpers import sweeps as helpers

ray = pytest.importorskip("ray")
torch = pytest.importorskip("torch")


SPEC = """\
name: {name}
out: {out}
config:
  group: Z23
  op: add
  arch: mlp
  train_frac: 0.6
  dtype: float64
  device: cpu
  model: {{hidden: 32, d: 16}}
axes:
  optim.lr: [0.001, 0.003]
seeds: 1
steps: 200
eval_every: 50
resources: {{cpu: 1}}
"""


@pytest.fixture(scope="module")
def two_thread_workers():
    """An embedded Ray of this module's own whose worker processes start with
    OMP_NUM_THREADS=2 (torch's count in them is 2 until a trial sets its own)."""
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"OMP_NUM_THREADS": "2"}})
    yield
    ray.shutdown()


def _spec(tmp_path, name: str):
    return specs.load(tmp_path, SPEC, f"{name}.yaml", name=name, out=tmp_path / "out")


def _rows(sweep_dir) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Trials (without the columns that name a run or where it ran) and curves, sorted."""
    t, c = helpers.read_rows(str(sweep_dir))
    t = t.drop(columns=helpers.VOLATILE + ["config_json"]).sort_values(["config_hash", "seed"])
    c = c.drop(columns=["run_id", "sweep"]).sort_values(["config_hash", "seed", "step"])
    return t.reset_index(drop=True), c.reset_index(drop=True)


@pytest.mark.ray
def test_in_process_warm_and_tune_give_the_same_float64_numbers(tmp_path, two_thread_workers):
    from grokray.sweep.executors.factory import make_executor
    from grokray.sweep.executors.tune import TuneExecutor
    from grokray.sweep.executors.warm import WarmExecutor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.writer import run_plan
    from grokray.trial import run_trial

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        spec = _spec(tmp_path, "local")
        plan = make_plan(spec)
        run_plan(plan, make_executor(spec, "r1", None))  # `grokray sweep --local`
        assert torch.get_num_threads() == 2  # the driver's count, given back
    finally:
        torch.set_num_threads(before)
    with RaySession() as session:  # joins this module's Ray
        assert ray.get(ray.remote(lambda: __import__("torch").get_num_threads()).remote()) == 2
        run_plan(make_plan(_spec(tmp_path, "warm")), WarmExecutor(session))
        run_plan(make_plan(_spec(tmp_path, "tune")),
                 TuneExecutor(session, name="tune", storage_path=str(tmp_path / "ray")))
    local = _rows(tmp_path / "out" / "local")
    assert len(local[0]) == 2 and (local[0]["status"] != "failed").all()
    assert local[1]["train_loss"].notna().all() and len(local[1]) == 2 * 5
    for name in ("warm", "tune"):
        other = _rows(tmp_path / "out" / name)
        pd.testing.assert_frame_equal(other[0], local[0], check_exact=True)
        pd.testing.assert_frame_equal(other[1], local[1], check_exact=True)
    cols = ["seed", "step", "train_loss", "val_loss"]
    torch.set_num_threads(1)  # the rule's count for `cpu: 1`; each trial trained here directly
    try:
        want = {c.config_hash(): run_trial(c).curves[cols].sort_values(["seed", "step"])
                for c in plan.todo}
    finally:
        torch.set_num_threads(before)
    for h, w in want.items():
        got = local[1][local[1]["config_hash"] == h][cols]
        pd.testing.assert_frame_equal(got.reset_index(drop=True), w.reset_index(drop=True),
                                      check_exact=True, check_dtype=False)
