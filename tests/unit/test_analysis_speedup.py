import math

import numpy as np
import pandas as pd
import pytest

from analysis.errors import AnalysisError
from analysis.speedup import ablation_order, speedup_table


def runs(group: str, arm: str, steps: list, budget: int = 15000) -> list[dict]:
    out = []
    for s, v in enumerate(steps):
        status = "grokked" if isinstance(v, (int, float)) else v
        out.append({"group": group, "arm": arm, "seed": s, "status": status,
                    "grok_step": float(v) if status == "grokked" else np.nan,
                    "steps_run": budget if status != "diverged" else 10})
    return out


def frame() -> pd.DataFrame:
    rows = (
        runs("Z97", "mlp", [10000, 10200, 9800])
        + runs("Z97", "mlp+grokfast", [11600, 11800, 12000])
        + runs("Z97", "forge+grokfast", [1000, 980, 1020])
        + runs("Z97", "forge", [3000, "failed", 3100])
        + runs("S3", "mlp", ["not_grokked"] * 3)
        + runs("S3", "forge", [1000, 1500, "not_grokked"])
        + runs("S3", "forge+grokfast", [500, "diverged", "not_grokked"])
    )
    return pd.DataFrame(rows)


def test_medians_rates_and_speedups():
    t = speedup_table(frame(), "mlp", n_boot=200, seed=0)
    assert t.arms == ("mlp", "mlp+grokfast", "forge", "forge+grokfast")
    cell = {(r.group, r.arm): r for r in t.rows}
    z = cell[("Z97", "forge+grokfast")]
    assert (z.k, z.n, z.median) == (3, 3, 1000.0)
    assert z.speedup == pytest.approx(10.0) and z.speedup_ci[0] <= 10.0 <= z.speedup_ci[1]
    g = cell[("Z97", "mlp+grokfast")]
    assert g.speedup == pytest.approx(10000 / 11800)
    f = cell[("Z97", "forge")]
    assert (f.k, f.n, f.n_failed) == (2, 2, 1) and f.median == 3050.0
    # S3: the baseline never grokked -> lower bound with the budget
    s = cell[("S3", "forge")]
    assert s.lower_bound and s.median == 1500.0 and s.speedup == pytest.approx(15000 / 1500)
    assert math.isnan(s.speedup_ci[0])
    # diverged counts as never grokked: 1 of 3 grokked -> censored median
    d = cell[("S3", "forge+grokfast")]
    assert (d.k, d.n) == (1, 3) and d.median == math.inf and math.isnan(d.speedup)
    m = cell[("S3", "mlp")]
    assert m.k == 0 and m.median == math.inf


def test_bootstrap_seeded_and_errors():
    a = speedup_table(frame(), "mlp", n_boot=100, seed=3)
    b = speedup_table(frame(), "mlp", n_boot=100, seed=3)
    assert repr(a) == repr(b)  # NaN-aware equality
    with pytest.raises(AnalysisError, match="arm 'gpt' not present"):
        speedup_table(frame(), "gpt")


def test_ablation_order():
    assert ablation_order(["forge", "zeta", "mlp", "alpha", "forge+grokfast"]) == (
        "mlp", "forge", "forge+grokfast", "alpha", "zeta")
