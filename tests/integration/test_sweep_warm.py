"""Warm trial workers (grokray.sweep.executors.warm) on a real embedded Ray: the same processes
serve two sweeps of a session, each config is written once with its own result, a raising
config fails alone, a worker whose process dies is replaced and its trials run again (or fail,
named, when the retries are spent), and a Tune search after a warm sweep gets the CPUs back."""

from __future__ import annotations

import os
from functools import partial

import pandas as pd
import pytest

from grokray.sweep.executors.calls import WorkerCall
from tests.helpers import sweeps as helpers
from tests.helpers.configs import config
from tests.helpers.sweeps import ray_session  # noqa: F401  (module-scoped fixture)

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_session")]
helpers.by_value(__name__)  # its trial functions


def _trials(out: str) -> pd.DataFrame:
    files = sorted(p for p in (out / "trials").glob("*.parquet"))
    return pd.concat(pd.read_parquet(p) for p in files)


def _spec(tmp_path, name, groups=("Z5", "S3", "Z4")):
    from grokray.sweep.spec import load_spec

    text = helpers.tiny_spec(tmp_path, groups=groups, name=f"{name}.yaml").read_text()
    path = tmp_path / f"{name}.yaml"
    path.write_text(text.replace("name: tiny", f"name: {name}"))
    return load_spec(path)


def _executor(session, trial_fn, retries=1, concurrency=2):
    from grokray.sweep.executors.warm import WarmExecutor

    return WarmExecutor(session, concurrency=concurrency, retries=retries, trial_fn=trial_fn)


def test_the_same_workers_serve_two_sweeps_and_each_config_is_written_once(tmp_path):
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.writer import run_plan

    pids = []
    with RaySession() as session:  # joins the module's Ray
        for name in ("a", "b"):
            spec = _spec(tmp_path, name)
            plan = make_plan(spec)
            writer = run_plan(plan, _executor(session, helpers.synthetic))
            pids.append(sorted(session.warm.pids()))
            t = _trials(tmp_path / "out" / name)
            assert len(t) == 3 * 2 * 2 and t.groupby(["config_hash", "seed"]).size().eq(1).all()
            assert set(t["config_hash"]) == {c.config_hash() for c in plan.todo}
            assert (t[t["group"] == "S3"]["status"] == "failed").all()
            assert t[t["group"] == "S3"]["error"].str.contains("boom: S3 is cursed").all()
            assert (t[t["group"] != "S3"]["status"] == "grokked").all()
            node = ray.get_runtime_context().get_node_id()
            assert {o.node_id for o in writer.outcomes} == {node}
    assert pids[0] == pids[1] and len(pids[0]) == 2 and os.getpid() not in pids[0]
    # leaving the session stopped the warm workers
    assert session.warm.pids() == [] and ray.is_initialized()  # and leaves the Ray it found


def _dying(marker: str):
    """A trial function whose worker process dies the first time it meets a Z4 config."""

    def fn(cfg):
        if cfg.group == "Z4" and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)  # the worker process dies mid-trial
        return helpers.synthetic(cfg)

    return fn


@pytest.mark.parametrize("retries", [1, 0])
def test_a_dead_worker_is_replaced_and_its_trials_run_again_or_fail_named(tmp_path, retries):
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.writer import run_plan

    spec = _spec(tmp_path, f"die{retries}")
    with RaySession() as session:
        session.warm.get(2, 1.0, 0.0)
        before = set(session.warm.pids())
        run_plan(make_plan(spec), _executor(session, _dying(str(tmp_path / "died")),
                                            retries=retries))
        after = set(session.warm.pids())
    assert (tmp_path / "died").exists()
    t = _trials(tmp_path / "out" / f"die{retries}")
    assert len(t) == 12 and t.groupby(["config_hash", "seed"]).size().eq(1).all()
    z4 = t[t["group"] == "Z4"]
    if retries:
        assert (z4["status"] == "grokked").all()
    else:  # the one Z4 config whose worker died (the other ran after the marker was made)
        lost = z4[z4["status"] == "failed"]
        assert lost["config_hash"].nunique() == 1 and len(lost) == 2
        assert lost["error"].str.startswith("lost after 1 tries: ").all()
        assert (z4[z4["status"] != "failed"]["status"] == "grokked").all()
    assert (t[t["group"] == "Z5"]["status"] == "grokked").all()
    assert len(before) == 2 and len(after) == 2
    assert len(after - before) >= 1  # the dead one was replaced


def test_a_tune_search_after_a_warm_sweep_gets_the_cpus(tmp_path):
    from grokray.sweep.executors.tune import TuneExecutor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.spec import parse_spec
    from grokray.sweep.writer import run_plan

    text = (f"name: s\nout: {tmp_path / 'out'}\nconfig: {{group: Z5, arch: mlp}}\nseeds: 1\n"
            "steps: 10\nsearch:\n  space: {optim.lr: {loguniform: [1.0e-4, 1.0e-1]}}\n"
            "  metric: final_val_acc\n  mode: max\n  num_samples: 2\n  seed: 0\n")
    with RaySession() as session:
        run_plan(make_plan(_spec(tmp_path, "grid")), _executor(session, helpers.synthetic))
        assert len(session.warm.pids()) == 2  # holding both CPUs
        plan = make_plan(parse_spec(text, "s.yaml"))
        executor = TuneExecutor(session, name="s", storage_path=str(tmp_path / "ray"),
                                concurrency=2, trial_fn=helpers.synthetic)
        run_plan(plan, executor)
        assert len(_trials(tmp_path / "out" / "s")) == 2
        assert session.warm.pids() == []


_cfg = partial(config, {"group": "Z5", "arch": "mlp", "steps": 30, "eval_every": 10,
                       "seeds": [0, 1], "device": "cpu", "train_frac": 0.6, "model.d": 8,
                       "model.hidden": 16})


def test_a_call_whose_worker_dies_runs_split_so_only_the_culprit_fails(tmp_path):
    """Four tiny configs share one worker call; the Z4 one kills the process every time. The
    other three are written as grokked, the Z4 one fails named after its own retries."""
    from grokray.sweep.session import RaySession

    cfgs = [_cfg(**{"optim.lr": 1e-3 * (1 + i)}) for i in range(3)] + [_cfg(group="Z4")]
    order = [3, 0, 1, 2]  # the culprit first: the others never ran when the worker died
    sink = helpers.Recorder()
    with RaySession() as session:
        _executor(session, helpers.dies_on_z4, retries=1, concurrency=1).run_calls(
            [WorkerCall([cfgs[i] for i in order])], sink)
    helpers.assert_only_the_culprit_failed(sink.outcomes, cfgs[:3], cfgs[3], tries=2)


def test_a_warm_worker_gives_a_trial_the_numbers_a_fresh_one_does(tmp_path):
    """Determinism across reuse: the same config trained (run_trial, real torch) in a fresh
    worker and in a warm one that first trained a different model family gives the same curves
    and per-seed results, bit for bit."""
    from pandas.testing import assert_frame_equal

    from grokray.sweep.session import RaySession

    x = _cfg()
    y = _cfg(group="S3", arch="forge", **{"model.rank": 8, "seeds": [3]})
    results, pids = [], []
    for cfgs in ([x], [y, x]):
        with RaySession() as session:  # fresh workers
            sink = helpers.Recorder()
            _executor(session, None, retries=0, concurrency=1).run_calls([WorkerCall(cfgs)], sink)
            pids.append(session.warm.pids())
        assert all(o.error is None for o in sink.outcomes), [o.error for o in sink.outcomes]
        results.append(next(o.result for o in sink.outcomes
                            if o.config.config_hash() == x.config_hash()))
    assert pids[0] != pids[1]  # two different processes
    fresh, warm = results
    assert_frame_equal(fresh.curves.reset_index(drop=True), warm.curves.reset_index(drop=True),
                       check_exact=True)
    assert [s.__dict__ for s in fresh.seeds] == [s.__dict__ for s in warm.seeds]
    assert len(fresh.curves) == 2 * 4 and fresh.curves["train_loss"].notna().all()  # steps 0-30
