"""`grokray recompute` on a tiny real sweep (trained here, seconds): recomputed values equal the
online ones at the same steps, a second call computes only what is missing, an interrupt loses
nothing finished, analyze and repair read the files like curves, a user's metric (the docs'
restricted/excluded loss) registers and runs, and every refusal is one line with exit 2."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import grokray
from grokray import reader
from grokray.cli import main as cli
from grokray.errors import GrokrayError
from grokray.metrics import registry
from grokray.sweep import store
from grokray.sweep.recompute import recompute

torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "restricted_loss.py"

SPEC = """\
name: {name}
out: {out}
config:
  train_frac: 0.6
  device: cpu
  model: {{d: 8, hidden: 16, rank: 8}}
  optim: {{lr: 0.01}}
  metrics: {{cheap: [spectrum, spectrum_readings, wedderburn], costly: [nfa], costly_every: 2}}
{extra}
axes:
{axes}
seeds: 2
steps: 60
eval_every: 10
resources: {{cpu: 1}}
concurrency: 1
retries: 0
"""


def _sweep(tmp: Path, name: str, axes: str, extra: str = "") -> Path:
    spec = tmp / f"{name}.yaml"
    spec.write_text(SPEC.format(name=name, out=tmp / "out", axes=axes, extra=extra))
    assert cli(["sweep", str(spec), "--local", "--plain", "--no-summary"]) == 0
    return tmp / "out" / name


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A sweep dir trained once: Z5 and S3, MLP and FORGE, 2 seeds, float32; and a Z7-addition
    sweep (the restricted loss needs Z_p addition)."""
    tmp = tmp_path_factory.mktemp("recompute")
    tiny = _sweep(tmp, "tiny", "  group: [Z5, S3]\n  arch: [mlp, forge]")
    zp = _sweep(tmp, "zp", "  arch: [mlp, forge]", extra="  group: Z7\n  op: add")
    return tiny, zp


@pytest.fixture
def out(swept, tmp_path):
    """A fresh copy of the tiny sweep dir (each test writes its own recomputed files)."""
    dest = tmp_path / "root" / "tiny"
    shutil.copytree(swept[0], dest)
    return dest


def _curves(d: Path) -> pd.DataFrame:
    return pd.concat(pd.read_parquet(p) for p in sorted((d / "curves").glob("*.parquet")))


def _recomputed(d: Path, metric: str) -> pd.DataFrame:
    fs = sorted((d / "recomputed" / metric).glob("*.parquet"))
    return pd.concat(pd.read_parquet(p) for p in fs) if fs else pd.DataFrame()


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


# ----------------------------------------------------------------------------- equality


def test_recomputed_equals_online_at_the_same_steps(out):
    names = ["spectrum", "spectrum_readings", "wedderburn", "nfa", "axioms"]
    s = recompute(out, names, progress=False)
    assert s.computed and not s.already and s.configs == 4 and s.seeds == 8
    online = _curves(out)
    key = ["config_hash", "seed", "step"]
    snaps = grokray.load_snapshots(out)[key].drop_duplicates()
    compared = 0
    for m in names:
        rec = _recomputed(out, m)
        assert len(rec) == len(snaps)  # one row per snapshot of every seed
        assert (rec["metric_version"] == 1).all() and rec["recompute_id"].nunique() == 1
        cols = reader.recomputed_values(rec)
        j = rec.merge(online, on=key, suffixes=("_rec", "_onl"))
        assert len(j) == len(rec)  # every snapshot step has its curve row
        for c in cols:
            a, b = j[f"{c}_rec"].to_numpy(float), j[f"{c}_onl"].to_numpy(float)
            had = np.isfinite(b)
            np.testing.assert_allclose(a[had], b[had], rtol=1e-6, atol=1e-6, err_msg=c)
            if m != "nfa":  # nfa is costly: online only at every 2nd eval and the last
                assert (np.isnan(a) == np.isnan(b)).all(), c
            compared += int(had.sum())
    assert compared > 500
    # spectrum and wedderburn on both archs and both groups, axioms on FORGE
    j = _recomputed(out, "axioms").merge(online, on=key, suffixes=("_rec", "_onl"))
    forge = j[j["arch_onl"] == "forge"]
    assert len(forge) and np.allclose(forge["loss_assoc_rec"], forge["loss_assoc_onl"],
                                       rtol=1e-6, atol=1e-6)
    assert {"Z5", "S3"} == set(_recomputed(out, "wedderburn")["group"])


# ----------------------------------------------------------------------------- exactly once


def test_second_call_computes_only_what_is_missing(out):
    first = recompute(out, "spectrum", progress=False)
    names = sorted(p.name for p in (out / "recomputed" / "spectrum").iterdir())
    assert len(names) == 4 and first.computed == len(_recomputed(out, "spectrum"))
    again = recompute(out, "spectrum", progress=False)
    assert again.computed == 0 and again.already == first.computed and not again.files
    assert sorted(p.name for p in (out / "recomputed" / "spectrum").iterdir()) == names
    # a config's file lost: only that config is computed again, into a new file
    lost = out / "recomputed" / "spectrum" / names[0]
    n_lost = len(pd.read_parquet(lost))
    lost.unlink()
    third = recompute(out, "spectrum", progress=False)
    assert third.computed == n_lost and len(third.files) == 1
    rec = _recomputed(out, "spectrum")
    assert not rec.duplicated(["config_hash", "seed", "step"]).any()


def test_an_interrupt_loses_nothing_finished(out, monkeypatch, capsys):
    total = len(grokray.load_snapshots(out)[["config_hash", "seed", "step"]].drop_duplicates())
    stop = total // 2 + 1  # in the middle of a config
    calls = {"n": 0}
    real = registry.get_metric("spectrum")

    def flaky(snap):
        calls["n"] += 1
        if calls["n"] == stop:
            raise KeyboardInterrupt
        return real.fn(snap)

    monkeypatch.setitem(registry._METRICS, "spectrum",
                        registry.Metric("spectrum", flaky, 1, real.columns, builtin=True))
    with pytest.raises(KeyboardInterrupt):
        recompute(out, "spectrum", progress=False)
    assert "run the same command to compute the rest" in capsys.readouterr().err
    saved = _recomputed(out, "spectrum")
    assert len(saved) == stop - 1  # every value finished before the interrupt
    assert not list((out / "recomputed" / "spectrum").glob(".*"))  # no temporary file left
    monkeypatch.setitem(registry._METRICS, "spectrum", real)
    rest = recompute(out, "spectrum", progress=False)
    assert rest.already == stop - 1 and rest.computed == total - stop + 1
    rec = _recomputed(out, "spectrum")
    assert len(rec) == total and not rec.duplicated(["config_hash", "seed", "step"]).any()


def test_a_failing_metric_is_one_line_and_keeps_what_finished(out, capsys):
    n = {"calls": 0}

    @registry.register("boom_after_20", replace=True)
    def boom(snap):
        n["calls"] += 1
        if n["calls"] > 20:
            raise ValueError("bad input")
        return {"x": 1.0}

    try:
        assert cli(["recompute", str(out), "--metric", "boom_after_20", "--plain"]) == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert re.search(r"metric 'boom_after_20' failed on tiny \w+ seed \d step \d+: "
                         r"ValueError: bad input; what finished is saved", err), err
        assert len(_recomputed(out, "boom_after_20")) == 20  # what finished is written
    finally:
        registry.unregister("boom_after_20")


# ----------------------------------------------------------------------------- analyze, repair


def test_analyze_reads_recomputed_beside_online(out, capsys):
    recompute(out, ["agop", "nfa"], progress=False)
    sweep = grokray.load(out)
    c, online = sweep.curves, _curves(out)
    assert {"metric_agop_align", "metric_nfa_corr"} <= set(c.columns)
    assert len(c) == len(online)  # the curves' rows, no more
    # nfa is online at every 2nd eval: the online value stays, the recomputed one fills the
    # snapshot steps where it was not due
    key = ["config_hash", "seed", "step"]
    m = c.merge(online[key + ["metric_nfa_corr"]], on=key, suffixes=("", "_onl"))
    had = m["metric_nfa_corr_onl"].notna()
    assert (m.loc[had, "metric_nfa_corr"] == m.loc[had, "metric_nfa_corr_onl"]).all()
    rec = _recomputed(out, "nfa").merge(online[key + ["metric_nfa_corr", "arch"]], on=key,
                                        suffixes=("", "_onl"))
    gap = rec[rec["metric_nfa_corr_onl"].isna() & (rec["arch_onl"] == "mlp")]
    assert len(gap)  # snapshot steps where nfa was not due online
    filled = c.merge(gap[key + ["metric_nfa_corr"]], on=key, suffixes=("", "_rec"))
    assert np.allclose(filled["metric_nfa_corr"], filled["metric_nfa_corr_rec"])
    # agop_align was never online: a new column (1 at each seed's last snapshot), and each
    # seed's trials summary is its last value
    mlp = sweep.recomputed[(sweep.recomputed["metric"] == "agop") & (sweep.recomputed["arch"]
                                                                     == "mlp")]
    last = mlp.sort_values("step").groupby(["config_hash", "seed"]).tail(1)
    assert np.allclose(last["metric_agop_align"], 1.0)
    t = sweep.trials[sweep.trials["arch"] == "mlp"]
    assert np.allclose(t["metric_agop_align"], 1.0)
    assert cli(["analyze", "curves", str(out), "--metric", "metric_agop_align",
                "--where", "arch=mlp", "--format", "csv"]) == 0
    assert "metric_agop_align" in capsys.readouterr().out


def test_repair_drops_rows_of_a_rerun_trial_and_duplicates(out, capsys):
    recompute(out, "spectrum", progress=False)
    spec = out / "recomputed" / "spectrum"
    first = sorted(spec.iterdir())[0]
    # the same rows once more under a newer recompute run (two runs at once, lock bypassed)
    df = pd.read_parquet(first)
    df["recompute_id"] = "29990101T000000000000Z-ffff"
    h = df["config_hash"].iloc[0]
    df.to_parquet(spec / f"{h}-29990101T000000000000Z-ffff.parquet", index=False)
    # rows whose trial run is gone (the sweep ran that trial again)
    other = sorted(spec.iterdir())[-1]
    gone = pd.read_parquet(other)
    gone["run_id"] = "19990101T000000000000Z-0000"
    gone["recompute_id"] = "19990101T000000000000Z-0000"
    gone.to_parquet(spec / f"{gone['config_hash'].iloc[0]}-19990101T000000000000Z-0000.parquet",
                    index=False)
    (spec / ".tmp-x.parquet.abcd").write_bytes(b"half")
    removed = store.repair(out)
    assert removed["duplicate_recomputed"] == len(df)
    assert removed["orphan_recomputed"] == len(gone) and removed["temp_files"] == 1
    assert not first.exists()  # all its rows were duplicates of the newer run's
    rec = _recomputed(out, "spectrum")
    assert not rec.duplicated(["config_hash", "seed", "step"]).any()
    assert set(rec["run_id"]) == set(_curves(out)["run_id"])
    # an unreadable recomputed file: analyze names it, status --repair quarantines it
    (spec / "0000000000000000-x.parquet").write_bytes(b"not parquet")
    with pytest.raises(Exception, match="0000000000000000-x.parquet: cannot read"):
        grokray.load(out)
    assert cli(["status", str(out)]) == 2
    assert "0000000000000000-x.parquet: cannot read" in capsys.readouterr().err
    assert cli(["status", str(out), "--repair"]) == 0
    assert (out / "quarantine" / "recomputed" / "spectrum" / "0000000000000000-x.parquet"
            ).exists()
    assert "metric_eff_modes" in grokray.load(out).curves


# ----------------------------------------------------------------------------- a user's metric


def test_the_docs_example_registers_the_restricted_loss(swept, tmp_path, capsys):
    doc = (ROOT / "docs" / "snapshots.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert any(b.strip() == EXAMPLE.read_text().strip() for b in blocks), \
        "docs/snapshots.md shows docs/examples/restricted_loss.py verbatim"
    zp = tmp_path / "zp"
    shutil.copytree(swept[1], zp)
    try:
        assert cli(["recompute", str(zp), "--metric", "restricted_loss", "--import",
                    str(EXAMPLE), "--plain"]) == 0
        assert "recompute restricted_loss:" in capsys.readouterr().out
        c = grokray.load(zp).curves.dropna(subset=["metric_restricted_loss"])
        assert len(c) and np.isfinite(c[["metric_restricted_loss",
                                          "metric_excluded_loss"]]).all().all()
        m = registry.get_metric("restricted_loss")
        assert m.version == 1 and m.columns == ("restricted_loss", "excluded_loss")
        with pytest.raises(GrokrayError, match="already registered"):
            registry.register("restricted_loss", m.fn)
        # version 2: computed again into new files; readers take the newest version
        registry.register("restricted_loss", lambda s: {"restricted_loss": 2.0,
                                                        "excluded_loss": 3.0},
                          version=2, replace=True)
        s = recompute(zp, "restricted_loss", progress=False)
        assert s.computed == len(c) and s.already == 0
        c2 = grokray.load(zp).curves.dropna(subset=["metric_restricted_loss"])
        assert (c2["metric_restricted_loss"] == 2.0).all()
        assert len(_recomputed(zp, "restricted_loss")) == 2 * len(c)  # v1 stays on disk
    finally:
        registry.unregister("restricted_loss")


def test_registration_rules():
    with pytest.raises(GrokrayError, match="built-in"):
        registry.register("spectrum", lambda s: {})
    with pytest.raises(GrokrayError, match="lowercase"):
        registry.register("Bad-Name", lambda s: {})
    with pytest.raises(GrokrayError, match="version"):
        registry.register("ok_name", lambda s: {}, version=0)
    names = registry.metric_names()
    for n in ("spectrum", "spectrum_readings", "wedderburn", "nfa", "axioms", "agop",
              "circulant"):
        assert n in names
    assert grokray.register_metric is registry.register


# ----------------------------------------------------------------------------- --where, refusals


def test_where_selects_and_a_ledger_root_holds_several_sweeps(out, swept, capsys):
    shutil.copytree(swept[1], out.parent / "zp")
    s = recompute(out.parent, "spectrum", where=["arch=forge", "seed!=1"], progress=False)
    assert s.dirs and len(s.dirs) == 2 and s.configs == 3 and s.seeds == 3
    rec = pd.concat([_recomputed(out, "spectrum"), _recomputed(out.parent / "zp", "spectrum")])
    assert set(rec["arch"]) == {"forge"} and set(rec["seed"]) == {0}
    s = recompute(out.parent, "spectrum", where=["group=Z5,Z7", "sweep=tiny"], progress=False)
    assert s.configs == 2 and s.seeds == 4  # Z5's two archs, both seeds; forge seed 0 was done
    assert cli(["recompute", str(out.parent), "--metric", "spectrum", "--plain"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"\[1/\d\] (tiny|zp) \w+: \d+ value\(s\)", err)  # progress lines


@pytest.mark.parametrize("argv, message", [
    (["--metric", "nope"], r"unknown metric 'nope'; valid: agop, axioms, circulant, nfa, "),
    (["--metric", "spectrum", "--where", "group"], r"bad --where 'group': expected KEY=VALUE"),
    (["--metric", "spectrum", "--where", "colour=red"], r"no trials column 'colour'"),
    (["--metric", "spectrum", "--where", "group=Z9"], r"no trials match --where group=Z9"),
    (["--import", "/nonexistent/m.py", "--metric", "x"], r"--import /nonexistent/m.py: no such"),
])
def test_refusals_are_one_line_exit_2(out, capsys, argv, message):
    assert cli(["recompute", str(out), *argv]) == 2
    assert re.search(message, _one_line(capsys))
    assert not (out / "recomputed").exists()


def test_a_sweep_writing_the_dir_holds_it_and_the_bar_on_a_terminal(out, capsys):
    from grokray.sweep.lock import WriterLock

    with WriterLock(str(out), "grokray sweep tiny.yaml"):
        assert cli(["recompute", str(out), "--metric", "spectrum"]) == 2
        assert re.search(r"running 'grokray sweep tiny.yaml'", _one_line(capsys))
    bar = io.StringIO()
    s = recompute(out, "spectrum", progress=True, stream=bar)
    assert f"{s.computed}/{s.computed}" in bar.getvalue()  # the rich bar, completed


def test_no_snapshots_and_missing_snapshots(out, tmp_path, capsys):
    assert cli(["recompute", str(tmp_path / "nowhere"), "--metric", "spectrum"]) == 2
    assert "no such directory" in _one_line(capsys)
    assert cli(["recompute", str(tmp_path), "--metric", "spectrum"]) == 2
    assert "is not a sweep dir (no trials/) and holds none" in _one_line(capsys)
    snaps = sorted((out / "snapshots").iterdir())
    snaps[0].unlink()  # one config ran with snapshots off
    assert cli(["recompute", str(out), "--metric", "spectrum"]) == 2
    assert re.search(r"2 selected seed\(s\) of 1 config\(s\) have no snapshots, e.g. tiny \w+ "
                     r"seed 0 .*--skip-missing", _one_line(capsys))
    assert cli(["recompute", str(out), "--metric", "spectrum", "--skip-missing",
                "--plain"]) == 0
    assert "2 seed(s) skipped: no snapshots" in capsys.readouterr().out
    for p in snaps[1:]:
        p.unlink()
    assert cli(["recompute", str(out), "--metric", "spectrum"]) == 2
    assert re.search(r"no snapshots in .*tiny: its sweeps ran with snapshots off.*--force",
                     _one_line(capsys))
