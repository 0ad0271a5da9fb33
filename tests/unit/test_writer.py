"""The sweep's one writer (grokray.sweep.writer.Writer) writes on a thread: every accepted
result is on disk once `run_plan` returns or raises, each identity once, and a failed write
stops the sweep with its own error."""

from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd
import pytest

from grokray.result import SeedResult, TrialResult
from grokray.sweep import store
from grokray.sweep.executors.local import LocalExecutor
from grokray.sweep.outcome import Outcome
from grokray.sweep.plan import make_plan
from grokray.sweep.spec import parse_spec
from grokray.sweep.writer import Writer, run_plan

SPEC = """\
name: w
out: {out}
config: {{group: Z5, arch: mlp, device: cpu, model: {{d: 8, hidden: 16}}}}
axes:
  optim.lr: [0.001, 0.002, 0.003, 0.004]
seeds: 2
steps: 2
eval_every: 2
"""


def _result(cfg):
    now = datetime.now(timezone.utc)
    seeds = [SeedResult(seed=s, data_seed=s, status="not_grokked", steps_run=cfg.steps)
             for s in cfg.seeds]
    return TrialResult(config=cfg, n_params=0, device="cpu", wall_s=0.0, started_at=now,
                       finished_at=now, seeds=seeds, curves=pd.DataFrame(), group_order=5)


def _plan(tmp_path):
    return make_plan(parse_spec(SPEC.format(out=tmp_path), "w.yaml"))


def _rows(plan):
    return store.Manifest.load(plan.spec.sweep_dir).rows


def test_every_result_is_written_once_when_run_plan_returns(tmp_path):
    plan = _plan(tmp_path)
    writer = run_plan(plan, LocalExecutor(trial_fn=_result))
    rows = _rows(plan)
    assert len(writer.outcomes) == 4 and len(rows) == 8
    assert rows.groupby(["config_hash", "seed"]).size().max() == 1
    cfg = plan.todo[0]
    writer.finished(Outcome(cfg, _result(cfg)))  # a retried trial reporting again
    writer.close()
    assert len(writer.outcomes) == 4 and len(_rows(plan)) == 8


def test_results_that_came_back_are_written_before_an_interrupt_goes_on(tmp_path):
    plan = _plan(tmp_path)

    class Stops(LocalExecutor):
        def run(self, configs, sink):
            for cfg in configs[:3]:
                sink.finished(Outcome(cfg, _result(cfg)))
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_plan(plan, Stops())
    rows = _rows(plan)
    assert len(rows) == 6 and rows["config_hash"].nunique() == 3
    assert make_plan(plan.spec).n_todo_trials == 1  # resume runs only the fourth


def test_a_failed_write_stops_the_sweep_with_its_error(tmp_path, monkeypatch):
    plan = _plan(tmp_path)
    real = store.write_result
    calls = []

    def flaky(result, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(result, *args, **kwargs)

    monkeypatch.setattr(store, "write_result", flaky)
    with pytest.raises(OSError, match="disk full"):
        run_plan(plan, LocalExecutor(trial_fn=_result))
    rows = _rows(plan)
    assert rows["config_hash"].nunique() == 1  # the write before the failure is on disk
    assert make_plan(plan.spec).n_todo_trials == 3


def test_close_without_results_is_a_no_op(tmp_path):
    writer = Writer(_plan(tmp_path))
    writer.close()
    assert writer.outcomes == [] and writer.written == set()
