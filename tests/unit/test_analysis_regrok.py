"""Grok steps under another threshold or a coarser eval grid, read from stored curves."""

import numpy as np
import pandas as pd
import pytest

from grokray_analysis.errors import AnalysisError
from grokray_analysis.regrok import redefine


def table():
    # run a: val acc 0.5, 0.96, 0.995 at steps 50, 100, 150 (grokked at 150);
    # run b: 0.2, 0.97, 0.97, 0.98 to step 200 (never reaches 0.99: censored at 200)
    curves = pd.DataFrame({
        "config_hash": ["h"] * 7, "seed": [0, 0, 0, 1, 1, 1, 1],
        "step": [50, 100, 150, 50, 100, 150, 200],
        "val_acc": [0.5, 0.96, 0.995, 0.2, 0.97, 0.97, 0.98]})
    trials = pd.DataFrame({
        "config_hash": ["h", "h"], "seed": [0, 1], "status": ["grokked", "not_grokked"],
        "grok_step": [150.0, np.nan], "grok_step_lo": [100.0, np.nan],
        "steps_run": [150, 200], "steps": [1000, 1000], "eval_every": [50, 50]})
    return trials, curves


def test_threshold_reads_the_first_crossing_and_uncensors_runs_that_reach_it():
    trials, curves = table()
    t = redefine(trials, curves, threshold=0.95)
    assert list(t["grok_step"]) == [100.0, 100.0] and list(t["status"]) == ["grokked"] * 2
    same = redefine(trials, curves, threshold=0.99)
    assert same["grok_step"].iloc[0] == 150 and same["status"].iloc[1] == "not_grokked"
    assert np.isnan(same["grok_step"].iloc[1]) and same["steps_run"].iloc[1] == 200


def test_coarse_grid_rounds_up_and_censors_past_the_budget():
    trials, curves = table()
    g = redefine(trials, curves, grid=500)
    assert g["grok_step"].iloc[0] == 500 and g["grok_step_lo"].iloc[0] == 0
    late = trials.assign(grok_step=[950.0, np.nan])
    assert redefine(late, curves, grid=300)["status"].iloc[0] == "not_grokked"
    with pytest.raises(AnalysisError, match="not a multiple"):
        redefine(trials, curves, grid=120)
