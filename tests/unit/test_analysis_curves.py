import numpy as np
import pandas as pd
import pytest

from analysis.curves import curve_bands
from analysis.errors import AnalysisError


def curves() -> pd.DataFrame:
    rows = []
    for seed, shift in enumerate((0.0, 0.1, 0.2)):
        for step in (0, 100, 200, 300):
            rows.append({"config_hash": "h", "seed": seed, "arm": "a", "step": step,
                         "val_acc": min(1.0, step / 200 + shift)})
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


def test_errors():
    with pytest.raises(AnalysisError, match="no curves"):
        curve_bands(pd.DataFrame())
    with pytest.raises(AnalysisError, match="arm 'b' not present"):
        curve_bands(curves(), arms=["b"])
