"""Tiny configs share Tune trials (batching.tiny_batches) on a real embedded Ray: every config is
written exactly once with its own result, and a raising config fails alone."""

from __future__ import annotations

import sys

import pandas as pd
import pytest

ray = pytest.importorskip("ray")

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import _sweep_helpers as helpers  # noqa: E402
from _sweep_helpers import ray_session  # noqa: E402, F401  (module-scoped fixture)

pytestmark = pytest.mark.usefixtures("ray_session")


def test_batched_tiny_trials_write_each_config_once(tmp_path):
    from grokray.sweep.batching import tiny_batches
    from grokray.sweep.runner import make_plan, run_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.spec import load_spec
    from grokray.sweep.tune_executor import TuneExecutor

    groups = ("Z5", "S3", "Z4", "Z3", "Z6", "Z7")
    spec = load_spec(helpers.tiny_spec(tmp_path, groups=groups, concurrency=1))
    plan = make_plan(spec)
    batches = tiny_batches(plan.todo, slots=1)
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
