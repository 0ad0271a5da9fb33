"""`grokray reproduce --scale paper`: the paper-scale sweeps priced by the cost model, and one
of them (its budget cut to seconds) run into the ledger's paper column."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml

from grokray.cli import main
from grokray.commands import reproduce
from grokray_analysis.ledger import NOT_RUN

ROOT = Path(__file__).resolve().parents[2]

KEY = "forge.nonabelian.mlp_fails"
FORGE = "forge.nonabelian.forge_groks"


def test_paper_scale_runs_into_the_paper_column(tmp_path, monkeypatch, capsys):
    # sweeps/paper/nonabelian.yaml as shipped (name, groups, arms), its budget cut to seconds
    data = yaml.safe_load((ROOT / "sweeps/paper/nonabelian.yaml").read_text())
    data.update(steps=40, eval_every=20, seeds=2)
    data["config"]["device"] = "cpu"
    tiny = tmp_path / "nonabelian.yaml"
    tiny.write_text(yaml.safe_dump(data))
    asked = []
    monkeypatch.setattr(reproduce, "ledger_specs", lambda scale: asked.append(scale) or
                        [str(tiny)])
    out = tmp_path / "L"
    assert main(["reproduce", "--scale", "paper", "--only", "nonabelian_paper", "--out",
                 str(out), "--local", "--plain"]) == 0
    assert asked == ["paper"]
    T = pd.concat(pd.read_parquet(p) for p in (out / "nonabelian_paper" / "trials").glob("*"))
    assert len(T) == 12 and set(T["group"]) == {"S3", "D4", "A4"}
    assert [t["sweep"] for t in json.loads((out / reproduce.TIMES).read_text())] == \
        ["nonabelian_paper"]
    row = {r["claim"]: r for r in json.loads((out / "ledger.json").read_text())[0]["rows"]}
    assert row[KEY]["verdict"] == NOT_RUN  # no CPU-scale rows under OUT
    assert row[KEY]["paper-scale verdict"] != NOT_RUN
    # the MLP claim counts the MLP's runs; FORGE's half is its own claim on the same sweep
    ok = T["status"] != "failed"
    mlp = int((ok & (T["arch"] == "mlp")).sum())
    assert row[KEY]["paper-scale grokked"] + row[KEY]["paper-scale censored"] == mlp == 6
    assert row[FORGE]["paper-scale verdict"] != NOT_RUN
    assert {r["paper-scale verdict"] for k, r in row.items() if k not in (KEY, FORGE)} == \
        {NOT_RUN}
    assert "paper-scale verdict" in capsys.readouterr().out  # the ledger it printed


def test_paper_dry_run_prices_every_paper_sweep(capsys):
    assert main(["reproduce", "--scale", "paper", "--dry-run", "--out", "/nonexistent/x"]) == 0
    text = capsys.readouterr().out
    n = len(reproduce.ledger_specs("paper"))
    assert n == 14 and text.count("cost (this host") == n and "no cost model" not in text
    for spec in reproduce.ledger_specs("paper"):
        assert f"-> /nonexistent/x/{yaml.safe_load(open(ROOT / spec))['name']}" in text
    total = text.split("estimated wall time left (cost model, one Ray session): ")[1]
    gpu = total.split("; GPU ")[1]
    upper, expected = (float(x.split(" h")[0]) for x in gpu.split(", ")[:2])
    assert 0 < expected < upper and gpu.rstrip().endswith("(uncalibrated)")
    assert text.count("(uncalibrated: FLOPs at a nominal rate") == n
