import math

import numpy as np
import pandas as pd
import pytest

from grokray_analysis.errors import AnalysisError
from grokray_analysis.speedup import ablation_order, speedup_table


def runs(group: str, arm: str, steps: list, budget: int = 15000) -> list[dict]:
    out = []
    for s, v in enumerate(steps):
        status = "grokked" if isinstance(v, (int, float)) else v
        out.append({"group": group, "arm": arm, "seed": s, "status": status,
                    "grok_step": float(v) if status == "grokked" else np.nan,
                    "steps": budget, "steps_run": budget if status != "diverged" else 10})
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
        + runs("A4", "mlp", [2000, 2100, 2200])
        + runs("A4", "forge", [100, "not_grokked", "not_grokked"])
    )
    return pd.DataFrame(rows)


def test_km_medians_rates_and_speedups():
    t = speedup_table(frame(), "mlp")
    assert t.arms == ("mlp", "mlp+grokfast", "forge", "forge+grokfast")
    cell = {(r.group, r.arm): r for r in t.rows}
    z = cell[("Z97", "forge+grokfast")]
    assert (z.k, z.n, z.median, z.kind) == (3, 3, 1000.0, "estimate")
    assert z.speedup == pytest.approx(10.0) and z.speedup_ci[0] <= 10.0 <= z.speedup_ci[1]
    g = cell[("Z97", "mlp+grokfast")]
    assert g.speedup == pytest.approx(10000 / 11800)
    f = cell[("Z97", "forge")]
    # KM median of two grokked runs is the smaller one (S drops to 1/2 there)
    assert (f.k, f.n, f.n_failed) == (2, 2, 1) and f.median == 3000.0
    # S3: the baseline never grokked -> a lower bound: largest budget / the arm's median
    s = cell[("S3", "forge")]
    assert s.kind == "lower" and s.lower_bound and s.median == 1500.0
    assert s.speedup == pytest.approx(15000 / 1500) and s.speedup_ci[1] == math.inf
    # diverged = never grokked within the budget: 1 of 3 grokked -> censored median, and the
    # baseline's is censored too: no speedup, said so
    d = cell[("S3", "forge+grokfast")]
    assert (d.k, d.n) == (1, 3) and d.median == math.inf and d.max_time == 15000.0
    assert d.kind == "none" and math.isnan(d.speedup)
    m = cell[("S3", "mlp")]
    assert m.k == 0 and m.median == math.inf and m.kind == "baseline"
    # A4: the arm's median is censored, the baseline's not -> an upper bound
    u = cell[("A4", "forge")]
    assert u.kind == "upper" and u.speedup == pytest.approx(2100 / 15000)


def test_bounds_print_as_bounds_in_every_format():
    from grokray_analysis.tables import render, speedup_tables

    t = speedup_table(frame(), "mlp")
    wide = render(speedup_tables(t), "md")
    assert "> 10x" in wide and "< 0.14x" in wide and "n/a (both censored)" not in wide
    assert "> 15000 (0/3)" in wide
    long = speedup_tables(t, wide=False)
    for fmt_name, text in (("csv", "> 10"), ("tex", "$>$ 10"), ("md", "> 10")):
        assert text in render(long, fmt_name), fmt_name
    import json

    rows = json.loads(render(long, "json"))[0]["rows"]
    s3 = next(r for r in rows if r["group"] == "S3" and r["arm"] == "forge")
    assert s3["speedup"] == {"bound": ">", "value": 10.0} and s3["kind"] == "lower"


def test_deterministic_and_errors():
    a = speedup_table(frame(), "mlp")
    b = speedup_table(frame(), "mlp")
    assert repr(a) == repr(b)  # NaN-aware equality
    with pytest.raises(AnalysisError, match="arm 'gpt' not present"):
        speedup_table(frame(), "gpt")


def test_ablation_order():
    assert ablation_order(["forge", "zeta", "mlp", "alpha", "forge+grokfast"]) == (
        "mlp", "forge", "forge+grokfast", "alpha", "zeta")
