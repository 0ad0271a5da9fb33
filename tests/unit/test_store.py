"""Store: atomic Parquet files, the done-manifest, repair after an interrupted writer."""

from __future__ import annotations

from datetime import datetime, timezone

import pandas as pd
import pyarrow.parquet as pq

from grokray.config import TrialConfig
from grokray.result import SeedResult, TrialResult
from grokray.sweep import store


def _result(seeds=(0, 1), status="grokked", **cfg) -> TrialResult:
    c = TrialConfig.from_dict({"group": "Z5", "steps": 10, "seeds": list(seeds), **cfg})
    now = datetime.now(timezone.utc)
    curves = pd.DataFrame({"seed": [s for s in seeds for _ in (0, 1)],
                           "step": [0, 10] * len(seeds),
                           "train_loss": 1.0, "train_acc": 0.5, "val_loss": 1.0, "val_acc": 0.5})
    return TrialResult(config=c, n_params=7, device="cpu", wall_s=0.1, started_at=now,
                       finished_at=now, curves=curves, group_order=5,
                       seeds=[SeedResult(seed=s, data_seed=s, status=status, grok_step=10,
                                         steps_run=10) for s in seeds])


def test_write_result_and_manifest(tmp_path):
    r = _result()
    path = store.write_result(r, tmp_path, sweep="s", run_id="20260101T000000Z-aaaa")
    t = pq.read_table(path).to_pandas()
    assert list(t["seed"]) == [0, 1] and set(t["config_hash"]) == {r.config.config_hash()}
    assert (tmp_path / "curves" / path.rsplit("/", 1)[1]).exists()
    assert not [p for p in (tmp_path / "trials").iterdir() if p.name.startswith(".")]
    m = store.Manifest.load(tmp_path)
    assert m.done() == {(r.config.config_hash(), 0), (r.config.config_hash(), 1)}


def test_failed_rows_excluded_on_request(tmp_path):
    r = _result(status="failed")
    store.write_result(r, tmp_path, sweep="s", run_id="20260101T000000Z-aaaa")
    m = store.Manifest.load(tmp_path)
    assert len(m.done()) == 2 and m.done(include_failed=False) == set()


def test_repair_removes_temp_orphans_and_superseded(tmp_path):
    old = _result(seeds=(0, 1), status="failed")
    store.write_result(old, tmp_path, sweep="s", run_id="20260101T000000Z-aaaa")
    new = _result(seeds=(1,), status="grokked")
    store.write_result(new, tmp_path, sweep="s", run_id="20260102T000000Z-bbbb")
    (tmp_path / "trials" / ".tmp-x.parquet.1234").write_bytes(b"partial")
    other = _result(seeds=(0,), **{"model.d": 8})
    store.write_frames(tmp_path, pd.DataFrame({"a": [1]}), pd.DataFrame({"a": [1]}),
                       config_hash=other.config.config_hash(), run_id="x")
    (tmp_path / "trials" / f"{other.config.config_hash()}-x.parquet").unlink()  # died in between
    removed = store.repair(tmp_path)
    assert removed == {"temp_files": 1, "orphan_curves": 1, "orphan_snapshots": 0,
                       "superseded_rows": 1, "orphan_recomputed": 0, "duplicate_recomputed": 0}
    rows = store.Manifest.load(tmp_path).rows.sort_values("seed")
    assert list(rows["seed"]) == [0, 1] and list(rows["status"]) == ["failed", "grokked"]
    curves = pd.concat(pd.read_parquet(p) for p in (tmp_path / "curves").glob("*.parquet"))
    assert sorted(curves.groupby("seed")["run_id"].first().tolist()) == [
        "20260101T000000Z-aaaa", "20260102T000000Z-bbbb"]


def test_run_ids_sort_by_time():
    a, b = store.new_run_id(), store.new_run_id()
    assert len(a) == len("20260101T000000123456Z-abcd") and a[8] == "T" and a != b
