"""The shipped sweep specs and run configs (grokray/shipped.py): their names, how a command's
argument resolves to a file (a file first, then a shipped name, from any directory), and
`grokray specs` / `grokray specs copy`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from grokray import shipped
from grokray.cli import main
from grokray.errors import ConfigError, SpecError

ROOT = Path(__file__).resolve().parents[2]


def test_names_are_paths_under_sweeps_without_yaml():
    got = {e.name: e for e in shipped.entries()}
    want = {p.relative_to(ROOT / "sweeps").with_suffix("").as_posix()
            for p in (ROOT / "sweeps").rglob("*.yaml")}
    assert set(got) == want
    assert {"smoke", "cpu/scaling", "paper/scaling", "run/mlp_z97"} <= set(got)
    assert got["smoke"].path.resolve() == (ROOT / "sweeps/smoke.yaml").resolve()
    assert got["run/mlp_z97"].kind == shipped.RUN and got["cpu/scaling"].kind == shipped.SWEEP
    kinds = [e.kind for e in shipped.entries()]
    assert kinds == sorted(kinds, key=lambda k: k != shipped.SWEEP)  # sweep specs first


def test_descriptions_are_one_line():
    got = {e.name: e.description() for e in shipped.entries()}
    assert got["smoke"] == "tiny groups, MLP vs FORGE, to check an install end to end"
    assert got["run/mlp_z97"] == ("The grokking baseline: an MLP on Z97 addition, train "
                                  "fraction 0.4, full batch, AdamW.")
    assert all(d and "\n" not in d for d in got.values())


def test_resolve_a_file_first_then_a_shipped_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    smoke = str(shipped.root() / "smoke.yaml")
    for arg in ("smoke", "smoke.yaml", "sweeps/smoke.yaml"):
        assert shipped.resolve(arg, shipped.SWEEP) == smoke
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "sweeps" / "smoke.yaml").write_text("name: mine\n")
    assert shipped.resolve("sweeps/smoke.yaml", shipped.SWEEP) == "sweeps/smoke.yaml"
    assert shipped.resolve("run/mlp_z97", shipped.RUN) == str(shipped.root() / "run/mlp_z97.yaml")
    assert shipped.path_of("sweeps/cpu/rfm.yaml") == shipped.root() / "cpu" / "rfm.yaml"


def test_resolve_errors_name_what_is_shipped(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError, match=r"^smok: sweep spec not found .*did you mean smoke\?"):
        shipped.resolve("smok", shipped.SWEEP)
    with pytest.raises(SpecError, match="a shipped run config, not a sweep spec: run it with "
                                        "`grokray run run/mlp_z97`"):
        shipped.resolve("run/mlp_z97", shipped.SWEEP)
    with pytest.raises(ConfigError, match="`grokray sweep cpu/rfm`"):
        shipped.resolve("cpu/rfm", shipped.RUN)


def test_sweep_and_run_take_a_shipped_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "cpu/rfm", "--dry-run", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["sweep"] == "rfm_cpu" and got["spec"] == str(shipped.root() / "cpu/rfm.yaml")
    from grokray.commands.run import build_config

    cfg = build_config(argparse.Namespace(config="run/mlp_z97", overrides=[], seeds=None))
    assert (cfg.group, cfg.op, cfg.model.d) == ("Z97", "add", 128)
    assert main(["sweep", "nope", "--dry-run"]) == 2
    assert "nope: sweep spec not found" in capsys.readouterr().err


def test_specs_lists_each_kind_with_its_cost(capsys):
    assert main(["specs"]) == 0
    text = capsys.readouterr().out
    sweeps, runs = text.split("run configs (grokray run NAME")
    assert sweeps.startswith("sweep specs (grokray sweep NAME")
    assert "  run/mlp_z97 " in runs and "  run/mlp_z97 " not in sweeps
    smoke = next(line for line in sweeps.splitlines() if line.startswith("  smoke "))
    assert "~" in smoke and smoke.endswith("tiny groups, MLP vs FORGE, to check an install end "
                                           "to end")
    assert "expected time: the cost model on this host" in runs


def test_a_sweeps_cost_is_the_whole_sweep_whatever_is_on_disk(tmp_path, monkeypatch):
    from grokray.commands.specs import sweep_cost
    from grokray.cost.sweep import estimate_plan
    from grokray.sweep.plan import make_plan
    from grokray.sweep.spec import load_spec

    monkeypatch.chdir(tmp_path)
    path = shipped.root() / "cpu" / "nonabelian.yaml"
    fresh = estimate_plan(make_plan(load_spec(path), build=False))
    got = sweep_cost(path)
    assert got.trials == fresh.trials == 6
    assert got.cpu_s_expected == pytest.approx(fresh.cpu_s_expected)
    assert got.wall_s_expected == pytest.approx(fresh.wall_s_expected)


def test_specs_copy(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["specs", "copy", "smoke"]) == 0
    assert (tmp_path / "smoke.yaml").read_bytes() == (ROOT / "sweeps/smoke.yaml").read_bytes()
    assert "grokray sweep smoke.yaml" in capsys.readouterr().out
    assert main(["specs", "copy", "smoke"]) == 2
    assert "smoke.yaml exists; give another DEST, or --force" in capsys.readouterr().err
    (tmp_path / "smoke.yaml").write_text("edited\n")
    assert main(["specs", "copy", "smoke", "--force"]) == 0
    assert (tmp_path / "smoke.yaml").read_bytes() == (ROOT / "sweeps/smoke.yaml").read_bytes()
    assert main(["specs", "copy", "run/mlp_z97", "cfg/z97.yaml"]) == 0
    assert (tmp_path / "cfg/z97.yaml").read_text().startswith("# The grokking baseline")
    assert main(["specs", "copy", "nope"]) == 2
    assert "nope: no shipped spec or run config of that name; valid: " in \
        capsys.readouterr().err
