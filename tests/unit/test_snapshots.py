"""Snapshots: when they are taken, the budget, identity, the store (atomic, repair) and
`grokray.load_model` rebuilding a trained model that answers as it did in training."""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
import pytest
import torch

import grokray
from grokray.config import TrialConfig
from grokray.errors import GrokrayError
from grokray.evals import EvalSchedule
from grokray.sweep import store
from grokray.trial import run_trial
from tests.helpers.configs import config

torch.set_num_threads(1)


_cfg = partial(config, {"group": "Z5", "steps": 300, "eval_every": 10, "seeds": [0, 1],
                        "dtype": "float64", "device": "cpu", "model.d": 8,
                        "model.hidden": 32, "optim.lr": 3e-2,
                        "train_frac": 0.6, "metrics.patience": 3})


def _snaps(r):
    return pd.DataFrame(r.snapshots)


def test_snapshot_steps_tags_and_tensors():
    r = run_trial(_cfg())
    s = _snaps(r)
    state = s[s.tensor.str.startswith("state/")]  # training state: a seed out of budget's end
    s = s[~s.tensor.str.startswith("state/")]
    assert set(s["tensor"]) == {"Ea", "Eb", "W1a", "W1b", "b1", "W2", "b2"}
    ended = {x.seed for x in r.seeds if x.steps_run == 300}
    assert set(state.seed) == ended and state.tags.str.contains("end").all()
    for seed in r.seeds:
        mine = s[s.seed == seed.seed].drop_duplicates("step").set_index("step")["tags"]
        curve_steps = set(r.curves[r.curves.seed == seed.seed]["step"])
        assert set(mine.index) <= curve_steps  # every snapshot has its curve row
        assert mine.loc[0].startswith("init") and "end" in mine.loc[seed.steps_run]
        assert "memorize" in mine.loc[seed.memorize_step]
        if seed.grok_step is not None:
            assert "grok" in mine.loc[seed.grok_step]
        log = [k for k, t in mine.items() if "log" in t]  # first eval at/after 1, 2, 3, 6, 10,
        want = [t for t in (10, 20, 40, 60, 100, 180) if t <= seed.steps_run]  # 18, 32, 56, ...
        assert log == want
    row = s[(s.seed == 0) & (s.step == 0) & (s.tensor == "W2")].iloc[0]
    assert row["shape"] == [32, 5] and row["dtype"] == "float64" and len(row["values"]) == 160


def test_budget_thins_log_steps_and_off_keeps_none():
    full = _snaps(run_trial(_cfg()))
    tiny = _snaps(run_trial(_cfg(**{"snapshots.max_mb": 0.001})))
    assert not tiny["tags"].str.contains("log").any()
    assert {"init", "end"} <= {t for x in tiny["tags"] for t in x.split(",")}
    assert len(tiny) < len(full)
    assert run_trial(_cfg(snapshots="off")).snapshots == []
    only = _snaps(run_trial(_cfg(**{"snapshots.tensors": ["Ea", "Eb"]})))
    assert set(only[~only.tensor.str.startswith("state/")]["tensor"]) == {"Ea", "Eb"}


def test_snapshot_settings_are_not_identity():
    base = _cfg()
    for over in ({"snapshots": "off"}, {"snapshots.per_decade": 9}, {"snapshots.max_mb": 1},
                 {"snapshots.tensors": ["E"]}):
        assert _cfg(**over).config_hash() == base.config_hash()
        assert "snapshots" not in _cfg(**over).canonical()


def test_written_before_trials_repaired_and_model_reloaded(tmp_path):
    cfg = _cfg()
    r = run_trial(cfg)
    h = cfg.config_hash()
    path = store.write_result(r, tmp_path, sweep="s", run_id="20260101T000000Z-aaaa")
    name = path.rsplit("/", 1)[1]
    assert (tmp_path / "snapshots" / name).exists()
    on_disk = pd.read_parquet(tmp_path / "snapshots" / name)  # plain pandas reads it
    assert len(on_disk) == len(r.snapshots) and set(on_disk["config_hash"]) == {h}

    for seed in r.seeds:
        m = grokray.load_model(tmp_path, h, seed.seed)  # the end snapshot
        assert m.step == seed.steps_run and "end" in m.tags
        with torch.no_grad():
            pred = m.model.logits(m.task.a, m.task.b)[0].argmax(-1)  # [N]
        acc = float((pred[m.val] == m.task.y[m.val]).double().mean())
        assert acc == seed.final["final_val_acc"]
        first = grokray.load_model(tmp_path, h, seed.seed, step=0)
        fresh = run_trial(_cfg(seeds=[seed.seed], steps=1)).snapshots  # init again
        w2 = next(x["values"] for x in fresh if x["tensor"] == "W2")
        assert torch.equal(first.model.params["W2"][0].flatten(), torch.from_numpy(w2))
    with pytest.raises(GrokrayError, match=r"at step 7; valid: \[0, 10"):
        grokray.load_model(tmp_path, h, 0, step=7)
    with pytest.raises(GrokrayError, match="no trial nope seed 0"):
        grokray.load_model(tmp_path, "nope", 0)

    # the trials file is the done mark: snapshots without it are removed by repair
    (tmp_path / "trials" / name).unlink()
    removed = store.repair(tmp_path)
    assert removed["orphan_snapshots"] == 1 and removed["orphan_curves"] == 1
    assert not (tmp_path / "snapshots" / name).exists()


def test_superseded_rows_leave_the_snapshots_too(tmp_path):
    cfg = _cfg(steps=20)
    store.write_result(run_trial(cfg), tmp_path, sweep="s", run_id="20260101T000000Z-aaaa")
    store.write_result(run_trial(cfg.with_overrides({"seeds": [1]})), tmp_path, sweep="s",
                       run_id="20260102T000000Z-bbbb")
    assert store.repair(tmp_path)["superseded_rows"] == 1
    s = grokray.load_snapshots(tmp_path)
    assert sorted(set(zip(s["seed"], s["run_id"], strict=True))) == [(0, "20260101T000000Z-aaaa"),
                                                        (1, "20260102T000000Z-bbbb")]


def test_no_snapshots_says_how_to_keep_them(tmp_path):
    cfg = _cfg(steps=20, snapshots="off")
    store.write_result(run_trial(cfg), tmp_path, sweep="s", run_id="20260101T000000Z-aaaa")
    with pytest.raises(GrokrayError, match="run the sweep again with --force"):
        grokray.load_model(tmp_path, cfg.config_hash(), 0)


def test_eval_schedule_steps_cover_the_snapshot_targets():
    steps = EvalSchedule(_cfg(eval_schedule="log")).steps()
    r = run_trial(_cfg(eval_schedule="log", steps=100))
    assert set(_snaps(r)["step"]) <= set(steps)


def test_rfm_keeps_its_feature_matrix_per_iteration(tmp_path):
    cfg = TrialConfig.from_dict({"group": "Z7", "op": "mul", "arch": "rfm", "train_frac": 0.6,
                                 "seeds": [0, 1], "rfm.iters": 12, "device": "cpu"})
    r = run_trial(cfg)
    s = _snaps(r)
    assert set(s["tensor"]) == {"M"} and set(s["seed"]) == {0, 1}
    for seed in r.seeds:
        mine = s[s.seed == seed.seed].set_index("step")
        assert mine["tags"].loc[0].startswith("init") and "end" in mine["tags"].loc[12]
        assert "log" in mine["tags"].loc[10] and mine["shape"].loc[0] == [14, 14]
        assert {t for x in mine["tags"] for t in x.split(",")} >= {"init", "log", "end"}
        end = np.asarray(mine["values"].loc[12]).reshape(14, 14)
        np.testing.assert_array_equal(end, seed.artifacts["M"])
    store.write_result(r, tmp_path, sweep="s", run_id="20260101T000000Z-aaaa")
    back = grokray.load_snapshots(tmp_path, cfg.config_hash(), 1)
    assert len(back) == len(s[s.seed == 1]) and set(back["tensor"]) == {"M"}


def test_the_snapshot_a_metric_reads_is_what_the_registry_states():
    """grokray.snapshots.read.Snapshot has every member of the Protocol a metric function is
    typed against (grokray.metrics.registry.Snapshot), and its model answers as the trial's."""
    import typing

    from grokray.metrics.registry import Snapshot as Stated
    from grokray.snapshots.read import SeedSnapshots, Snapshot

    cfg = _cfg(arch="mlp", seeds=[0])
    r = run_trial(cfg)
    frame = pd.DataFrame(r.snapshots)
    data = SeedSnapshots(cfg, cfg.config_hash(), 0, "run", "s", frame, {})
    snap = Snapshot(data, data.steps[-1])
    members = set(typing.get_type_hints(Stated)) | {
        k for k, v in vars(Stated).items() if callable(v) or isinstance(v, property)}
    members -= {k for k in vars(typing.Protocol)} | {"__init__", "__subclasshook__"}
    assert {"model", "logits", "inputs", "at", "tensors", "steps"} <= members
    for name in members:
        assert hasattr(snap, name), name
    assert snap.logits.shape == (len(snap.task), snap.task.n_out)
    assert snap.at("init").step == 0
