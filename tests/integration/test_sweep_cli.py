"""`grokray sweep` through the CLI on a real (embedded) Ray: tables, resume, new axis values,
and a raising trial. One Ray session for the module."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from tests.helpers import sweeps as helpers
from tests.helpers.sweeps import ray_session  # noqa: F401  (module-scoped fixture)

ray = pytest.importorskip("ray")

from grokray.cli import main as cli_main  # noqa: E402
from grokray.schema import (  # noqa: E402
    CURVE_REQUIRED_COLUMNS,
    IDENTITY_COLUMNS,
    OUTCOME_COLUMNS,
    PROVENANCE_COLUMNS,
)

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_session")]


def _files(out, sub):
    return sorted(p.name for p in (out / "tiny" / sub).glob("*.parquet"))


def test_smoke_tables_resume_and_new_axis_value(tmp_path, capsys):
    spec = helpers.tiny_spec(tmp_path)
    out = tmp_path / "out"
    assert cli_main(["sweep", str(spec), "--plain"]) == 0
    trials = pd.concat(pd.read_parquet(p) for p in (out / "tiny" / "trials").glob("*.parquet"))
    curves = pd.concat(pd.read_parquet(p) for p in (out / "tiny" / "curves").glob("*.parquet"))
    assert len(trials) == 2 * 2 * 2  # groups x archs x seeds
    for col in IDENTITY_COLUMNS + OUTCOME_COLUMNS + PROVENANCE_COLUMNS + [
            "group", "arch", "arm", "model_d", "optim_lr", "group_order", "config_json"]:
        assert col in trials.columns, col
    assert set(CURVE_REQUIRED_COLUMNS) <= set(curves.columns)
    assert trials.groupby(["config_hash", "seed"]).size().max() == 1
    assert set(trials["status"]) <= {"grokked", "not_grokked", "diverged"}
    assert trials["ray_version"].notna().all()
    first = _files(out, "trials")

    # the log path printed is this session's, wherever Ray's temp dir is (not session_latest)
    node = ray._private.worker.global_worker.node
    logs = capsys.readouterr().out.rsplit("Ray's logs: ", 1)[1].split("\n", 1)[0]
    assert logs == node.get_logs_dir_path() and os.path.isdir(logs)
    assert cli_main(["sweep", str(spec), "--plain"]) == 0  # nothing missing: nothing runs
    assert "nothing to run" in capsys.readouterr().out
    assert _files(out, "trials") == first

    helpers.tiny_spec(tmp_path, groups=("Z5", "S3", "Z4"))  # one new axis value
    assert cli_main(["sweep", str(spec), "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert "done: 8/12" in dry and "to run: 2 trials, 4 seed-runs" in dry
    assert cli_main(["sweep", str(spec), "--plain"]) == 0
    now = _files(out, "trials")
    assert set(first) < set(now) and len(now) == len(first) + 2
    new = pd.concat(pd.read_parquet(out / "tiny" / "trials" / f) for f in set(now) - set(first))
    assert set(new["group"]) == {"Z4"} and len(new) == 4

    assert cli_main(["status", str(out / "tiny")]) == 0
    status = capsys.readouterr().out
    assert "12 seed-rows of 12 planned, 0 pending" in status
    rows = status.rsplit("\narm ", 1)[1].splitlines()[1:]  # one row per arm (arch = arm here)
    assert sorted(r.split()[0] for r in rows) == ["forge", "mlp"]


def test_raising_trial_gives_failed_rows_and_the_rest_finish(tmp_path):
    from grokray.sweep.executors.tune import TuneExecutor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.spec import load_spec
    from grokray.sweep.writer import run_plan

    spec = load_spec(helpers.tiny_spec(tmp_path))
    plan = make_plan(spec)
    with RaySession() as session:
        run_plan(plan, TuneExecutor(session, name="fail", storage_path=str(tmp_path / "ray"),
                                    concurrency=2, retries=0, trial_fn=helpers.synthetic))
    trials = pd.concat(pd.read_parquet(p) for p in (tmp_path / "out" / "tiny" / "trials")
                       .glob("*.parquet"))
    assert len(trials) == 8
    bad = trials[trials["group"] == "S3"]
    assert list(bad["status"].unique()) == ["failed"]
    assert bad["error"].str.contains("RuntimeError: boom: S3 is cursed").all()
    assert (trials[trials["group"] == "Z5"]["status"] == "grokked").all()

    again = make_plan(spec, rerun_failed=True)
    assert len(again.todo) == 2 and {c.group for c in again.todo} == {"S3"}


def test_optuna_search_resumes_with_new_samples_only(tmp_path):
    from grokray.sweep.executors.tune import TuneExecutor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.spec import parse_spec
    from grokray.sweep.writer import run_plan

    text = ("name: s\nout: {out}\nconfig: {{group: Z5, arch: mlp}}\nseeds: 2\nsteps: 10\n"
            "search:\n  space: {{optim.lr: {{loguniform: [1.0e-4, 1.0e-1]}}}}\n"
            "  metric: final_val_acc\n  mode: max\n  num_samples: {n}\n  seed: 0\n")

    def run(n):
        spec = parse_spec(text.format(out=tmp_path / "out", n=n), "s.yaml")
        plan = make_plan(spec)
        with RaySession() as session:
            run_plan(plan, TuneExecutor(session, name=f"s{n}", storage_path=str(tmp_path / "ray"),
                                        concurrency=2, trial_fn=helpers.synthetic))
        return plan

    assert run(2).n_search_new == 2
    plan = run(3)
    assert len(plan.prior) == 2 and plan.n_search_new == 1
    trials = pd.concat(pd.read_parquet(p) for p in (tmp_path / "out" / "s" / "trials")
                       .glob("*.parquet"))
    assert trials["config_hash"].nunique() == 3 and len(trials) == 6
    assert trials["optim_lr"].between(1e-4, 1e-1).all()
