import subprocess
import sys
from datetime import datetime, timezone

import pandas as pd

from grokray.config import TrialConfig
from grokray.result import SeedResult, TrialResult
from grokray.schema import (
    CURVE_REQUIRED_COLUMNS,
    IDENTITY_COLUMNS,
    OUTCOME_COLUMNS,
    PROVENANCE_COLUMNS,
    SCHEMA_VERSION,
    curve_frame,
    trial_frame,
)


def _result():
    cfg = TrialConfig.from_dict({"group": "S3", "arch": "forge", "seeds": [4, 5],
                                 "grokfast": {"filter": "ema"}})
    seeds = [
        SeedResult(4, 4, "grokked", grok_step=300, memorize_step=100, steps_run=500,
                   final={"final_train_acc": 1.0, "final_val_acc": 1.0, "final_train_loss": 0.01,
                          "final_val_loss": 0.02}, metrics={"eff_modes": 3.5}),
        SeedResult(5, 5, "failed", error="RuntimeError: x", steps_run=7),
    ]
    curves = pd.DataFrame({"seed": [4, 4, 5], "step": [0, 100, 0], "train_loss": [1.0, 0.5, 1.0],
                           "train_acc": [0.1, 0.9, 0.1], "val_loss": [1.0, 0.7, 1.0],
                           "val_acc": [0.1, 0.5, 0.1], "loss_assoc": [0.1, 0.01, 0.2]})
    t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return TrialResult(cfg, 123, "cpu", 2.5, t, t, seeds, curves, group_order=6)


def test_trial_frame_columns_and_values():
    df = trial_frame(_result(), "sw", "r1")
    assert len(df) == 2
    for c in IDENTITY_COLUMNS + OUTCOME_COLUMNS + PROVENANCE_COLUMNS + ["config_json"]:
        assert c in df.columns, c
    row = df.iloc[0]
    assert row.schema_version == SCHEMA_VERSION and row.sweep == "sw" and row.run_id == "r1"
    assert row.config_hash == _result().config.config_hash()
    assert row.model_rank == 256 and row.optim_lr == 1e-3 and row.group == "S3"
    assert row.group_order == 6 and row.arm == "forge+grokfast" and row.n_params == 123
    assert row.metric_eff_modes == 3.5 and row.grok_step == 300
    assert pd.isna(df.iloc[1].grok_step) and df.iloc[1].error == "RuntimeError: x"
    assert str(df.grok_step.dtype) == "Int64"
    assert str(df.started_at.dtype).startswith("datetime64") and "UTC" in str(df.started_at.dtype)
    assert "seeds" not in df.columns and '"seeds"' not in row.config_json
    assert list(df.data_seed) == [4, 5]


def test_trial_frame_round_trips_parquet(tmp_path):
    df = trial_frame(_result(), "sw", "r1")
    p = tmp_path / "t.parquet"
    df.to_parquet(p)
    back = pd.read_parquet(p)
    assert list(back.columns) == list(df.columns) and back.grok_step.iloc[0] == 300


def test_a_failed_trials_rows_keep_the_float_columns_typed(tmp_path):
    """A trial whose every seed failed has no final metrics: its final_* and metric_* columns
    are float64 nulls on disk (not Parquet's untyped null), so that reading it beside a trial
    that finished gives float64 columns, with no all-NA concatenation warning."""
    import warnings

    from grokray.sweep.writer import failed_result

    res = _result()
    failed = failed_result(res.config.with_overrides({"seeds": [6]}), "lost after 3 tries: x")
    failed.seeds[0].metrics = {"eff_modes": None}
    frames = []
    for i, r in enumerate((res, failed)):
        trial_frame(r, "sw", "r1").to_parquet(tmp_path / f"{i}.parquet")
        frames.append(pd.read_parquet(tmp_path / f"{i}.parquet"))
    for c in ("final_train_acc", "final_val_acc", "final_train_loss", "final_val_loss",
              "metric_eff_modes"):
        assert str(frames[1][c].dtype) == "float64" and frames[1][c].isna().all(), c
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        both = pd.concat(frames, ignore_index=True)
    assert str(both.final_val_acc.dtype) == "float64"
    assert both.final_val_acc.tolist()[0] == 1.0 and both.final_val_acc.isna().tolist() == [
        False, True, True]


def test_curve_frame():
    c = curve_frame(_result(), "sw", "r1")
    assert list(c.columns[: len(CURVE_REQUIRED_COLUMNS)]) == CURVE_REQUIRED_COLUMNS
    assert "loss_assoc" in c.columns and len(c) == 3
    assert set(c.arm) == {"forge+grokfast"} and set(c.group) == {"S3"}


def test_schema_imports_no_torch_or_ray():
    code = ("import sys, grokray.schema; "
            "assert 'torch' not in sys.modules and 'ray' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
