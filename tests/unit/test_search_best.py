"""A search's best config, read back from its rows (grokray/sweep/best.py), and the line
`grokray sweep` prints when a search ends (here: a search whose samples are all on disk)."""

from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd
import pytest

from grokray.cli import main
from grokray.result import SeedResult, TrialResult
from grokray.sweep import store
from grokray.sweep.best import best_config
from grokray.sweep.spec import parse_spec

SPEC = ("name: s\nout: {out}\nconfig: {{group: Z5, arch: mlp, steps: 1000}}\nseeds: 3\n"
        "search:\n  space: {{optim.lr: {{loguniform: [1.0e-4, 1.0e-1]}}, model.d: "
        "{{choice: [8, 16]}}}}\n  metric: {metric}\n  mode: {mode}\n  num_samples: 3\n"
        "  seed: 0\n")
# (lr, d) -> each seed's (status, grok step, final val acc)
RUNS = {
    (1e-3, 8): [("grokked", 400, 1.0), ("grokked", 600, 1.0), ("not_grokked", None, 0.6)],
    (1e-2, 16): [("grokked", 300, 1.0), ("grokked", 500, 1.0), ("grokked", 700, 1.0)],
    (3e-2, 8): [("grokked", 100, 1.0), ("failed", None, None), ("diverged", None, 0.0)],
}


def _write(out, metric="grok_step", mode="min"):
    spec = parse_spec(SPEC.format(out=out, metric=metric, mode=mode), "s.yaml")
    now = datetime.now(timezone.utc)
    for (lr, d), seeds in RUNS.items():
        cfg = spec.base.with_overrides({"optim.lr": lr, "model.d": d})
        res = [SeedResult(seed=i, data_seed=i, status=st, grok_step=g, steps_run=g or 1000,
                          final={"final_val_acc": acc} if acc is not None else {},
                          error="boom" if st == "failed" else None)
               for i, (st, g, acc) in enumerate(seeds)]
        curves = pd.DataFrame({"seed": [0, 1, 2], "step": 1000, "train_loss": 0.0,
                               "train_acc": 1.0, "val_loss": 1.0, "val_acc": 0.5})
        store.write_result(TrialResult(config=cfg, n_params=1, device="cpu", wall_s=1.0,
                                       started_at=now, finished_at=now, seeds=res,
                                       curves=curves, group_order=5),
                           spec.sweep_dir, sweep="s", run_id=store.new_run_id())
    return spec


def test_best_by_grok_step_counts_censored_seeds_at_the_budget(tmp_path):
    spec = _write(tmp_path)
    best = best_config(store.read_trials(spec.sweep_dir), spec.search)
    # (1e-3, 8): (400 + 600 + 1000) / 3 = 666.7; (1e-2, 16): 500; (3e-2, 8): the failed seed
    # left out, the diverged one at the budget: (100 + 1000) / 2 = 550
    assert best.values == {"optim.lr": 1e-2, "model.d": 16}
    assert best.objective == pytest.approx(500.0)
    assert (best.seeds, best.grokked, best.censored, best.configs) == (3, 3, 0, 3)
    line = best.line()
    assert line.startswith("best of 3 searched configs by grok_step (min): optim.lr=0.01, "
                           "model.d=16 -> grok_step 500 over 3 seeds (3 grokked, 0 censored;")
    assert "counted at the step budget 1,000 (the mean is a lower bound)" in line


def test_best_by_val_acc_and_by_grok_rate(tmp_path):
    spec = _write(tmp_path, "final_val_acc", "max")
    best = best_config(store.read_trials(spec.sweep_dir), spec.search)
    assert best.values == {"optim.lr": 1e-2, "model.d": 16} and best.objective == 1.0
    rate = parse_spec(SPEC.format(out=tmp_path, metric="grok_rate", mode="max"), "s.yaml")
    best = best_config(store.read_trials(spec.sweep_dir), rate.search)
    assert best.objective == 1.0 and best.values["model.d"] == 16
    assert "censored seeds counted as not grokked" in best.line()
    low = best_config(store.read_trials(spec.sweep_dir),
                      parse_spec(SPEC.format(out=tmp_path, metric="grok_rate", mode="min"),
                                 "s.yaml").search)
    # (3e-2, 8): 1 grokked of 2 seeds that ran (the diverged one counts as not grokked)
    assert low.values == {"optim.lr": 3e-2, "model.d": 8} and low.objective == 0.5
    assert (low.seeds, low.grokked, low.censored, low.diverged) == (2, 1, 0, 1)
    assert "1 diverged" in low.line()


def test_a_finished_search_prints_its_best_config(tmp_path, capsys):
    _write(tmp_path)
    (tmp_path / "s.yaml").write_text(SPEC.format(out=tmp_path, metric="grok_step", mode="min"))
    assert main(["sweep", str(tmp_path / "s.yaml"), "--plain"]) == 0
    out = capsys.readouterr().out
    assert "nothing to run" in out
    assert "search s: best of 3 searched configs by grok_step (min): optim.lr=0.01, " \
           "model.d=16 -> grok_step 500" in out
