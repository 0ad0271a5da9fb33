"""Grok times as censored durations, and Kaplan-Meier medians checked by hand and against scipy."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from grokray_analysis.errors import AnalysisError
from grokray_analysis.survival import durations, km_median

HAND = [
    # (times, events, KM median by hand)
    ([100, 200, 300], [1, 1, 1], 200.0),  # S: 2/3, 1/3 -> 200
    ([100, 200], [1, 1], 100.0),  # S(100) = 1/2 <= 1/2
    ([100, 200, 300, 400, 1000, 1000], [1, 1, 1, 1, 0, 0], 300.0),  # 5/6 * 4/5 * 3/4 = 1/2
    ([100, 150, 1000, 1000], [1, 0, 0, 0], math.inf),  # S stays 3/4: censored
    ([50, 100, 100, 300, 400], [1, 0, 1, 1, 0], 300.0),  # 4/5, 3/5 (censor at 100), 3/5*1/2 ...
    ([1000, 1000, 1000], [0, 0, 0], math.inf),
]


@pytest.mark.parametrize("t, e, med", HAND)
def test_km_median_by_hand_and_scipy(t, e, med):
    m = km_median(t, e)
    assert m.median == med and m.n == len(t) and m.k == sum(e)
    assert m.censored == math.isinf(med) and m.max_time == max(t)
    if any(e):  # scipy's product-limit estimate gives the same median
        t_, e_ = np.asarray(t, float), np.asarray(e, bool)
        sf = stats.ecdf(stats.CensoredData(uncensored=t_[e_], right=t_[~e_])).sf
        hit = np.flatnonzero(sf.probabilities <= 0.5 + 1e-12)
        assert med == (sf.quantiles[hit[0]] if len(hit) else math.inf)


def test_km_interval_matches_lifelines_band_and_no_event_rule():
    from lifelines import KaplanMeierFitter
    from lifelines.utils import median_survival_times

    t, e = [100, 200, 300, 400, 500, 600, 5000], [1, 1, 1, 1, 1, 1, 0]  # S never exactly 1/2
    m = km_median(t, e)
    ref = KaplanMeierFitter().fit(t, e)
    lo, hi = np.asarray(median_survival_times(ref.confidence_interval_), float).ravel()
    assert (m.lo, m.hi) == (lo, hi) and m.lo <= m.median <= m.hi
    assert m.median == ref.median_survival_time_ == 400.0
    # no event: the band is degenerate; the median > budget is only claimed when 2^-n <= 0.025
    assert km_median([1000] * 5, [0] * 5).lo == 0.0
    assert km_median([1000] * 6, [0] * 6).lo == 1000.0
    assert math.isnan(km_median([], []).median)


def test_durations_censor_at_the_budget():
    df = pd.DataFrame({
        "status": ["grokked", "not_grokked", "diverged", "failed"],
        "grok_step": [300, None, None, None], "steps_run": [400, 1000, 70, 5],
        "steps": [1000, 1000, 1000, 1000],
    })
    d = durations(df)
    assert d["time"].tolist() == [300.0, 1000.0, 1000.0] and d["event"].tolist() == [
        True, False, False]
    with pytest.raises(AnalysisError, match="needs `steps_run` or `steps`"):
        durations(df.drop(columns=["steps_run", "steps"]))
