import numpy as np
import pandas as pd
import pytest

from grokray_analysis.curves import curve_bands, default_metrics, select_curves
from grokray_analysis.errors import AnalysisError


def curves() -> pd.DataFrame:
    rows = []
    for seed, shift in enumerate((0.0, 0.1, 0.2)):
        for step in (0, 100, 200, 300):
            rows.append({"config_hash": "h", "seed": seed, "arm": "a", "step": step,
                         "val_acc": min(1.0, step / 200 + shift),
                         "train_acc": min(1.0, step / 100 + shift),
                         "val_loss": 2.0 - step / 200})
    return pd.DataFrame(rows)


def test_median_band_and_crossing():
    s = curve_bands(curves())
    b = s.bands[0]
    assert b.n_runs == 3 and b.step == (0.0, 100.0, 200.0, 300.0)
    assert b.median == pytest.approx((0.1, 0.6, 1.0, 1.0))
    assert b.lo == pytest.approx((0.05, 0.55, 1.0, 1.0))
    assert b.hi == pytest.approx((0.15, 0.65, 1.0, 1.0))
    assert b.cross_step == 200.0
    assert np.isnan(curve_bands(curves(), threshold=1.5).bands[0].cross_step)


def test_train_and_val_overlaid_and_no_threshold_on_a_loss():
    s = curve_bands(curves(), metric=default_metrics(curves()) + ("val_loss",))
    assert [(b.arm, b.metric) for b in s.bands] == [("a", "val_acc"), ("a", "train_acc"),
                                                     ("a", "val_loss")]
    assert s.bands[1].cross_step == 100.0
    # val_loss falls from 2 to 0.5; with a threshold of 0.99 read as an accuracy it would
    # "cross" at step 0: a loss gets no threshold at all
    assert np.isnan(s.bands[2].cross_step)


def test_select_curves_keeps_the_selected_seeds():
    c = curves()
    trials = pd.DataFrame({"config_hash": ["h"] * 3, "seed": [0, 1, 2]})
    one = select_curves(c, trials[trials["seed"] == 1], {"seed": "1"})
    assert set(one["seed"]) == {1} and len(one) == 4
    assert select_curves(c, trials, {}) is c


def test_errors():
    with pytest.raises(AnalysisError, match="no curves"):
        curve_bands(pd.DataFrame())
    with pytest.raises(AnalysisError, match="arm 'b' not present"):
        curve_bands(curves(), arms=["b"])
