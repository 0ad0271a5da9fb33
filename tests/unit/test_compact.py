"""Compaction: per-trial files into parts, each row visible exactly once at every point, also
when the compacting process is SIGKILLed there (grokray.sweep.compact.POINTS)."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
from datetime import datetime, timezone

import pandas as pd
import pytest

from grokray import reader
from grokray.config import TrialConfig
from grokray.result import SeedResult, TrialResult
from grokray.sweep import compact, store
from grokray.sweep.lock import WriterLock


def _result(d: int, seeds=(0, 1), status="grokked", metric=False) -> TrialResult:
    c = TrialConfig.from_dict({"group": "Z5", "steps": 10, "seeds": list(seeds),
                               "model": {"d": d}})
    now = datetime.now(timezone.utc)
    curves = pd.DataFrame({"seed": [s for s in seeds for _ in (0, 1)],
                           "step": [0, 10] * len(seeds), "train_loss": 1.0, "train_acc": 0.5,
                           "val_loss": float(d), "val_acc": 0.5})
    if metric:  # a column only some files have
        curves["weight_norm"] = 2.0
    if status == "failed":
        curves = pd.DataFrame()
    return TrialResult(config=c, n_params=7, device="cpu", wall_s=0.1, started_at=now,
                       finished_at=now, curves=curves, group_order=5,
                       seeds=[SeedResult(seed=s, data_seed=s, status=status,
                                         grok_step=10 if status == "grokked" else None,
                                         steps_run=10) for s in seeds])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """12 trials (24 rows; one failed trial without curves; a curve column only some have),
    written once; each test copies it."""
    out = tmp_path_factory.mktemp("built") / "s"
    for d in range(4, 16):
        r = _result(d, status="failed" if d == 7 else "grokked", metric=d % 3 == 0)
        store.write_result(r, out, sweep="s", run_id=f"20260101T0000{d:02d}Z-aaaa")
    return out


@pytest.fixture()
def _build(built):
    return lambda out: shutil.copytree(built, out)


def _view(out) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What a reader sees: trials rows and curve rows, sorted."""
    t = reader.read_dir(str(out), "trials", columns=["config_hash", "seed", "status", "run_id"],
                        required=("config_hash", "seed"))
    c = reader.read_dir(str(out), "curves", columns=["config_hash", "seed", "step", "val_loss"],
                        required=("config_hash", "seed", "step"))
    assert not t.damaged and not c.damaged
    key = ["config_hash", "seed"]
    return (t.frame.drop(columns="file").sort_values(key).reset_index(drop=True),
            c.frame.drop(columns="file").sort_values([*key, "step"]).reset_index(drop=True))


def _loose(out, sub="trials") -> list[str]:
    return sorted(p.name for p in (out / sub).iterdir()
                  if p.suffix == ".parquet" and not p.name.startswith("part-"))


def test_compact_merges_into_parts_and_keeps_every_row(tmp_path, _build):
    out = tmp_path / "s"
    _build(out)
    before = _view(out)
    done = compact.compact(out, part_rows=10)
    assert done.sources == 12 and done.rows == 24 and len(done.parts) == 3
    assert _loose(out) == [] and _loose(out, "curves") == []
    assert sorted(p.name for p in (out / "trials").iterdir()) == sorted(done.parts)
    after = _view(out)
    pd.testing.assert_frame_equal(before[0], after[0])
    pd.testing.assert_frame_equal(before[1], after[1], check_dtype=False)
    m = store.Manifest.load(out)
    assert len(m) == 24 and m.where(m.rows["config_hash"][0], 0) in done.parts
    assert compact.compact(out, part_rows=100).sources == 3  # small parts merge again
    assert len(list((out / "trials").iterdir())) == 1
    pd.testing.assert_frame_equal(before[0], _view(out)[0])


def _killed_at(out, point: str, part_rows: int) -> int:
    """Run a compaction in a forked child that SIGKILLs itself at `point`; its exit code."""
    def child():
        os.environ[compact.KILL_ENV] = point
        compact.compact(out, part_rows=part_rows)
        os._exit(0)
    p = multiprocessing.get_context("fork").Process(target=child)
    p.start()
    p.join()
    return p.exitcode


@pytest.mark.parametrize("point", compact.POINTS)
def test_sigkill_during_compaction_keeps_exactly_once(tmp_path, point, capsys, _build):
    from grokray.cli import main

    out = tmp_path / point
    _build(out)
    before = _view(out)
    assert _killed_at(out, point, part_rows=10) == -signal.SIGKILL
    assert list((out / "trials").glob(".compact-*.json"))  # it died mid-way
    # a reader at this moment: every identity once, every curve row once
    now = _view(out)
    pd.testing.assert_frame_equal(before[0], now[0])
    pd.testing.assert_frame_equal(before[1], now[1], check_dtype=False)
    assert len(store.Manifest.load(out)) == 24
    # the rerun (the command) finishes the job
    assert main(["compact", str(out), "--part-rows", "10"]) == 0
    assert "interrupted compaction finished" in capsys.readouterr().out
    after = _view(out)
    pd.testing.assert_frame_equal(before[0], after[0])
    pd.testing.assert_frame_equal(before[1], after[1], check_dtype=False)
    assert _loose(out) == [] and not list((out / "trials").glob(".compact-*"))
    assert not [p for p in (out / "curves").iterdir()
                if not (out / "trials" / p.name).exists()]  # no orphan curves part
    rows = store.Manifest.load(out).rows
    assert len(rows) == 24 and not rows.duplicated(["config_hash", "seed"]).any()


def test_repair_settles_a_killed_compaction(tmp_path, _build):
    out = tmp_path / "s"
    _build(out)
    assert _killed_at(out, "curves-written", part_rows=100) == -signal.SIGKILL
    store.repair(out)  # what every sweep does first: rolls back
    assert not list((out / "trials").glob(".compact-*")) and len(_loose(out)) == 12
    assert not [p for p in (out / "curves").iterdir() if p.name.startswith("part-")]
    assert _killed_at(out, "sources-half-deleted", part_rows=100) == -signal.SIGKILL
    store.repair(out)  # rolls forward
    assert _loose(out) == [] and len(store.Manifest.load(out)) == 24


def test_repair_keeps_compacted_snapshots_and_drops_superseded_rows_of_a_part(tmp_path, _build):
    out = tmp_path / "s"
    _build(out)
    r = _result(5)
    name = store.result_file_name(r.config.config_hash(), "20260101T000005Z-aaaa")
    (out / "snapshots").mkdir()
    pd.DataFrame({"config_hash": [r.config.config_hash()], "seed": [0], "step": [10],
                  "run_id": ["20260101T000005Z-aaaa"]}).to_parquet(out / "snapshots" / name)
    compact.compact(out)
    newer = _result(5, seeds=(1,))
    store.write_result(newer, out, sweep="s", run_id="20260102T000000Z-bbbb")
    compact.compact(out)  # the old and the new row of (hash, 1) in one part
    removed = store.repair(out)
    assert removed["superseded_rows"] == 1 and removed["orphan_snapshots"] == 0
    assert (out / "snapshots" / name).exists()
    t, c = _view(out)
    mine = t[t["config_hash"] == r.config.config_hash()]
    assert list(mine["run_id"]) == ["20260101T000005Z-aaaa", "20260102T000000Z-bbbb"]
    cm = c[(c["config_hash"] == r.config.config_hash()) & (c["seed"] == 1)]
    assert len(cm) == 2  # the newer run's two curve rows, the old one's gone


def test_compact_needs_the_lock_and_a_sweep_dir(tmp_path, capsys, _build):
    from grokray.cli import main

    assert main(["compact", str(tmp_path / "nope")]) == 2
    assert "no sweep output" in capsys.readouterr().err
    out = tmp_path / "s"
    _build(out)
    with WriterLock(str(out), "test"):
        assert main(["compact", str(out)]) == 2
    assert main(["compact", str(out)]) == 0
    assert "12 trials file(s), 24 row(s) into 1 part(s)" in capsys.readouterr().out


def test_identity_index_and_lookup_across_a_store(tmp_path, _build):
    root = tmp_path / "lab"
    _build(root / "a")
    store.write_result(_result(40), root / "b", sweep="b", run_id="20260103T000000Z-cccc")
    compact.compact(root / "a")
    h5, h40 = _result(5).config.config_hash(), _result(40).config.config_hash()
    ix = reader.identities(root / "a")
    assert len(ix) == 24 and list(ix.columns) == ["config_hash", "seed", "status", "run_id",
                                                  "file"]
    hit = reader.identities(root / "a", [h5])
    assert list(hit["seed"]) == [0, 1] and hit["file"].str.startswith("part-").all()
    found = reader.lookup(root, [h5, h40, "0" * 16])
    names = found["dir"].map(lambda d: d.rsplit("/", 1)[-1])
    got = sorted(zip(names, found["config_hash"], found["seed"], strict=True))
    assert got == [("a", h5, 0), ("a", h5, 1), ("b", h40, 0), ("b", h40, 1)]
