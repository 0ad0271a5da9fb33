"""`grokray recompute`'s parts that need no training: the `--where` syntax, and how the readers
put recomputed rows beside the online curves (which version, which run, who wins)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from grokray import reader
from grokray.errors import GrokrayError
from grokray.sweep.recompute import Filter, parse_where, select_trials


def test_parse_where():
    assert parse_where(["group=S4", "arch!=mlp", "seed=0,1"]) == [
        Filter("group", ("S4",)), Filter("arch", ("mlp",), True), Filter("seed", ("0", "1"))]
    assert parse_where(["model_d = 32"]) == [Filter("model_d", ("32",))]
    for bad in ("group", "=S4", "group=", "group=S4,", "a b=1", "x<=3"):
        with pytest.raises(GrokrayError, match="bad --where"):
            parse_where([bad])


def test_select_trials():
    t = pd.DataFrame({"group": ["S3", "S3", "D4", "A4"], "seed": [0, 1, 0, 2],
                      "optim_lr": [1e-3, 1e-3, 3e-3, 1e-3], "arch": ["mlp", "forge"] * 2})
    assert list(select_trials(t, parse_where(["group=S3,A4", "seed!=1"])).index) == [0, 3]
    assert list(select_trials(t, parse_where(["optim_lr=0.003"])).index) == [2]
    assert list(select_trials(t, parse_where(["seed=2.0"])).index) == [3]  # numerically
    with pytest.raises(GrokrayError, match="no trials column 'colour'; e.g. group, arch, seed"):
        select_trials(t, parse_where(["colour=red"]))
    with pytest.raises(GrokrayError, match="no trials match --where group=Z9 arch=mlp"):
        select_trials(t, parse_where(["group=Z9", "arch=mlp"]))


def _rec(metric, version, rid, run="r1", steps=(0, 10), vals=(1.0, 2.0), col="metric_x"):
    n = len(steps)
    return pd.DataFrame({"schema_version": 4, "sweep": "s", "run_id": run, "config_hash": "h",
                         "seed": 0, "group": "S3", "arch": "mlp", "arm": "mlp",
                         "step": list(steps), "metric": metric, "metric_version": version,
                         "recompute_id": rid, col: list(vals), "file": f"h-{rid}.parquet"}
                        ).iloc[:n]


def test_newest_version_of_the_current_run_beside_online_values_online_wins():
    trials = pd.DataFrame({"config_hash": ["h"], "seed": [0], "run_id": ["r1"],
                           "metric_e": [np.nan]})
    tables = {"m": pd.concat([
        _rec("m", 1, "a", vals=(9.0, 9.0)),                       # an older version
        _rec("m", 2, "b", vals=(1.0, 2.0)),
        _rec("m", 2, "c", steps=(10,), vals=(3.0,)),              # computed twice: newest run
        _rec("m", 3, "d", run="r0", vals=(7.0, 7.0)),             # a run no longer on disk
    ]), "e": _rec("e", 1, "a", col="metric_e", vals=(5.0, 6.0))}
    cur = reader.current_recomputed(tables, trials)
    assert list(cur["m"]["metric_x"]) == [1.0, 3.0] and set(cur["m"]["metric_version"]) == {2}
    curves = pd.DataFrame({"config_hash": "h", "seed": 0, "run_id": "r1", "step": [0, 5, 10],
                           "val_acc": [0.1, 0.5, 1.0], "metric_e": [0.5, np.nan, np.nan]})
    merged = reader.merge_recomputed(curves, cur)
    assert len(merged) == 3 and list(merged["val_acc"]) == [0.1, 0.5, 1.0]
    np.testing.assert_equal(merged["metric_x"].to_numpy(), [1.0, np.nan, 3.0])  # new column
    np.testing.assert_equal(merged["metric_e"].to_numpy(), [0.5, np.nan, 6.0])  # online wins
    filled = reader.fill_trial_metrics(trials, cur)
    assert filled["metric_x"].iloc[0] == 3.0 and filled["metric_e"].iloc[0] == 6.0
    assert np.isnan(trials["metric_e"].iloc[0])  # not modified in place
