"""Each plot draws a PNG from its computed result. Tests check the result and that a PNG was
written, not pixels."""

import numpy as np
import pandas as pd
import pytest

from grokray_analysis.curves import curve_bands
from grokray_analysis.phase import phase_diagrams
from grokray_analysis.powerlaw import scaling
from grokray_analysis.registry import plot
from grokray_analysis.signtest import sign_test
from grokray_analysis.speedup import speedup_table

PNG = b"\x89PNG\r\n\x1a\n"


def trials() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for g, n in (("Z5", 5), ("S3", 6), ("D4", 8), ("S4", 24)):
        for arm, f in (("mlp", 4.0), ("forge", 1.0)):
            for s in range(3):
                rows.append({"group": g, "group_order": n, "arm": arm, "seed": s,
                             "status": "grokked", "steps_run": 9000, "model_rank": 2 + 2 * s,
                             "model_d": n,
                             "grok_step": float(100 * f * n**0.5 * np.exp(rng.normal(0, .1)))})
    df = pd.DataFrame(rows)
    df.loc[(df.model_rank * df.model_d) < 20, ["status", "grok_step"]] = ["not_grokked", np.nan]
    return df


def curves() -> pd.DataFrame:
    return pd.DataFrame([
        {"config_hash": "h", "seed": s, "arm": a, "step": t, "val_acc": min(1, t / (100 * k))}
        for k, a in ((1, "forge"), (4, "mlp")) for s in range(3) for t in range(0, 500, 50)
    ])


def _png(path) -> bool:
    return path.exists() and path.read_bytes()[:8] == PNG


def test_scaling_plot(tmp_path):
    res = scaling(trials(), methods=("aft", "ols"), n_boot=0)
    assert [(f.arm, f.method) for f in res.fits] == [
        ("forge", "aft"), ("forge", "ols"), ("mlp", "aft"), ("mlp", "ols")]
    # OLS on the grokked runs sees the generating 0.5; the censored fit also sees the four
    # small-order forge runs that never grokked in 9000 steps, and the exponent drops below 0
    assert res.fits[1].alpha == pytest.approx(0.5, abs=0.15)
    assert res.fits[0].alpha < 0 and len(res.fits[0].cens_order) == 3
    assert _png(plot(res, tmp_path / "s.png"))


def test_phase_plot(tmp_path):
    res = phase_diagrams(trials())  # one diagram per arm, never mixed
    assert [p.arm for p in res.diagrams] == ["forge", "mlp"]
    assert all(p.method == "separation" and p.gap == pytest.approx((16.0, 20.0))
               for p in res.diagrams)
    assert _png(plot(res, tmp_path / "sub" / "p.png"))


def test_curves_speedup_signtest_plots(tmp_path):
    c = curve_bands(curves())
    assert [b.cross_step for b in c.bands] == [100.0, 400.0]
    assert _png(plot(c, tmp_path / "c.png"))
    sp = speedup_table(trials(), "mlp")
    assert {r.arm for r in sp.rows} == {"mlp", "forge"}
    assert _png(plot(sp, tmp_path / "sp.png"))
    st = sign_test(trials(), "grok_step", "forge", "mlp")
    assert st.n_neg == st.n_pairs - st.n_ties - st.n_undecided
    assert _png(plot(st, tmp_path / "st.png"))
