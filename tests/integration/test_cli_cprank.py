"""`grokray cprank GROUP` through grokray.cli.main: the bounds, the search, the saved files."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from grokray.cli import main
from grokray.cprank.search import mult_tensor, reconstruct


@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GROKRAY_CACHE", str(tmp_path / "cache"))


def test_s4_prints_55(capsys, tmp_path):
    assert main(["cprank", "S4", "--out", str(tmp_path), "--time-limit", "0"]) == 0
    out = capsys.readouterr().out
    assert "55" in out and "1 + 1 + 7 + 23 + 23" in out and "576" in out and "Laderman" in out
    assert "skipped" in out


def test_s3_json_and_files(capsys, tmp_path):
    assert main(["cprank", "S3", "--json", "--out", str(tmp_path), "--time-limit", "60"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["wedderburn_bound"] == 9 and info["lower_bound"] == 9
    s = info["search"]
    assert s["best_rank"] == 9 and s["field"] == "C"
    row = pd.read_parquet(tmp_path / "S3" / "cprank.parquet")
    assert row["best_rank"].tolist() == [9] and row["wedderburn_bound"].tolist() == [9]
    z = np.load(info["files"]["decomposition"])
    T = mult_tensor(z["table"])
    assert np.abs(reconstruct(z["A"], z["B"], z["C"]) - T).max() < s["tol"]


def test_bad_input_is_one_line(capsys, tmp_path):
    assert main(["cprank", "Q9", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Q8" in err
    assert main(["cprank", "S3", "--restarts", "0", "--out", str(tmp_path)]) == 2
    assert "--restarts" in capsys.readouterr().err
