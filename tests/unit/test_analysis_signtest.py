import numpy as np
import pandas as pd
import pytest
from scipy import stats

from grokray_analysis.errors import AnalysisError
from grokray_analysis.signtest import sign_test


def paired(a: list, b: list, metric: str = "m", group: str = "S3",
           budget: float = 1000.0) -> pd.DataFrame:
    rows = []
    for arm, vals in (("A", a), ("B", b)):
        for s, v in enumerate(vals):
            censored = metric == "grok_step" and v is None
            rows.append({"arm": arm, "seed": s, "group": group, metric: v,
                         "status": "not_grokked" if censored else "grokked",
                         "steps_run": budget})
    df = pd.DataFrame(rows)
    df[metric] = df[metric].astype(float)
    return df


A = [23.1, 24.0, 22.5, 25.3, 21.9, 23.3]
B = [16.2, 15.8, 17.1, 16.0, 15.5, 22.0]


@pytest.mark.parametrize("alt", ["two-sided", "greater", "less"])
def test_p_values_equal_scipy(alt):
    r = sign_test(paired(A, B), "m", "A", "B", alternative=alt)
    assert (r.n_pos, r.n_neg, r.n_ties, r.n_pairs) == (6, 0, 0, 6)
    assert r.p_sign == stats.binomtest(6, 6, 0.5, alternative=alt).pvalue
    w = stats.wilcoxon(np.array(A) - np.array(B), alternative=alt)
    assert r.p_wilcoxon == w.pvalue and r.w_stat == w.statistic


def test_paper_six_of_six_one_sided():
    r = sign_test(paired(A, B), "m", "A", "B", alternative="greater")
    assert r.p_sign == pytest.approx(1 / 64) and r.p_sign < 0.016
    assert sign_test(paired(A, B), "m", "A", "B").p_sign == pytest.approx(2 / 64)


def test_ties_counted_and_left_out():
    a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    b = [1.0, 2.0, 1.0, 1.0, 9.0, 1.0, 1.0]
    r = sign_test(paired(a, b), "m", "A", "B", alternative="greater")
    assert (r.n_pos, r.n_neg, r.n_ties) == (4, 1, 2)
    assert r.p_sign == stats.binomtest(4, 5, 0.5, alternative="greater").pvalue
    d = np.array(a) - np.array(b)
    assert r.p_wilcoxon == stats.wilcoxon(d, alternative="greater").pvalue


def test_censored_pairs_decided_by_order_where_budgets_allow():
    a = [100.0, 200.0, None, None, 300.0]
    b = [None, None, None, 50.0, 400.0]
    r = sign_test(paired(a, b, metric="grok_step"), "grok_step", "A", "B", alternative="less")
    # pairs (budget 1000): 100 < >1000, 200 < >1000, both censored (undecidable), >1000 > 50,
    # 300 < 400
    assert (r.n_pos, r.n_neg, r.n_ties, r.n_undecided, r.n_censored) == (1, 3, 0, 1, 4)
    assert r.p_sign == stats.binomtest(1, 4, 0.5, alternative="less").pvalue
    assert r.n_wilcoxon == 1 and r.median_b == np.inf and r.max_b == 1000.0
    assert r.observed_a == (True, True, False, False, True)


def test_a_grok_after_the_other_budget_is_undecidable():
    df = paired([1500.0, 900.0, 800.0], [None, None, 700.0], metric="grok_step")
    df.loc[(df["arm"] == "A"), "steps_run"] = 2000.0  # A trained longer than B's budget
    r = sign_test(df, "grok_step", "A", "B")
    # 1500 vs B censored at 1000: B may have grokked at 1001..1499 or later: unknown
    assert (r.n_pos, r.n_neg, r.n_undecided) == (1, 1, 1)
    assert r.n_pairs == 3 and r.n_pos + r.n_neg + r.n_ties + r.n_undecided == r.n_pairs


def test_nothing_decidable_is_a_row_with_p_1():
    r = sign_test(paired([None, None], [None, None], metric="grok_step"), "grok_step", "A", "B")
    assert (r.n_pairs, r.n_undecided, r.p_sign) == (2, 2, 1.0) and np.isnan(r.p_wilcoxon)


def test_unpaired_and_missing_counted():
    df = paired([1.0, 2.0, np.nan, 4.0], [0.0, 1.0, 1.0])
    r = sign_test(df, "m", "A", "B")
    assert r.n_pairs == 2 and r.n_missing == 2  # seed 2 value missing, seed 3 has no partner


def test_errors():
    df = paired(A, B)
    with pytest.raises(AnalysisError, match="arm 'C' not present"):
        sign_test(df, "m", "A", "C")
    with pytest.raises(AnalysisError, match="no column 'x'"):
        sign_test(df, "x", "A", "B")
    with pytest.raises(AnalysisError, match="alternative"):
        sign_test(df, "m", "A", "B", alternative="bigger")
    dup = pd.concat([df, df])
    with pytest.raises(AnalysisError, match="several runs per"):
        sign_test(dup, "m", "A", "B")
    two_groups = pd.concat([paired(A, B), paired(B, A, group="D4")])
    r = sign_test(two_groups, "m", "A", "B")
    assert r.n_pairs == 12 and (r.n_pos, r.n_neg) == (6, 6) and r.p_sign == 1.0
