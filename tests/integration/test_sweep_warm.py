"""Warm trial workers (grokray.sweep.pool) on a real embedded Ray: the same processes serve two
sweeps, each config is written once with its own result, a raising config fails alone, a worker
whose process dies is replaced and its trials run again (or fail, named, when the retries are
spent), and a Tune search after a warm sweep gets the CPUs back."""

from __future__ import annotations

import os
import sys

import pandas as pd
import pytest

ray = pytest.importorskip("ray")

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import _sweep_helpers as helpers  # noqa: E402
from _sweep_helpers import ray_session  # noqa: E402, F401  (module-scoped fixture)

pytestmark = pytest.mark.usefixtures("ray_session")
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # its trial functions


def _trials(out: str) -> pd.DataFrame:
    files = sorted(p for p in (out / "trials").glob("*.parquet"))
    return pd.concat(pd.read_parquet(p) for p in files)


def _spec(tmp_path, name, groups=("Z5", "S3", "Z4")):
    from grokray.sweep.spec import load_spec

    text = helpers.tiny_spec(tmp_path, groups=groups, name=f"{name}.yaml").read_text()
    path = tmp_path / f"{name}.yaml"
    path.write_text(text.replace("name: tiny", f"name: {name}"))
    return load_spec(path)


def _backend(tmp_path, trial_fn, retries=1, keep_warm=True):
    from grokray.sweep.backend import RayBackend

    return RayBackend(name="warm", storage_path=str(tmp_path / "ray"), concurrency=2,
                      retries=retries, trial_fn=trial_fn, warm=True, keep_warm=keep_warm)


def test_the_same_workers_serve_two_sweeps_and_each_config_is_written_once(tmp_path):
    from grokray.sweep import pool
    from grokray.sweep.runner import make_plan, run_plan

    pids = []
    for name in ("a", "b"):
        spec = _spec(tmp_path, name)
        plan = make_plan(spec)
        writer = run_plan(plan, _backend(tmp_path, helpers.synthetic))
        pids.append(sorted(pool.warm_pids()))
        t = _trials(tmp_path / "out" / name)
        assert len(t) == 3 * 2 * 2 and t.groupby(["config_hash", "seed"]).size().eq(1).all()
        assert set(t["config_hash"]) == {c.config_hash() for c in plan.todo}
        assert (t[t["group"] == "S3"]["status"] == "failed").all()
        assert t[t["group"] == "S3"]["error"].str.contains("boom: S3 is cursed").all()
        assert (t[t["group"] != "S3"]["status"] == "grokked").all()
        assert {o.node_id for o in writer.outcomes} == {ray.get_runtime_context().get_node_id()}
    assert pids[0] == pids[1] and len(pids[0]) == 2 and os.getpid() not in pids[0]

    with _backend(tmp_path, helpers.synthetic, keep_warm=False):
        pass  # leaving a backend that does not keep them stops the warm workers
    assert pool.warm_pids() == []


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
    from grokray.sweep import pool
    from grokray.sweep.runner import make_plan, run_plan

    spec = _spec(tmp_path, f"die{retries}")
    before = set(pool.warm_pids())
    run_plan(make_plan(spec), _backend(tmp_path, _dying(str(tmp_path / "died")),
                                       retries=retries))
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
    after = set(pool.warm_pids())
    assert len(after) == 2 and len(after - before) >= 1  # the dead one was replaced


def test_a_tune_search_after_a_warm_sweep_gets_the_cpus(tmp_path):
    from grokray.sweep import pool
    from grokray.sweep.backend import RayBackend
    from grokray.sweep.runner import make_plan, run_plan
    from grokray.sweep.spec import parse_spec

    run_plan(make_plan(_spec(tmp_path, "grid")), _backend(tmp_path, helpers.synthetic))
    assert len(pool.warm_pids()) == 2  # holding both CPUs
    text = (f"name: s\nout: {tmp_path / 'out'}\nconfig: {{group: Z5, arch: mlp}}\nseeds: 1\n"
            "steps: 10\nsearch:\n  space: {optim.lr: {loguniform: [1.0e-4, 1.0e-1]}}\n"
            "  metric: final_val_acc\n  mode: max\n  num_samples: 2\n  seed: 0\n")
    plan = make_plan(parse_spec(text, "s.yaml"))
    backend = RayBackend(name="s", storage_path=str(tmp_path / "ray"), concurrency=2,
                         trial_fn=helpers.synthetic, warm=True)
    run_plan(plan, backend)
    assert len(_trials(tmp_path / "out" / "s")) == 2
    assert pool.warm_pids() == []
