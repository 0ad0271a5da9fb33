"""`grokray sweep --pack`: a packed grid writes the rows an unpacked one writes (float64), in
process and on the warm workers; resume runs only the missing members; a bad value exits 2."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from grokray.cli import main
from tests.helpers import specs

SPEC = """name: packed
out: {out}
config:
  group: S3
  arch: {arch}
  device: cpu
  dtype: float64
  model: {{d: 8, hidden: 16, rank: 8}}
  forge: {{inv_hidden: 8}}
  metrics: {{patience: 0}}
axes:
  optim.lr: [0.003, 0.01, 0.03]
  optim.weight_decay: [0.1, 1.0]
seeds: 2
steps: 40
eval_every: 10
resources: {{cpu: 1, gpu: 0}}
concurrency: 2
retries: 1
"""


def _spec(tmp_path, out, arch="mlp"):
    return str(specs.write(tmp_path, SPEC, f"{out}-{arch}.yaml", out=tmp_path / out, arch=arch))


def _trials(tmp_path, out):
    t = pd.concat(pd.read_parquet(p) for p in (tmp_path / out / "packed" / "trials")
                  .glob("*.parquet"))
    return t.sort_values(["config_hash", "seed"]).reset_index(drop=True)


def _assert_same_rows(a, b):
    assert len(a) == len(b) == 12
    exact = ["config_hash", "seed", "status", "grok_step", "memorize_step", "steps_run"]
    pd.testing.assert_frame_equal(a[exact], b[exact])
    pd.testing.assert_frame_equal(a[["final_val_loss", "final_train_loss"]],
                                  b[["final_val_loss", "final_train_loss"]], rtol=1e-10)


def _snapshots(tmp_path, out):
    files = sorted((tmp_path / out / "packed" / "snapshots").glob("*.parquet"))
    assert len(files) == 6  # one per config: the configs of a pack share seeds
    t = pd.concat(pd.read_parquet(p) for p in files)
    return t.sort_values(["config_hash", "seed", "step", "tensor"]).reset_index(drop=True)


@pytest.mark.parametrize("arch", ["mlp", "forge"])
def test_local_packed_sweep_writes_the_unpacked_rows(tmp_path, arch, capsys):
    assert main(["sweep", _spec(tmp_path, "off", arch), "--local", "--plain"]) == 0
    assert main(["sweep", _spec(tmp_path, "on", arch), "--local", "--plain", "--pack", "3"]) == 0
    _assert_same_rows(_trials(tmp_path, "off"), _trials(tmp_path, "on"))
    off, on = _snapshots(tmp_path, "off"), _snapshots(tmp_path, "on")
    key = ["config_hash", "seed", "step", "tags", "tensor", "dtype"]
    pd.testing.assert_frame_equal(off[key], on[key])
    for a, b in zip(off["values"], on["values"], strict=True):
        assert a == pytest.approx(b, rel=1e-10, abs=1e-12)


@pytest.mark.ray
def test_warm_workers_pack_auto_and_resume_runs_only_missing(tmp_path):
    spec = _spec(tmp_path, "on")
    assert main(["sweep", spec, "--plain", "--pack", "auto", "--num-cpus", "2"]) == 0
    assert main(["sweep", _spec(tmp_path, "off"), "--local", "--plain"]) == 0
    _assert_same_rows(_trials(tmp_path, "off"), _trials(tmp_path, "on"))
    # drop one config's rows: a resume runs that config alone, the others stay as written
    trials = tmp_path / "on" / "packed" / "trials"
    victim = sorted(trials.glob("*.parquet"))[0]
    gone = set(pd.read_parquet(victim)["config_hash"])
    victim.unlink()
    assert main(["sweep", spec, "--local", "--plain", "--pack", "auto", "--no-summary"]) == 0
    after = _trials(tmp_path, "on")
    assert len(after) == 12 and after.groupby(["config_hash", "seed"]).size().eq(1).all()
    assert gone <= set(after["config_hash"])


def test_dry_run_counts_packs_and_bad_value_exits_2(tmp_path, capsys):
    spec = _spec(tmp_path, "dry")
    assert main(["sweep", spec, "--dry-run", "--json", "--pack", "4"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["pack_size"], d["packs"], d["packed_configs"], d["unpacked_configs"]) == \
        (4, 2, 6, 0)
    assert main(["sweep", spec, "--dry-run", "--json"]) == 0
    assert "packs" not in json.loads(capsys.readouterr().out)
    assert main(["sweep", spec, "--dry-run", "--pack", "many"]) == 2
    err = capsys.readouterr().err
    assert "--pack 'many': valid: off, auto" in err and "Traceback" not in err
