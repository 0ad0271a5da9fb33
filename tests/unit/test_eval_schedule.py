"""`eval_schedule: fixed | log`: the eval steps, the identity (fixed hashes as before log
existed), the grok step's bracket in the trials table, and the bracket's medians."""

from functools import partial

import numpy as np
import pandas as pd
import pytest
import torch

from grokray.config import TrialConfig
from grokray.errors import ConfigError
from grokray.evals import EvalSchedule, log_steps
from grokray.metrics.grokking import GrokDetector
from grokray.schema import trial_frame
from grokray.trial import run_trial
from grokray_analysis.survival import durations, km_median, median_bracket
from tests.helpers.configs import config

torch.set_num_threads(1)


def test_fixed_steps_are_every_eval_every_and_the_last():
    cfg = TrialConfig.from_dict({"steps": 250, "eval_every": 100})
    assert EvalSchedule(cfg).steps() == [0, 100, 200, 250]
    assert 200 in EvalSchedule(cfg) and 150 not in EvalSchedule(cfg)


def test_log_steps_are_geometric():
    s = sorted(log_steps(15000, 20))
    assert s[:12] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] and s[-1] == 15000
    assert 1000 in s and 10000 in s and len(s) == 75
    ratios = np.array(s[40:-1][1:]) / np.array(s[40:-1][:-1])  # past 100: ~10^(1/20) apart
    assert ratios == pytest.approx(10 ** 0.05, rel=0.01)
    cfg = TrialConfig.from_dict({"steps": 1000, "eval_schedule": "log", "evals_per_decade": 4})
    assert EvalSchedule(cfg).steps() == [0, 1, 2, 3, 6, 10, 18, 32, 56, 100, 178, 316, 562, 1000]


def test_identity_fixed_as_before_log_distinct():
    base = TrialConfig.from_dict({"group": "S3"})
    assert "eval_schedule" not in base.canonical() and base.canonical()["eval_every"] == 100
    same = TrialConfig.from_dict({"group": "S3", "eval_schedule": "fixed",
                                  "evals_per_decade": 7})
    assert same.config_hash() == base.config_hash()
    log = TrialConfig.from_dict({"group": "S3", "eval_schedule": "log"})
    assert log.config_hash() != base.config_hash()
    assert "eval_every" not in log.canonical()  # a log schedule does not read it
    assert log.config_hash() == log.with_overrides({"eval_every": 7}).config_hash()
    assert log.config_hash() != log.with_overrides({"evals_per_decade": 10}).config_hash()
    again = TrialConfig.from_dict(__import__("json").loads(log.canonical_json()))
    assert again.config_hash() == log.config_hash()


def test_log_is_refused_where_the_family_keeps_its_own_schedule():
    with pytest.raises(ConfigError, match="eval_schedule log is for the gradient-trained"):
        TrialConfig.from_dict({"arch": "rfm", "eval_schedule": "log"})
    with pytest.raises(ConfigError, match="valid: fixed, log"):
        TrialConfig.from_dict({"eval_schedule": "geometric"})


def test_detector_brackets_the_grok_step():
    d = GrokDetector(0.9, 0.9, patience=0)
    for step, va in [(0, 0.1), (10, 0.5), (20, 0.95), (30, 0.5), (40, 0.99)]:
        t = d.update(0, step, 1.0, va)
    assert (t.grok_step_lo, t.grok_step) == (10, 20)
    first = GrokDetector(0.9, 0.9).update(1, 0, 1.0, 1.0)
    assert (first.grok_step_lo, first.grok_step) == (None, 0)


_cfg = partial(config, {"group": "Z7", "arch": "forge", "steps": 300, "seeds": [0, 1],
                        "dtype": "float64", "device": "cpu", "model.d": 8,
                        "model.rank": 8, "forge.inv_hidden": 8,
                        "optim.lr": 3e-2, "metrics.patience": 3,
                        "train_frac": 0.6})


def test_trainer_evaluates_on_the_log_schedule_and_records_the_bracket():
    cfg = _cfg(eval_schedule="log", evals_per_decade=10)
    r = run_trial(cfg)
    sched = sorted(log_steps(300, 10))
    for s in r.seeds:
        steps = r.curves[r.curves.seed == s.seed]["step"].tolist()
        assert steps == sched[:len(steps)]
        assert steps[-1] == s.steps_run
        if s.status == "grokked":
            assert s.grok_step_lo == sched[sched.index(s.grok_step) - 1]
            below = r.curves[(r.curves.seed == s.seed) & (r.curves.step == s.grok_step_lo)]
            assert float(below["val_acc"].iloc[0]) < cfg.metrics.grok_threshold
            if s.ungrok_step is None:  # patience 3 counts evals: stopped 3 evals after it
                assert s.steps_run == sched[sched.index(s.grok_step) + 3]
    assert [(s.grok_step_lo, s.grok_step) for s in r.seeds] == [(25, 32), (25, 32)]
    t = trial_frame(r, "x", "r")
    assert t["grok_step_lo"].dtype == "Int64" and set(t["eval_schedule"]) == {"log"}


def test_fixed_schedule_curves_unchanged_by_the_new_fields():
    a = run_trial(_cfg(steps=60, eval_every=20)).curves
    b = run_trial(_cfg(steps=60, eval_every=20, evals_per_decade=3)).curves
    assert set(a["step"]) == {0, 20, 40, 60}
    assert a.equals(b)


def test_durations_lower_ends_and_median_bracket():
    trials = pd.DataFrame({
        "status": ["grokked", "grokked", "grokked", "not_grokked", "failed"],
        "grok_step": [200.0, 300.0, 400.0, np.nan, np.nan],
        "grok_step_lo": [100.0, np.nan, 300.0, np.nan, np.nan],
        "steps_run": [250, 350, 450, 1000, 5], "steps": 1000})
    d = durations(trials)
    assert d["time_lo"].tolist() == [100.0, 300.0, 300.0, 1000.0]  # unknown lo: the step
    assert median_bracket(d) == (300.0, 300.0)
    d2 = durations(trials.assign(grok_step_lo=[100.0, 200.0, 300.0, np.nan, np.nan]))
    assert median_bracket(d2) == (200.0, 300.0)
    older = durations(trials.drop(columns="grok_step_lo"))  # tables before the bracket
    assert (older["time_lo"] == older["time"]).all()


def test_bracket_medians_bound_the_median_when_censored_at_the_budget():
    """With every censored run at the budget, any grok times inside the brackets give a KM
    median between the medians of the lower and the upper ends; with a censoring time among
    the grok steps they need not (the module doc's caveat)."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(3, 12))
        event = rng.random(n) < 0.7
        hi = np.where(event, rng.integers(2, 20, n) * 10.0, 1000.0)
        lo = np.where(event, hi - rng.integers(0, 3, n) * 10, hi)
        true = lo + rng.random(n) * (hi - lo)
        m_lo, m, m_hi = (km_median(x, event).median for x in (lo, true, hi))
        assert m_lo <= m <= m_hi
    hi, lo = np.array([160.0, 30, 60, 120, 40, 80, 70, 120, 150]), np.array(
        [140.0, 30, 40, 120, 20, 80, 60, 120, 130])
    event = np.array([1, 0, 1, 1, 1, 1, 1, 1, 1], bool)  # censored at 30, among the groks
    assert km_median(lo, event).median == 120.0 > km_median(hi, event).median == 80.0
