"""`grokray groups [NAME] [--json]` through grokray.cli.main, and once as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from grokray.cli import main
from grokray.commands.groups import format_value


@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GROKRAY_CACHE", str(tmp_path / "cache"))


def test_list_families(capsys):
    assert main(["groups"]) == 0
    out = capsys.readouterr().out
    for text in ("cyclic", "dihedral", "PSL(2,7)", "F21", "Heis3", "Z2xZ4", "grammar"):
        assert text in out
    assert main(["groups", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {f["family"] for f in data["families"]} >= {"Z", "D", "S", "A", "Q", "PSL"}


def test_json_s4(capsys):
    assert main(["groups", "s4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["name"] == "S4" and data["order"] == 24 and data["abelian"] is False
    assert data["class_sizes"] == [1, 6, 8, 3, 6]
    assert data["irrep_degrees"] == [1, 1, 2, 3, 3]
    assert data["class_orders"] == [1, 2, 3, 2, 4]
    assert len(data["characters"]) == 5 and data["characters"][0][0] == [1.0, 0.0]


def test_json_large_group_omits_table(capsys):
    assert main(["groups", "Z211", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["order"] == 211 and data["abelian"] is True and "characters" not in data
    assert data["irrep_degrees"] == [1] * 211


def test_pretty_table(capsys):
    assert main(["groups", "A4"]) == 0
    out = capsys.readouterr().out
    assert "A4: order 12, non-abelian, 4 conjugacy classes" in out
    assert "class sizes: 1, 4, 4, 3" in out and "irrep degrees: 1, 1, 1, 3" in out
    assert "ω3^2" in out and "ωm = exp(2πi/m)" in out
    assert main(["groups", "PSL(2,7)"]) == 0
    out = capsys.readouterr().out
    assert "irrep degrees: 1, 3, 3, 6, 7, 8" in out


def test_bad_name_exits_2(capsys):
    assert main(["groups", "D1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("grokray groups: error: bad group 'D1'")
    assert "nearest valid names: D2" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "z,text",
    [
        (2, "2"), (-1, "-1"), (0.6180339887, "0.618"), (1j, "i"), (-2j, "-2i"),
        (complex(-0.5, 3**0.5 / 2), "ω3"), (complex(-0.5, -(3**0.5) / 2), "ω3^2"),
        (complex(-1.0, 3**0.5), "2ω3"), (complex(0.5, -(3**0.5) / 2), "-ω3"),
        (complex(-0.5, 1.3228756555), "-0.5+1.323i"),
    ],
)  # fmt: skip
def test_format_value(z, text):
    assert format_value(complex(z), exponent=12) == text


def test_console_script(tmp_path):
    env = {**os.environ, "GROKRAY_CACHE": str(tmp_path)}
    cmd = [sys.executable, "-m", "grokray.cli", "groups", "Q8", "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["name"] == "Q8" and data["irrep_degrees"] == [1, 1, 1, 1, 2]
