"""Power law fits: the censored log-normal AFT (default) against known truth; the OLS option."""

import numpy as np
import pandas as pd
import pytest

from grokray_analysis.errors import AnalysisError
from grokray_analysis.powerlaw import compare_alpha, fit_power_law, power_law_band, scaling
from grokray_analysis.simulate import simulate

ORDERS = {"Z5": 5, "S3": 6, "D4": 8, "A4": 12, "S4": 24, "A5": 60, "Z97": 97, "S5": 120,
          "A6": 360, "Z1009": 1009}


def synthetic(c: float, alpha: float, sigma: float, seeds: int, arm: str, rng,
              budget: float = np.inf, orders: dict = ORDERS) -> pd.DataFrame:
    """Log-normal grok times c * |G|^alpha * exp(sigma * eps) of the named groups of `orders`,
    censored at `budget` (grokray_analysis.simulate, the simulator the coverage script and the
    grouped interval's tests use)."""
    return simulate(rng, orders, seeds, c=c, alpha=alpha, sigma=sigma, budget=budget, arm=arm)


def test_without_censoring_aft_equals_ols_interval_included():
    rng = np.random.default_rng(0)
    df = synthetic(732.0, 0.17, 0.15, 12, "forge", rng)
    aft = fit_power_law(df, "forge")
    ols = fit_power_law(df, "forge", method="ols", n_boot=300, seed=1)
    assert aft.method == "aft" and ols.method == "ols" and aft.fitted and ols.fitted
    assert aft.alpha == pytest.approx(ols.alpha, abs=1e-5)
    assert aft.alpha_ci == pytest.approx(ols.alpha_ci, abs=1e-4)
    assert aft.c == pytest.approx(ols.c, rel=1e-4)
    assert aft.alpha_ci[0] < 0.17 < aft.alpha_ci[1] and aft.c_ci[0] < 732.0 < aft.c_ci[1]
    assert ols.alpha_boot_ci[0] < 0.17 < ols.alpha_boot_ci[1] and ols.n_boot == 300
    assert np.isnan(aft.r2) and 0 < ols.r2 <= 1 and aft.n_boot == 0
    assert aft.n_groups == 10 and aft.n_seeds == 12 and aft.n_runs == 120


SIM_ORDERS = {"Z5": 5, "D4": 8, "A4": 12, "S4": 24, "A5": 60, "S5": 120}


def test_censored_fit_covers_true_alpha_and_dropping_censored_runs_is_biased():
    # known truth: alpha 0.8, sigma 0.4, budget 3000 steps: the median grok step at |G| = 60 is
    # 2640 and at 120 is 4600, so about 40% and 85% of those runs never grok (censored)
    rng = np.random.default_rng(1)
    cover, cover_ols, a_aft, a_ols, cens = 0, 0, [], [], []
    n_sim = 20
    for _ in range(n_sim):
        df = synthetic(100.0, 0.8, 0.4, 6, "a", rng, budget=3000.0, orders=SIM_ORDERS)
        f = fit_power_law(df, "a")
        o = fit_power_law(df, "a", method="ols", n_boot=0)
        cover += f.alpha_ci[0] < 0.8 < f.alpha_ci[1]
        cover_ols += o.alpha_ci[0] < 0.8 < o.alpha_ci[1]
        a_aft.append(f.alpha)
        a_ols.append(o.alpha)
        cens.append(f.n_censored / f.n_runs)
    assert np.mean(cens) > 0.15  # heavy censoring at the large orders
    assert cover >= 0.9 * n_sim
    assert abs(np.mean(a_aft) - 0.8) < 0.04
    assert np.mean(a_ols) < 0.8 - 0.05  # the drop-the-censored fit is biased down
    assert cover_ols < cover


def test_never_grokked_arm_is_a_row_not_an_error():
    rng = np.random.default_rng(2)
    a = synthetic(100.0, 0.3, 0.1, 3, "a", rng)
    b = synthetic(100.0, 0.3, 0.1, 3, "b", rng).assign(status="not_grokked", grok_step=np.nan,
                                                        steps_run=1000)
    res = scaling(pd.concat([a, b]), methods=("aft", "ols"), n_boot=0, compare=("a", "b"))
    fits = {(f.arm, f.method): f for f in res.fits}
    nb = fits[("b", "aft")]
    assert not nb.fitted and "no run grokked" in nb.reason and np.isnan(nb.alpha)
    assert nb.n_censored == 30 and len(nb.censored_groups) == 10
    assert fits[("a", "aft")].fitted and res.bands[2] is None
    assert res.comparison.reason.startswith("not compared") and np.isnan(res.comparison.p_value)


def test_censored_runs_counted_and_in_the_fit():
    df = synthetic(100.0, 0.3, 0.1, 3, "a", np.random.default_rng(2))
    df["steps_run"] = 5000
    big = df["group"] == "Z1009"
    df.loc[big, ["status", "grok_step"]] = ["not_grokked", np.nan]
    df.loc[(df["group"] == "Z5") & (df["seed"] == 1), ["status", "grok_step"]] = [
        "diverged", np.nan]
    df.loc[(df["group"] == "Z5") & (df["seed"] == 2), ["status", "grok_step"]] = [
        "failed", np.nan]
    f = fit_power_law(df, "a")
    # diverged = censored at the budget; failed = no time
    assert f.n_runs == 30 and f.n_censored == 4 and f.n_excluded == 1 and f.n_grokked == 25
    assert f.n_points == 29 and f.censored_groups == ("Z1009",)
    assert sorted(f.cens_step) == [5000.0] * 4 and len(f.step) == 25
    g = {c.group: c for c in f.groups}
    assert (g["Z1009"].grokked, g["Z1009"].censored, g["Z1009"].median) == (0, 3, np.inf)
    o = fit_power_law(df, "a", method="ols", n_boot=0)
    assert o.n_points == 25 and o.alpha < f.alpha  # the censored fit is pulled up by Z1009
    m = fit_power_law(df, "a", method="ols", medians=True, n_boot=0)
    # Z5: 1 grokked, 1 diverged (+inf), 1 failed (left out): its median is censored too
    assert m.n_points == 8 and set(m.censored_groups) == {"Z1009", "Z5"}
    with pytest.raises(AnalysisError, match="--method ols"):
        fit_power_law(df, "a", medians=True)


def test_alpha_difference_detected_by_interaction_term():
    rng = np.random.default_rng(11)
    df = pd.concat([synthetic(500.0, 0.2, 0.1, 4, "a", rng),
                    synthetic(50.0, 0.6, 0.1, 4, "b", rng),
                    synthetic(80.0, 0.2, 0.1, 4, "c", rng)])
    for method in ("aft", "ols"):
        diff = compare_alpha(df, "a", "b", method=method)
        assert diff.p_value < 1e-6 and diff.diff_ci[0] < 0.4 < diff.diff_ci[1]
        same = compare_alpha(df, "a", "c", method=method)
        assert same.p_value > 0.05 and same.diff_ci[0] < 0 < same.diff_ci[1]
        fa = fit_power_law(df, "a", method=method, n_boot=0)
        assert diff.alpha_a == pytest.approx(fa.alpha, abs=1e-4)


def test_too_few_points_and_band():
    df = synthetic(100.0, 0.3, 0.1, 1, "a", np.random.default_rng(0)).head(2)
    f = fit_power_law(df, "a")
    assert not f.fitted and "need >= 2 grokked runs and >= 2 orders" in f.reason
    res = scaling(pd.concat([df, synthetic(1.0, 1.0, 0.1, 2, "b", np.random.default_rng(1))]))
    assert [f.fitted for f in res.fits] == [False, True] and res.bands[0] is None
    band = power_law_band(res.fits[1])
    assert all(lo <= m <= hi for lo, m, hi in zip(band.lo, band.fit, band.hi, strict=True))
    assert band.order[0] == 5 and band.order[-1] == pytest.approx(1009)
    with pytest.raises(AnalysisError, match="no rows with arm='zz'"):
        fit_power_law(df, "zz")
