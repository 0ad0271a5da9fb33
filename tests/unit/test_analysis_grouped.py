"""The power law's intervals with the group as the unit: the fast censored fit against lifelines,
and coverage on known truth with group effects (grok step c |G|^alpha exp(u_group + e_run))."""

import numpy as np
import pandas as pd
import pytest

from grokray_analysis import tobit
from grokray_analysis.grouped import group_interval
from grokray_analysis.powerlaw import _aft, compare_alpha, fit_power_law
from grokray_analysis.simulate import arrays, budget_for, label, simulate

LEDGER = (6, 8, 8, 12, 12, 12, 18, 21, 24, 27, 60, 97, 120)  # the CPU ledger's 13 orders
PAPER = LEDGER + (125, 168, 360, 660, 720, 1009, 2520)  # the 20-group scaling family
TRUTH = {"c": 732.0, "group_sd": 0.3, "sigma": 0.2}  # the benchmark's group and run effects


def sim(rng, orders, seeds, alpha, budget) -> pd.DataFrame:
    return simulate(rng, orders, seeds, alpha=alpha, budget=budget, **TRUTH)


def test_fast_censored_fit_equals_lifelines_and_weights_equal_copies():
    df = sim(np.random.default_rng(0), LEDGER, 5, 0.3, 1700.0)
    x, y, ev, g = arrays(df)
    assert 0.2 < 1 - ev.mean() < 0.8  # real censoring
    X = np.column_stack([np.ones_like(x), x])
    f = tobit.fit(X, y, ev)
    ref = _aft(pd.DataFrame({"T": np.exp(y), "E": ev, "log_order": x}))
    names = [("mu_", "Intercept"), ("mu_", "log_order")]
    assert f.ok and f.beta == pytest.approx(ref.params_.loc[names].to_numpy(), abs=1e-6)
    assert f.sigma == pytest.approx(np.exp(ref.params_.loc[("sigma_", "Intercept")]), rel=1e-6)
    V = tobit.covariance(f, X, y, ev)[:2, :2]
    assert V == pytest.approx(ref.variance_matrix_.loc[names, names].to_numpy(), rel=1e-4)
    # a weight of 2 is the run twice; a weight of 0 is the run left out
    g3, g5 = label(3, LEDGER[3]), label(5, LEDGER[5])
    w = np.where(g == g3, 2.0, np.where(g == g5, 0.0, 1.0))
    fw = tobit.fit_many(X, y, ev, w[None, :])
    rows = np.concatenate([np.arange(len(y)), np.flatnonzero(g == g3)])
    rows = rows[g[rows] != g5]
    fc = tobit.fit(X[rows], y[rows], ev[rows])
    assert fw.beta[0] == pytest.approx(fc.beta, abs=1e-8)


def test_cluster_sandwich_is_the_jackknife_size_and_not_the_per_run_one():
    # with a group effect the runs of a group move together: the per-run variance is too small
    df = sim(np.random.default_rng(4), PAPER, 5, 0.17, np.inf)
    x, y, ev, g = arrays(df)
    run = group_interval(x, y, ev, g, "per-run")
    clu = group_interval(x, y, ev, g, "cluster")
    jk = group_interval(x, y, ev, g, "jackknife")
    assert clu.coef == pytest.approx(run.coef)  # same estimate, another interval
    w_run, w_clu, w_jk = (r.hi[1] - r.lo[1] for r in (run, clu, jk))
    assert w_clu > 1.5 * w_run and 0.6 < w_clu / w_jk < 1.2
    assert clu.q == pytest.approx(2.1009, abs=1e-3)  # t_{18}, 20 groups


SCENARIOS = [  # (orders, seeds, alpha, share censored)
    (LEDGER, 5, 0.17, 0.2),  # the ledger's shape
    (LEDGER, 3, 0.5, 0.4),
    (PAPER, 3, 0.8, 0.5),  # more censoring than the benchmark's grid
    (PAPER, 5, 0.0, 0.3),  # no slope at all
]


def coverage(orders, seeds, alpha, share, n, method, seed):
    rng = np.random.default_rng(seed)
    budget = budget_for(share, orders, alpha=alpha, **TRUTH)
    hits = 0
    for _ in range(n):
        r = group_interval(*arrays(sim(rng, orders, seeds, alpha, budget)), method)
        hits += r.lo[1] < alpha < r.hi[1]
    return hits / n


@pytest.mark.parametrize("orders, seeds, alpha, share", SCENARIOS)
def test_group_interval_covers_true_alpha_with_group_effects(orders, seeds, alpha, share):
    # 120 data sets per scenario: a true coverage of 0.92 falls below 0.85 with chance < 1%
    assert coverage(orders, seeds, alpha, share, 120, "cluster", 7) >= 0.85


def test_per_run_interval_undercovers_with_group_effects():
    # the check the group interval must pass can fail: the per-run interval does
    assert coverage(LEDGER, 5, 0.17, 0.2, 120, "per-run", 7) < 0.85


@pytest.mark.slow
@pytest.mark.parametrize("orders", [LEDGER, PAPER])
@pytest.mark.parametrize("seeds", [3, 5])
@pytest.mark.parametrize("share", [0.0, 0.4])
def test_group_interval_coverage_grid(orders, seeds, share):
    for alpha in (0.17, 0.5):
        assert coverage(orders, seeds, alpha, share, 300, "cluster", 11) >= 0.87


def test_default_fit_reports_the_group_interval_and_the_per_run_one_beside_it():
    df = sim(np.random.default_rng(3), LEDGER, 5, 0.17, 1500.0)
    f = fit_power_law(df, "a")
    clu = group_interval(*arrays(df), "cluster")
    assert f.interval == "group" and f.alpha_ci == pytest.approx(tuple(clu.lo[1:]) +
                                                                 tuple(clu.hi[1:]), abs=1e-5)
    assert f.c_ci == pytest.approx(tuple(np.exp([clu.lo[0], clu.hi[0]])), rel=1e-5)
    p = fit_power_law(df, "a", interval="per-run")
    assert p.alpha_ci == f.alpha_run_ci and p.alpha == f.alpha
    b = fit_power_law(df, "a", interval="group-bootstrap", n_boot=400, seed=2)
    assert b.n_boot >= 360 and b.alpha_ci[0] < f.alpha < b.alpha_ci[1]
    # two groups: no group interval, the fit is still made and says why
    full = sim(np.random.default_rng(3), LEDGER, 5, 0.17, np.inf)
    ends = [label(0, LEDGER[0]), label(12, LEDGER[12])]
    two = fit_power_law(full[full["group"].isin(ends)], "a")
    assert two.fitted and np.isnan(two.alpha_ci[0]) and "needs >= 3" in two.note


def test_ols_group_interval_clusters_runs_and_medians_are_already_groups():
    df = sim(np.random.default_rng(5), LEDGER, 5, 0.3, np.inf)
    o = fit_power_law(df, "a", method="ols", n_boot=0)
    assert o.alpha_ci[1] - o.alpha_ci[0] > 1.3 * (o.alpha_run_ci[1] - o.alpha_run_ci[0])
    m = fit_power_law(df, "a", method="ols", medians=True, n_boot=0)
    assert m.alpha_ci == m.alpha_run_ci


def two_arms(rng, shared: bool) -> pd.DataFrame:
    """Arms a and b with the same slope 0.2 over the ledger's orders; each arm's groups carry an
    effect (sd 0.3), the same in both arms when `shared`."""
    u = rng.normal(0, 0.3, len(LEDGER))
    arms = []
    for arm in ("a", "b"):
        v = u if shared else rng.normal(0, 0.3, len(LEDGER))
        arms.append(pd.DataFrame([
            {"group": label(j, o), "group_order": float(o), "seed": s, "arm": arm,
             "status": "grokked", "steps_run": 1e9,
             "grok_step": 732 * o**0.2 * np.exp(v[j] + 0.1 * rng.normal())}
            for j, o in enumerate(LEDGER) for s in range(5)]))
    return pd.concat(arms)


def test_comparison_clusters_groups_across_arms():
    # equal slopes, independent group effects per arm: the per-run test finds a difference far
    # too often (it counts 65 runs per arm, not 13 groups), the group one at about its level
    rng = np.random.default_rng(9)
    n = 100
    rej_run = rej_grp = 0
    for _ in range(n):
        df = two_arms(rng, shared=False)
        rej_run += compare_alpha(df, "a", "b", method="ols", interval="per-run").p_value < 0.05
        rej_grp += compare_alpha(df, "a", "b", method="ols").p_value < 0.05
    assert rej_grp <= 0.12 * n and rej_run >= 0.3 * n
    # aft: the same estimate, the group interval wider than the per-run one here
    df = two_arms(np.random.default_rng(1), shared=False)
    g = compare_alpha(df, "a", "b")
    r = compare_alpha(df, "a", "b", interval="per-run")
    assert g.diff == r.diff and g.interval == "group" and r.interval == "per-run"
    assert g.diff_ci[1] - g.diff_ci[0] > 1.5 * (r.diff_ci[1] - r.diff_ci[0])


def test_pooled_rate_interval_counts_groups_and_median_resamples_within_groups():
    from grokray_analysis.intervals import clopper_pearson, group_rate_ci, median_ci

    # every run of 13 groups grokked: as informative as 13 observations, not 65
    assert group_rate_ci(65, 65, 13) == pytest.approx(clopper_pearson(13, 13))
    assert group_rate_ci(0, 9, 3) == pytest.approx(clopper_pearson(0, 3))
    assert group_rate_ci(7, 9, 1) == clopper_pearson(7, 9)  # one group: its seeds
    lo, hi = group_rate_ci(30, 60, 6)
    r_lo, r_hi = clopper_pearson(30, 60)
    assert lo < r_lo < 0.5 < r_hi < hi
    # two groups, 5 runs at 0 and 6 at 10: within-group resamples always hold six 10s
    x = np.array([0.0] * 5 + [10.0] * 6)
    g = np.array(["a"] * 5 + ["b"] * 6)
    assert median_ci(x, strata=g) == (10.0, (10.0, 10.0))
    assert median_ci(x)[1][0] == 0.0  # pooled resamples lose the groups' shares


def test_clopper_pearson_all_is_clopper_pearson_for_every_count():
    from grokray_analysis.intervals import clopper_pearson, clopper_pearson_all

    for n in (1, 2, 9, 36):
        every = clopper_pearson_all(n)
        assert len(every) == n + 1
        for k, interval in enumerate(every):
            assert interval == pytest.approx(clopper_pearson(k, n), abs=1e-9)
