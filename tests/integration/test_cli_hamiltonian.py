"""The hamiltonian family through `grokray run`: registry, trial runner, Parquet contract."""

from __future__ import annotations

import json

import pandas as pd

from grokray.cli import main


def test_run_kepler_writes_drift_columns(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GROKRAY_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    rc = main(["run", "--set", "arch=hamiltonian", "--set", "group=Z2", "--set", "steps=20",
               "--set", "eval_every=10", "--set", "optim.weight_decay=0",
               "--set", "hamiltonian.system=kepler", "--set", "hamiltonian.step=dad",
               "--set", "hamiltonian.rollout_steps=30", "--set", "hamiltonian.n_traj=4",
               "--set", "hamiltonian.traj_steps=5", "--set", "hamiltonian.hidden=16",
               "--seeds", "2", "--out", str(out), "--json"])
    assert rc == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in rows] == ["not_grokked", "not_grokked"]
    T = pd.concat(pd.read_parquet(f) for f in (out / "trials").glob("*.parquet"))
    assert len(T) == 2 and set(T["hamiltonian_system"]) == {"kepler"}
    for c in ("metric_drift_energy", "metric_drift_angular_momentum", "metric_blowups",
              "metric_ref_drift_energy"):
        assert T[c].notna().all(), c
    assert (T["metric_ref_drift_energy"] < T["metric_drift_energy"]).all()
    C = pd.concat(pd.read_parquet(f) for f in (out / "curves").glob("*.parquet"))
    assert sorted(set(C["step"])) == [0, 10, 20] and C["loss_inv"].notna().all()


def test_bad_system_is_one_line(tmp_path, capsys):
    rc = main(["run", "--set", "arch=hamiltonian", "--set", "hamiltonian.system=duffing",
               "--out", str(tmp_path)])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kepler" in err
