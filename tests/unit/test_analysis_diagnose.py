import numpy as np
import pandas as pd
import pytest

from grokray_analysis.atgrok import metric_points, run_points
from grokray_analysis.axiomlead import axiom_leads, emergence
from grokray_analysis.errors import AnalysisError
from grokray_analysis.registry import tables_of
from grokray_analysis.tables import render


def test_emergence_relative_absolute_and_held():
    steps = np.array([0, 100, 200, 300, 400])
    loss = np.array([2.0, 1.0, 0.015, 0.05, 0.001])
    assert emergence(loss, steps, rel=0.01) == 200.0  # 0.015 <= 0.02
    assert emergence(loss, steps, absolute=0.01) == 400.0
    assert np.isnan(emergence(loss, steps, absolute=1e-4))
    # held through step 300: 0.05 > 0.02 at 300, so not held there
    assert np.isnan(emergence(loss, steps, rel=0.01, held_until=300))
    assert emergence(loss, steps, rel=0.01, held_until=200) == 200.0
    assert emergence(loss, steps, rel=0.03, held_until=300) == 200.0
    assert emergence(loss, steps, rel=0.01, held_until=450) == 400.0
    with pytest.raises(ValueError):
        emergence(loss, steps)


def _sweep():
    trials = pd.DataFrame({"config_hash": ["h", "h", "m"], "seed": [0, 1, 0],
                           "arm": ["forge", "forge", "mlp"], "group": "S4",
                           "grok_step": [300.0, np.nan, 200.0]})
    rows = []
    for h, seed, ident in (("h", 0, (2.0, 0.1, 0.03, 0.005)), ("h", 1, (2.0, 0.5, 0.3, 0.2)),
                           ("m", 0, (np.nan,) * 4)):
        for i, step in enumerate((0, 100, 200, 300)):
            rows.append({"config_hash": h, "seed": seed, "step": step, "loss_ident": ident[i],
                         "metric_eff_modes": 10.0 - i + seed})
    return trials, pd.DataFrame(rows)


def test_axiom_leads_table():
    trials, curves = _sweep()
    res = axiom_leads(trials, curves, rel=[0.01, 0.1], absolute=[0.006])
    got = {(c.arm, c.definition): c for c in res.cells}
    assert set(got) == {("forge", "rel=0.01"), ("forge", "rel=0.1"), ("forge", "abs=0.006")}
    assert got["forge", "rel=0.01"].median == 0.0  # 0.005 <= 0.02 first at step 300 = grok
    assert got["forge", "rel=0.1"].median == 200.0  # 0.1 <= 0.2 at step 100
    assert (got["forge", "rel=0.1"].runs, got["forge", "rel=0.1"].grokked) == (2, 1)
    assert got["forge", "abs=0.006"].n == 1 and got["forge", "abs=0.006"].positive == 0
    assert "abs=0.006" in render(tables_of(res), "md")
    with pytest.raises(AnalysisError, match="unknown axiom"):
        axiom_leads(trials, curves, axioms=["closure"])


def test_metric_points_init_grok_end():
    trials, curves = _sweep()
    c = curves[(curves.config_hash == "h") & (curves.seed == 0)]
    assert run_points(c, "metric_eff_modes", 250.0) == (10.0, 8.0, 7.0)
    res = metric_points(trials, curves, ["metric_eff_modes"])
    cells = {c.arm: c for c in res.cells}
    f = cells["forge"]
    assert (f.runs, f.grokked, f.grok_step) == (2, 1, 300.0)
    assert f.init == (10.5, 10.0, 11.0) and f.at_grok == (7.0, 7.0, 7.0)
    assert f.end == (7.5, 7.0, 8.0)
    assert cells["mlp"].at_grok == (8.0, 8.0, 8.0)
    assert "at_grok" in render(tables_of(res), "md")


def test_metric_points_by_arm_is_one_cell_per_arm():
    # `--by arm` names the arm column twice: each cell is one arm, as with --by group here
    trials, curves = _sweep()
    by_group = {c.arm: c for c in metric_points(trials, curves, ["metric_eff_modes"]).cells}
    res = metric_points(trials, curves, ["metric_eff_modes"], by="arm")
    assert res.by == "arm"
    assert {(c.by, c.arm) for c in res.cells} == {("forge", "forge"), ("mlp", "mlp")}
    for c in res.cells:
        assert (c.runs, c.init, c.at_grok, c.end) == (
            by_group[c.arm].runs, by_group[c.arm].init, by_group[c.arm].at_grok,
            by_group[c.arm].end)
