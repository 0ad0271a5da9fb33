"""The ledger's paper-scale column: claims name a sweep per scale (claims.yaml `scales`), the
ledger reads each scale's sweep dir beside the CPU one, and the CPU column is the same with or
without it. Fixture rows are the real specs' configs written through the real store."""

from __future__ import annotations

import dataclasses
import json
import math
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest

from grokray.cli import main
from grokray.result import SeedResult, TrialResult
from grokray.sweep import store
from grokray.sweep.plan import make_plan, plan_record
from grokray.sweep.spec import load_spec
from grokray_analysis import ledger as L
from grokray_analysis.ledger.output import SCALE_COLUMNS

ROOT = Path(__file__).resolve().parents[2]

KEY = "forge.nonabelian.mlp_fails"


def _write_sweep(out: Path, spec_path: str, outcome) -> Path:
    """Every trial of the spec at `spec_path` (outcome(cfg, seed) -> (status, grok_step)) and
    its plan.json, into out/<name>, as `grokray sweep` writes them."""
    spec = dataclasses.replace(load_spec(str(ROOT / spec_path)), out=str(out))
    now = datetime.now(timezone.utc)
    for cfg in spec.trials():
        seeds = []
        for s in cfg.seeds:
            status, grok = outcome(cfg, s)
            seeds.append(SeedResult(seed=s, data_seed=s, status=status, grok_step=grok,
                                    steps_run=grok + 250 if grok else cfg.steps))
        curves = pd.DataFrame({"seed": list(cfg.seeds), "step": cfg.steps, "train_loss": 0.0,
                               "train_acc": 1.0, "val_loss": 1.0, "val_acc": 0.5})
        store.write_result(TrialResult(config=cfg, n_params=1, device="cpu", wall_s=1.0,
                                       started_at=now, finished_at=now, seeds=seeds,
                                       curves=curves, group_order=6),
                           spec.sweep_dir, sweep=spec.name, run_id=store.new_run_id())
    store.write_plan(spec.sweep_dir, plan_record(make_plan(spec)))
    return Path(spec.sweep_dir)


def _cpu(cfg, seed):  # the paper's claim: the MLP never groks, FORGE at 200
    return ("grokked", 200) if cfg.arch == "forge" else ("not_grokked", None)


def _paper(cfg, seed):  # one MLP run groks late at paper scale, FORGE at 300
    if cfg.arch == "forge":
        return "grokked", 300
    return ("grokked", 12000) if (cfg.group, seed) == ("S3", 0) else ("not_grokked", None)


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    root = tmp_path_factory.mktemp("two_columns")
    _write_sweep(root, "sweeps/cpu/nonabelian.yaml", _cpu)
    _write_sweep(root, "sweeps/paper/nonabelian.yaml", _paper)
    return root


def _by_key(rows):
    return {r.claim.key: r for r in rows}


def test_each_scale_reads_its_own_sweep(out):
    both = L.ledger(out)
    assert tuple(both.columns) == ("cpu", "paper", "decisive")
    cpu, paper = _by_key(both.columns["cpu"])[KEY], _by_key(both.columns["paper"])[KEY]
    # 0 of 9 MLP runs: [0, 0.34], not inside the band [0, 0.1]: too few runs (36 would do)
    assert cpu.sweep_dir == str(out / "nonabelian_cpu") and cpu.verdict == L.TOO_FEW
    assert (cpu.measured.value, cpu.measured.grokked, cpu.measured.censored) == (0.0, 0, 9)
    assert "FORGE grokked 9/9" in cpu.measured.detail
    assert paper.sweep_dir == str(out / "nonabelian_paper")
    assert paper.measured.value == pytest.approx(1 / 9) and paper.verdict == L.TOO_FEW
    assert paper.measured.detail.startswith("MLP grokked 1/9 (")
    assert "FORGE grokked 9/9" in paper.measured.detail
    assert paper.command.startswith("grokray sweep sweeps/paper/nonabelian.yaml --out ")
    # the claims with no paper-scale rows are 'not run' there, naming the dir they would read
    for r in both.columns["paper"]:
        if r.claim.spec != "sweeps/paper/nonabelian.yaml":
            assert r.verdict == L.NOT_RUN and math.isnan(r.measured.value)
            assert r.measured.detail.startswith("no rows in") or r.claim.why_not
    assert _by_key(both.columns["paper"])["forge.scaling.alpha"].measured.detail == \
        f"no rows in {out / 'scaling_paper'}"


def test_the_cpu_column_is_the_same_with_or_without_the_paper_column(out):
    both, alone = L.ledger(out, scales=("cpu", "paper")), L.ledger(out, scales=("cpu",))
    assert both.columns["cpu"] == alone.columns["cpu"]
    t2, t1 = L.ledger_table(both), L.ledger_table(alone)
    n = len(t1.columns)
    assert t2.columns[:n] == t1.columns
    assert t2.columns[n:] == tuple("paper-scale " + c for c in SCALE_COLUMNS)
    for r2, r1 in zip(t2.rows, t1.rows, strict=True):
        assert r2[:n] == r1 or all(a == b or (a != a and b != b)  # NaN == NaN here
                                   for a, b in zip(r2[:n], r1, strict=True))
    assert t2.notes[0] == t1.notes[0] and t2.notes[1].startswith("paper-scale verdicts: ")
    assert t1.title.startswith("Reproduction ledger (cpu scale, ")
    assert t2.title.startswith("Reproduction ledger (cpu and paper scale, ")


def test_ledger_files_carry_both_columns(out, capsys):
    assert main(["analyze", "ledger", str(out), "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)[0]
    on_disk = json.loads((out / "ledger.json").read_text())[0]
    assert on_disk["rows"] == printed["rows"]
    row = {r["claim"]: r for r in on_disk["rows"]}[KEY]
    assert row["verdict"] == L.TOO_FEW and row["measured"] == 0 and row["n_needed"] == 36
    assert row["paper-scale verdict"] == L.TOO_FEW
    assert row["paper-scale grokked"] == 1 and row["paper-scale censored"] == 8
    assert "| paper-scale verdict |" in (out / "ledger.md").read_text()
    # --scale picks the columns: the paper column alone
    assert main(["analyze", "ledger", str(out), "--format", "json", "--no-write",
                 "--scale", "paper"]) == 0
    only = json.loads(capsys.readouterr().out)[0]
    assert "verdict" not in only["columns"] and "paper-scale verdict" in only["columns"]


def test_every_measured_claim_names_its_paper_sweep():
    from grokray.commands.reproduce import SCALES, ledger_specs

    assert SCALES == tuple(L.SCALES)
    measured = [c.at("paper") for c in L.CLAIMS if c.at("paper").measure]
    assert {c.key for c in L.CLAIMS if c.measure} <= {c.key for c in measured}
    assert all(c.spec.startswith("sweeps/paper/") for c in measured)
    for c in measured:
        assert load_spec(str(ROOT / c.spec)).name == c.sweep, c.key
    specs = ledger_specs("paper")
    assert specs == list(dict.fromkeys(c.spec for c in measured))
    shipped = sorted(p.relative_to(ROOT).as_posix()
                     for p in (ROOT / "sweeps" / "paper").glob("*.yaml"))
    assert sorted(specs) == shipped  # every paper-scale spec is a ledger sweep
    # a claim no sweep measures keeps its reason at paper scale
    assert L.claim("forge.qm9").at("paper").why_not == L.claim("forge.qm9").why_not
