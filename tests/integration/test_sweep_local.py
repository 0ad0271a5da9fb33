"""A sweep run with the in-process executor (no Ray): --rerun-failed and --force keep one
row per (config, seed), and a dry-run plan counts what is done."""

from __future__ import annotations

import pandas as pd

from grokray.sweep.executors.local import LocalExecutor  # noqa: E402
from grokray.sweep.plan import make_plan  # noqa: E402
from grokray.sweep.spec import load_spec  # noqa: E402
from grokray.sweep.writer import run_plan  # noqa: E402
from tests.helpers import sweeps as helpers


def _trials(tmp_path):
    return pd.concat(pd.read_parquet(p) for p in (tmp_path / "out" / "tiny" / "trials")
                     .glob("*.parquet"))


def test_rerun_failed_and_force_keep_one_row_per_identity(tmp_path):
    spec = load_spec(helpers.tiny_spec(tmp_path))
    first = run_plan(make_plan(spec), LocalExecutor(helpers.synthetic))
    assert len(first.outcomes) == 4
    t = _trials(tmp_path)
    assert (t[t["group"] == "S3"]["status"] == "failed").all() and len(t) == 8

    plan = make_plan(spec)
    assert plan.done_rows == 8 and plan.failed_rows == 4 and not plan.todo  # failed = done

    plan = make_plan(spec, rerun_failed=True)
    assert {c.group for c in plan.todo} == {"S3"} and plan.todo_seeds == 4
    run_plan(plan, LocalExecutor(_ok))
    t = _trials(tmp_path)
    assert len(t) == 8 and t.groupby(["config_hash", "seed"]).size().eq(1).all()
    assert (t["status"] == "grokked").all()

    plan = make_plan(spec, force=True)
    assert len(plan.todo) == 4
    run_plan(plan, LocalExecutor(_ok))
    t = _trials(tmp_path)
    assert len(t) == 8 and set(t["run_id"]) == {plan.run_id}
    assert len(list((tmp_path / "out" / "tiny" / "curves").glob("*.parquet"))) == 4


def _ok(cfg):
    """`synthetic` that does not raise on S3 (the result keeps the S3 config)."""
    result = helpers.synthetic(cfg.with_overrides({"group": "Z3"}) if cfg.group == "S3" else cfg)
    result.config = cfg
    return result
