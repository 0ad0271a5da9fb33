"""Golden tables for the tiny fixture sweeps, and the four renderers.

Regenerate the goldens after an intended change: GROKRAY_UPDATE_GOLDEN=1 pytest <this file>.
"""

import csv
import io
import json
import os
from pathlib import Path

import pytest

from grokray_analysis.curves import curve_bands
from grokray_analysis.load import load
from grokray_analysis.phase import phase_diagrams
from grokray_analysis.powerlaw import compare_alpha, scaling
from grokray_analysis.registry import tables_of
from grokray_analysis.signtest import sign_test
from grokray_analysis.speedup import speedup_table
from grokray_analysis.tables import Table, render, scaling_tables, speedup_tables

FIX = Path(__file__).resolve().parents[1] / "fixtures"
GOLDEN = FIX / "golden"



@pytest.fixture(scope="module")
def sweeps(tmp_path_factory, tiny):
    root = tmp_path_factory.mktemp("out")
    return load(tiny.write_ablation(root / "tiny_ablation")), load(
        tiny.write_capacity(root / "tiny_capacity"))


def goldens(sweeps) -> dict[str, str]:
    ab, cap = sweeps
    T = ab.trials
    sc = scaling(T, arms=["forge", "forge+grokfast", "mlp"], methods=("aft", "ols"), n_boot=200,
                 seed=0)
    return {
        "scaling.md": render(scaling_tables(sc, compare_alpha(T, "forge", "forge+grokfast"))),
        "scaling_medians.csv": render(tables_of(
            scaling(T, arms=["forge", "forge+grokfast"], methods=("ols",), medians=True,
                    n_boot=200, seed=0)), "csv"),
        "signtest.md": render(tables_of(sign_test(T, "grok_step", "forge", "mlp",
                                                  alternative="less"))),
        "signtest_eff_modes.md": render(tables_of(sign_test(
            T, "metric_eff_modes", "forge", "mlp", alternative="greater"))),
        "speedup.md": render(tables_of(speedup_table(T, "mlp"))),
        "speedup_long.csv": render(speedup_tables(speedup_table(T, "mlp"), wide=False), "csv"),
        "phase.md": render(tables_of(phase_diagrams(cap.trials))),
        "curves.md": render(tables_of(curve_bands(ab.curves))),
    }


def test_golden_tables(sweeps):
    out = goldens(sweeps)
    if os.environ.get("GROKRAY_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        for name, text in out.items():
            (GOLDEN / name).write_text(text)
    for name, text in out.items():
        assert text == (GOLDEN / name).read_text(), f"{name} differs from its golden"


def test_golden_values_are_the_fixture_truth(sweeps):
    # a few numbers checked by hand against the fixture's construction, not just re-read
    ab, cap = sweeps
    sp = speedup_table(ab.trials, "mlp")
    cell = {(r.group, r.arm): r for r in sp.rows}
    assert (cell[("S3", "mlp")].k, cell[("S3", "mlp")].n) == (0, 3)  # matched MLP fails
    assert cell[("A4", "forge")].k == 2  # one censored forge run on A4
    assert cell[("Z7", "mlp+grokfast")].n_failed == 1
    st = sign_test(ab.trials, "metric_eff_modes", "forge", "mlp", alternative="greater")
    assert st.n_pos == 15 and st.p_sign == pytest.approx(0.5**15)


T = Table("t", ("name", "x", "ci"), (("a_b", 1.23456, float("inf")), ("c&d", float("nan"), 2.0)),
          ("note",))


def test_renderers():
    md = render([T], "md")
    assert "| a_b | 1.235 | inf |" in md and "| c&d |  | 2 |" in md and md.endswith("note\n")
    rows = list(csv.reader(io.StringIO(render([T], "csv"))))
    assert rows == [["name", "x", "ci"], ["a_b", "1.235", "inf"], ["c&d", "", "2"]]
    tex = render([T], "tex")
    assert r"a\_b & 1.235 & inf \\" in tex and r"c\&d" in tex and r"\toprule" in tex
    js = json.loads(render([T], "json"))
    assert js[0]["rows"][0] == {"name": "a_b", "x": 1.23456, "ci": "inf"}
    assert js[0]["rows"][1]["x"] is None
