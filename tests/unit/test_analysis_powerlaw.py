import numpy as np
import pandas as pd
import pytest

from analysis.errors import AnalysisError
from analysis.powerlaw import compare_alpha, fit_power_law, power_law_band, scaling

ORDERS = {"Z5": 5, "S3": 6, "D4": 8, "A4": 12, "S4": 24, "A5": 60, "Z97": 97, "S5": 120,
          "A6": 360, "Z1009": 1009}


def synthetic(c: float, alpha: float, sigma: float, seeds: int, arm: str, rng) -> pd.DataFrame:
    rows = []
    for g, n in ORDERS.items():
        for s in range(seeds):
            step = c * n**alpha * np.exp(rng.normal(0.0, sigma))
            rows.append({"group": g, "group_order": n, "seed": s, "arm": arm,
                         "status": "grokked", "grok_step": float(step)})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("medians", [False, True])
def test_known_power_law_recovered_inside_intervals(medians):
    rng = np.random.default_rng(0)
    df = synthetic(732.0, 0.17, 0.15, 12, "forge", rng)
    f = fit_power_law(df, "forge", medians=medians, n_boot=300, seed=1)
    assert f.alpha_ci[0] < 0.17 < f.alpha_ci[1]
    assert f.c_ci[0] < 732.0 < f.c_ci[1]
    assert f.alpha_boot_ci[0] < 0.17 < f.alpha_boot_ci[1]
    assert abs(f.alpha - 0.17) < 0.05 and 0.5 < f.c / 732.0 < 2.0
    assert f.n_groups == 10 and f.n_seeds == 12 and f.n_runs == 120
    assert f.n_points == (10 if medians else 120) and f.n_censored == 0
    assert 0 < f.r2 <= 1 and f.n_boot == 300


def test_statsmodels_numbers_match_numpy_ols():
    rng = np.random.default_rng(3)
    df = synthetic(100.0, 0.5, 0.2, 3, "a", rng)
    f = fit_power_law(df, "a", n_boot=0)
    slope, intercept = np.polyfit(np.log(df["group_order"]), np.log(df["grok_step"]), 1)
    assert f.alpha == pytest.approx(slope) and f.c == pytest.approx(np.exp(intercept))
    assert f.n_boot == 0 and np.isnan(f.alpha_boot_ci[0])


def test_bootstrap_is_seeded():
    df = synthetic(100.0, 0.3, 0.2, 4, "a", np.random.default_rng(5))
    a = fit_power_law(df, "a", n_boot=100, seed=7)
    b = fit_power_law(df, "a", n_boot=100, seed=7)
    c = fit_power_law(df, "a", n_boot=100, seed=8)
    assert a.alpha_boot_ci == b.alpha_boot_ci and a.alpha_boot_ci != c.alpha_boot_ci


def test_censored_runs_counted_not_dropped_silently():
    df = synthetic(100.0, 0.3, 0.1, 3, "a", np.random.default_rng(2))
    big = df["group"] == "Z1009"
    df.loc[big, "status"] = "not_grokked"
    df.loc[big, "grok_step"] = np.nan
    df.loc[(df["group"] == "S5") & (df["seed"] == 0), ["status", "grok_step"]] = [
        "not_grokked", np.nan]
    df.loc[(df["group"] == "Z5") & (df["seed"] == 1), ["status", "grok_step"]] = [
        "diverged", np.nan]
    f = fit_power_law(df, "a", n_boot=0)
    assert f.n_runs == 30 and f.n_censored == 4 and f.n_excluded == 1 and f.n_grokked == 25
    assert f.n_points == 25 and f.censored_groups == ("Z1009",)
    m = fit_power_law(df, "a", medians=True, n_boot=0)
    # S5: 1 of 3 censored -> its median (inf counted) is still finite; Z1009 is lost
    assert m.n_points == 9 and m.censored_groups == ("Z1009",)
    s5 = m.step[m.point_group.index("S5")]
    steps = sorted(df.loc[(df["group"] == "S5") & (df["status"] == "grokked"), "grok_step"])
    assert s5 == pytest.approx(steps[1])  # median of (x1, x2, inf) is x2


def test_alpha_difference_detected_by_interaction_term():
    rng = np.random.default_rng(11)
    df = pd.concat([synthetic(500.0, 0.2, 0.1, 4, "a", rng),
                    synthetic(50.0, 0.6, 0.1, 4, "b", rng),
                    synthetic(80.0, 0.2, 0.1, 4, "c", rng)])
    diff = compare_alpha(df, "a", "b")
    assert diff.p_value < 1e-6 and diff.diff_ci[0] < 0.4 < diff.diff_ci[1]
    same = compare_alpha(df, "a", "c")
    assert same.p_value > 0.05 and same.diff_ci[0] < 0 < same.diff_ci[1]
    fa = fit_power_law(df, "a", n_boot=0)
    assert diff.alpha_a == pytest.approx(fa.alpha)


def test_too_few_points_and_band():
    df = synthetic(100.0, 0.3, 0.1, 1, "a", np.random.default_rng(0)).head(2)
    with pytest.raises(AnalysisError, match="too few points"):
        fit_power_law(df, "a")
    res = scaling(pd.concat([df, synthetic(1.0, 1.0, 0.1, 2, "b", np.random.default_rng(1))]),
                  n_boot=0, skip_unfit=True)
    assert [f.arm for f in res.fits] == ["b"] and res.skipped[0][0] == "a"
    band = power_law_band(res.fits[0])
    assert all(lo <= m <= hi for lo, m, hi in zip(band.lo, band.fit, band.hi, strict=True))
    assert band.order[0] == 5 and band.order[-1] == pytest.approx(1009)
