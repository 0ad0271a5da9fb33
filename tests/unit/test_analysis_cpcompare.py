"""The capacity threshold beside the CP bounds: read from cprank Parquet, compared in analysis."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from grokray.cli import main
from grokray_analysis.cpcompare import cp_compare, load_cprank
from grokray_analysis.errors import AnalysisError
from grokray_analysis.phase import phase_diagram
from grokray_analysis.tables import cpcompare_tables


def _cp_row(tmp_path, best=58.0):
    d = tmp_path / "cp" / "S4"
    d.mkdir(parents=True)
    pd.DataFrame([{
        "group": "S4", "order": 24, "num_classes": 5, "irrep_degrees": "1,1,2,3,3",
        "lower_bound": 43, "wedderburn_bound": 55, "trivial_bound": 576, "field": "C",
        "tol": 1e-5, "best_rank": best, "faithful_components": "M_3(R)",
        "faithful_capacity": 207,
    }]).to_parquet(d / "cprank.parquet")
    return tmp_path / "cp"


def test_compare_below_exact_floor(tiny, tmp_path):
    trials = pd.concat(tiny.capacity_frames(), ignore_index=True)
    ph = phase_diagram(trials)
    cmp = cp_compare(ph, load_cprank(str(_cp_row(tmp_path))), "S4")
    assert cmp.exact_floor == 43 * 24 and cmp.wedderburn_capacity == 55 * 24
    assert cmp.numerical == (("C", 58.0),)
    # the fixture's threshold is about 100: below the T_G floor 1032 and the faithful 207
    assert cmp.threshold < cmp.exact_floor and "do not reproduce T_S4" in cmp.verdict
    assert cmp.faithful == "M_3(R)" and "below the faithful capacity 207" in cmp.verdict
    t = cpcompare_tables(cmp)[0]
    assert t.rows[4][1] == 55 and t.rows[3][1] == 43 and t.rows[-1][1] == 207


def test_missing_cprank_is_a_clear_error(tmp_path):
    with pytest.raises(AnalysisError, match="grokray cprank"):
        load_cprank(str(tmp_path))


def test_cli_phase_with_cprank(tiny, tmp_path, capsys):
    tiny.write_capacity(tmp_path / "cap")
    rc = main(["analyze", "phase", str(tmp_path / "cap"), "--cprank", str(_cp_row(tmp_path)),
               "--format", "json"])
    assert rc == 0
    tables = json.loads(capsys.readouterr().out)
    assert tables[-1]["title"] == "Capacity threshold vs CP rank of T_S4 (forge)"
    vals = {r["quantity"]: r["value"] for r in tables[-1]["rows"]}
    assert vals["Wedderburn upper bound sum R(d_i)"] == 55
