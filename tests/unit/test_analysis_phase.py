import numpy as np
import pandas as pd
import pytest

from grokray_analysis.errors import AnalysisError
from grokray_analysis.phase import phase_diagram, phase_diagrams

RANKS = (2, 4, 8, 16, 32, 64)
WIDTHS = (4, 8, 16, 32, 64)


def capacity_sweep(threshold: float, slope: float, seeds: int, rng) -> pd.DataFrame:
    rows = []
    for R in RANKS:
        for d in WIDTHS:
            p = 1.0 / (1.0 + np.exp(-slope * (np.log(R * d) - np.log(threshold))))
            for s in range(seeds):
                ok = rng.uniform() < p
                rows.append({"model_rank": R, "model_d": d, "seed": s,
                             "status": "grokked" if ok else "not_grokked",
                             "grok_step": 500.0 if ok else np.nan, "steps_run": 1000})
    return pd.DataFrame(rows)


def test_known_threshold_recovered():
    df = capacity_sweep(256.0, 2.0, 12, np.random.default_rng(0))
    ph = phase_diagram(df)
    assert ph.method == "profile" and ph.arm == "all"
    lo, hi = ph.threshold_ci
    assert lo < 256.0 < hi and lo < ph.threshold < hi
    assert 0.7 < ph.threshold / 256.0 < 1.4
    assert ph.b1 == pytest.approx(2.0, rel=0.35)
    assert ph.n_runs == len(RANKS) * len(WIDTHS) * 12
    assert ph.ranks == RANKS and ph.widths == WIDTHS


def test_cells_counts_and_censored_median():
    df = capacity_sweep(256.0, 2.0, 4, np.random.default_rng(1))
    df.loc[0, "status"] = "failed"
    ph = phase_diagram(df)
    c = ph.cells[0]
    assert (c.rank, c.d, c.n) == (2, 4, 3) and ph.n_failed == 1
    sub = df[(df.model_rank == 64) & (df.model_d == 64)]
    top = ph.cells[-1]
    assert top.k == (sub.status == "grokked").sum() and top.frac == top.k / top.n
    assert all(c.median == np.inf for c in ph.cells if c.frac < 0.5)
    assert all(c.median == 500.0 for c in ph.cells if c.frac > 0.5)


def capacities(cells: dict[int, tuple[int, int]]) -> pd.DataFrame:
    """One cell per capacity R*d (R = 1): {capacity: (grokked, runs)}."""
    return pd.DataFrame([
        {"model_rank": 1, "model_d": c, "seed": s, "status": "grokked" if s < k else
         "not_grokked", "grok_step": 400.0 if s < k else np.nan, "steps_run": 1000}
        for c, (k, n) in cells.items() for s in range(n)])


def test_perfect_separation_interval_holds_the_gap():
    rows = [{"model_rank": R, "model_d": d, "seed": s,
             "status": "grokked" if R * d >= 256 else "not_grokked",
             "grok_step": 400.0 if R * d >= 256 else np.nan, "steps_run": 1000}
            for R in RANKS for d in WIDTHS for s in range(2)]
    ph = phase_diagram(pd.DataFrame(rows))
    assert ph.method == "separation" and ph.gap == pytest.approx((128.0, 256.0))
    # 10 failed runs at 128 and 10 grokked at 256: the profile leaves the gap, no more
    assert ph.threshold_ci == pytest.approx((128.0, 256.0), rel=1e-3)
    assert ph.threshold == pytest.approx(np.sqrt(128.0 * 256.0))


def test_separation_with_few_runs_gets_a_wide_interval():
    # one run per capacity: a clean step between 128 and 256 says little about where it is
    ph = phase_diagram(capacities({c: (int(c >= 256), 1) for c in (32, 64, 128, 256, 512,
                                                                   1024)}))
    lo, hi = ph.threshold_ci
    assert ph.method == "separation" and lo < 100 and hi > 330
    # more runs at the same capacities: the interval shrinks toward the gap
    many = phase_diagram(capacities({c: (8 * int(c >= 256), 8) for c in (32, 64, 128, 256,
                                                                          512, 1024)}))
    assert lo < many.threshold_ci[0] and many.threshold_ci[1] < hi


def test_near_separation_profile_is_honest_where_delta_is_not():
    # 0/4, 1/4, 4/4, 4/4: the MLE exists but the slope is ~31 and its SE enormous
    ph = phase_diagram(capacities({64: (0, 4), 128: (1, 4), 256: (4, 4), 512: (4, 4)}))
    lo, hi = ph.threshold_ci
    assert ph.method == "profile" and ph.b1 > 20
    assert 64 < lo < 128 < hi < 512  # bounded by the data
    assert ph.delta_ci[0] < 1 and ph.delta_ci[1] > 1e6  # the delta method: meaningless


def test_arms_never_mixed_unless_asked():
    a = capacities({64: (0, 2), 128: (0, 2), 256: (2, 2)}).assign(arm="forge")
    b = capacities({64: (0, 2), 128: (2, 2), 256: (2, 2)}).assign(arm="other")
    both = pd.concat([a, b])
    with pytest.raises(AnalysisError, match="several arms"):
        phase_diagram(both)
    res = phase_diagrams(both)
    assert [p.arm for p in res.diagrams] == ["forge", "other"] and not res.pooled
    assert [p.gap for p in res.diagrams] == [pytest.approx((128, 256)), pytest.approx((64, 128))]
    pooled = phase_diagrams(both, pool=True)
    assert pooled.pooled and pooled.diagrams[0].arm == "forge+other"
    assert pooled.diagrams[0].n_runs == 12 and pooled.diagrams[0].method == "profile"
    assert phase_diagram(both, arm="other").gap == pytest.approx((64, 128))


def test_all_agree_and_missing_columns():
    df = capacity_sweep(1.0, 5.0, 1, np.random.default_rng(0))
    df["status"] = "grokked"
    ph = phase_diagram(df)
    assert ph.method == "none" and np.isnan(ph.threshold) and ph.threshold_ci[0] == 0
    assert ph.threshold_ci[1] < 4 * 4  # all 30 cells grokked, the smallest (R*d = 8) too
    none = phase_diagram(capacities({64: (0, 4), 128: (0, 4), 256: (0, 4)}))
    # nothing grokked, 4 runs at 256: were C* <= 256 each would grok with P >= 1/2 (all four
    # failing: <= 1/16), so C* > 256
    assert none.method == "none" and none.threshold_ci == (pytest.approx(256.0), np.inf)
    one = phase_diagram(capacities({64: (0, 1), 128: (0, 1), 256: (0, 1)}))
    assert 64 < one.threshold_ci[0] < 200  # one run each: a weaker bound (about 155)
    with pytest.raises(AnalysisError, match="no column 'model_rank'"):
        phase_diagram(df.drop(columns="model_rank"))
