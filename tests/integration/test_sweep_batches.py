"""Tiny configs share Tune trials (calls.tiny_calls) on a real embedded Ray: every config is
written exactly once with its own result, a raising config fails alone, and a config that kills
its worker fails alone too."""

from __future__ import annotations

import pandas as pd
import pytest

from grokray.config import TrialConfig
from tests.helpers import sweeps as helpers
from tests.helpers.sweeps import ray_session  # noqa: F401  (module-scoped fixture)

ray = pytest.importorskip("ray")


pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_session")]


def test_batched_tiny_trials_write_each_config_once(tmp_path):
    from grokray.sweep.executors.calls import tiny_calls
    from grokray.sweep.executors.tune import TuneExecutor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.spec import load_spec
    from grokray.sweep.writer import run_plan

    groups = ("Z5", "S3", "Z4", "Z3", "Z6", "Z7")
    spec = load_spec(helpers.tiny_spec(tmp_path, groups=groups, concurrency=1))
    plan = make_plan(spec)
    batches = tiny_calls(plan.todo, slots=1)
    assert len(plan.todo) == 12 and len(batches) == 2  # 6 configs per Tune trial

    started = []

    class Display:
        def started(self, cfg):
            started.append(cfg.config_hash())

        def finished(self, outcome, result):
            pass

    with RaySession() as session:
        executor = TuneExecutor(session, name="batches", storage_path=str(tmp_path / "ray"),
                                concurrency=1, retries=0, trial_fn=helpers.synthetic)
        run_plan(plan, executor, Display())
    trials = pd.concat(pd.read_parquet(p) for p in (tmp_path / "out" / "tiny" / "trials")
                       .glob("*.parquet"))
    assert len(trials) == 24 and trials.groupby(["config_hash", "seed"]).size().max() == 1
    assert sorted(started) == sorted(c.config_hash() for c in plan.todo)
    assert set(trials["config_hash"]) == {c.config_hash() for c in plan.todo}
    by_group = trials.groupby("group")["status"].unique()
    assert list(by_group["S3"]) == ["failed"]
    assert all(list(by_group[g]) == ["grokked"] for g in groups if g != "S3")
    for _, row in trials.iterrows():  # each row carries its own config
        assert row["group"] in groups and row["arch"] in ("mlp", "forge")


def test_a_tune_batch_whose_worker_dies_runs_split_so_only_the_culprit_fails(tmp_path):
    """Eight tiny configs in two Tune trials of four; the Z4 one kills its worker every time. Its
    batch-mates are written grokked (the batch ran again as one-config trials), Z4 fails named
    after its own retries, every config is reported once. (Tune's own retries plus a re-batched
    last round had failed a batch-mate with it.)"""
    from grokray.sweep.executors.calls import tiny_calls
    from grokray.sweep.executors.tune import TuneExecutor
    from grokray.sweep.session import RaySession

    base = {"group": "Z5", "arch": "mlp", "steps": 30, "seeds": [0, 1], "train_frac": 0.6}
    cfgs = [TrialConfig.from_dict({**base, "optim.lr": 1e-3 * (1 + i)}) for i in range(7)]
    cfgs.append(TrialConfig.from_dict({**base, "group": "Z4"}))
    assert tiny_calls(cfgs, slots=1) == [[0, 1, 2, 3], [4, 5, 6, 7]]  # Z4 with 4, 5, 6

    sink = helpers.Recorder()
    with RaySession() as session:
        TuneExecutor(session, name="split", storage_path=str(tmp_path / "ray"), concurrency=1,
                     retries=1, trial_fn=helpers.dies_on_z4).run(cfgs, sink)
    helpers.assert_only_the_culprit_failed(sink.outcomes, cfgs[:7], cfgs[7], tries=2)
