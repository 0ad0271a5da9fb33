"""Damaged sweep dirs: status and analyze name each file and how to repair it (exit 2);
`grokray status --repair` quarantines, and a rerun fills the gaps. Duplicates count once."""

from __future__ import annotations

import json

import pandas as pd

from grokray.cli import main as cli_main
from grokray.sweep.executors.local import LocalExecutor
from grokray.sweep.plan import make_plan
from grokray.sweep.spec import parse_spec
from grokray.sweep.writer import run_plan
from tests.helpers.sweeps import synthetic

SPEC = ("name: d\nout: {out}\nconfig: {{arch: mlp}}\naxes:\n  group: [Z5, Z7]\nseeds: 2\n"
        "steps: 10\neval_every: 5\n")


def _sweep(tmp_path, run_id=None):
    spec = parse_spec(SPEC.format(out=tmp_path / "out"), "d.yaml")
    plan = make_plan(spec, run_id=run_id, force=run_id is not None)
    run_plan(plan, LocalExecutor(synthetic))
    return tmp_path / "out" / "d"


def test_status_json(tmp_path, capsys):
    d = _sweep(tmp_path)
    assert cli_main(["status", str(d), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["rows"] == 4 and s["trials"] == 2 and s["by_status"]["grokked"] == 4
    assert s["duplicate_rows"] == 0 and s["grok_rate"][0]["grok_rate"] == 1.0


def test_damaged_files_named_exit_2_then_repaired(tmp_path, capsys):
    d = _sweep(tmp_path)
    trials = sorted((d / "trials").glob("*.parquet"))
    good = trials[0].read_bytes()
    trials[0].write_bytes(good[: len(good) // 2])  # truncated
    foreign = d / "trials" / "foreign.parquet"
    pd.DataFrame({"x": [1, 2]}).to_parquet(foreign)
    curves = sorted((d / "curves").glob("*.parquet"))
    curves[1].unlink()  # the second trial's curves are gone
    for cmd in (["status", str(d)], ["analyze", "curves", str(d)]):
        rc = cli_main(cmd)
        err = capsys.readouterr().err
        assert rc == 2, cmd
        assert str(trials[0]) in err and "truncated" in err
        assert str(foreign) in err and "missing column(s)" in err
        assert f"grokray status --repair {d}" in err
    capsys.readouterr()
    rc = cli_main(["status", str(d)])
    err = capsys.readouterr().err
    assert rc == 2 and f"{curves[1]}: missing" in err
    assert cli_main(["status", "--repair", str(d)]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in (d / "quarantine" / "trials").iterdir()) == sorted(
        [trials[0].name, foreign.name, trials[1].name])
    assert cli_main(["status", str(d), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 0
    _sweep(tmp_path)  # the rerun fills the gaps
    assert cli_main(["status", str(d), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["rows"] == 4 and s["trials"] == 2


def test_duplicates_counted_once_with_a_warning(tmp_path, capsys):
    d = _sweep(tmp_path)
    # a second writer that ignored the lock (as before it existed) wrote the same identities
    spec = parse_spec(SPEC.format(out=tmp_path / "out"), "d.yaml")
    plan = make_plan(spec, force=True)
    plan.rerun = False  # no repair afterwards: leave the duplicates on disk
    run_plan(plan, LocalExecutor(synthetic))
    rows = pd.concat(pd.read_parquet(p) for p in (d / "trials").glob("*.parquet"))
    assert len(rows) == 8
    assert cli_main(["status", str(d), "--json"]) == 0
    cap = capsys.readouterr()
    s = json.loads(cap.out)
    assert s["rows"] == 4 and s["duplicate_rows"] == 4 and s["duplicate_identities"] == 4
    assert "4 duplicate row(s)" in cap.err
    from grokray_analysis.load import load

    assert len(load(d).trials) == 4
    assert "4 duplicate row(s)" in capsys.readouterr().err
    assert cli_main(["status", "--repair", str(d)]) == 0
    rows = pd.concat(pd.read_parquet(p) for p in (d / "trials").glob("*.parquet"))
    assert len(rows) == 4
