import numpy as np
import pandas as pd
import pytest

from analysis.errors import AnalysisError
from analysis.phase import phase_diagram

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
                             "grok_step": 500.0 if ok else np.nan})
    return pd.DataFrame(rows)


def test_known_threshold_recovered():
    df = capacity_sweep(256.0, 2.0, 12, np.random.default_rng(0))
    ph = phase_diagram(df)
    assert ph.method == "logit"
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


def test_perfect_separation_gives_bracket():
    rows = [{"model_rank": R, "model_d": d, "seed": s,
             "status": "grokked" if R * d >= 256 else "not_grokked",
             "grok_step": 400.0 if R * d >= 256 else np.nan}
            for R in RANKS for d in WIDTHS for s in range(2)]
    ph = phase_diagram(pd.DataFrame(rows))
    assert ph.method == "separation"
    assert ph.threshold_ci == (128.0, 256.0)
    assert ph.threshold == pytest.approx(np.sqrt(128.0 * 256.0))


def test_all_agree_and_missing_columns():
    df = capacity_sweep(1.0, 5.0, 1, np.random.default_rng(0))
    df["status"] = "grokked"
    ph = phase_diagram(df)
    assert ph.method == "none" and np.isnan(ph.threshold)
    with pytest.raises(AnalysisError, match="no column 'model_rank'"):
        phase_diagram(df.drop(columns="model_rank"))
