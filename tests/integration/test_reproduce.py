"""`grokray reproduce` end to end on tiny stand-in sweeps: it runs every sweep (one Ray for all),
records each sweep's wall and CPU time, writes the ledger, resumes, and on an interrupt writes the
ledger from what is on disk and exits 130."""

from __future__ import annotations

import json
import signal

import pandas as pd
import pytest

from grokray.cli import main
from grokray.commands import reproduce
from tests.helpers import sweeps as helpers
from tests.helpers.sweeps import ray_session  # noqa: F401


def _specs(tmp_path, monkeypatch, names=("tiny_a", "tiny_b"), steps=20):
    paths = []
    for n in names:
        p = helpers.tiny_spec(tmp_path, groups=("Z5", "Z7"), steps=steps, name=f"{n}.yaml")
        p.write_text(p.read_text().replace("name: tiny", f"name: {n}"))
        paths.append(str(p))
    monkeypatch.setattr(reproduce, "ledger_specs", lambda scale: paths)
    return paths


def _rows(out, name):
    files = list((out / name / "trials").glob("*.parquet"))
    return pd.concat(pd.read_parquet(p) for p in files) if files else pd.DataFrame()


def test_local_run_times_every_sweep_writes_the_ledger_and_resumes(tmp_path, monkeypatch,
                                                                    capsys):
    _specs(tmp_path, monkeypatch)
    out = tmp_path / "L"
    assert main(["reproduce", "--out", str(out), "--local", "--plain"]) == 0
    cap = capsys.readouterr()
    for n in ("tiny_a", "tiny_b"):
        t = _rows(out, n)
        assert len(t) == 8 and t.groupby(["config_hash", "seed"]).size().eq(1).all()
    # the progress lines say which sweep of how many, and the cost model's estimate of the rest
    assert "ledger sweep 1/2 tiny_a" in cap.err and "ledger sweep 2/2 tiny_b" in cap.err
    assert "after this sweep ~0.0 min (cost model)" in cap.err
    times = json.loads((out / reproduce.TIMES).read_text())
    assert [t["sweep"] for t in times] == ["tiny_a", "tiny_b"]
    for t in times:
        assert t["trials"] == 4 and t["failed"] == 0 and not t["interrupted"]
        assert 0 < t["max_trial_cpu_s"] <= t["trial_cpu_s"] and t["wall_s"] > 0
        assert 0 < t["model_cpu_s_expected"] <= t["model_cpu_s_upper"]
        assert t["model_wall_s_expected"] <= t["model_wall_s_upper"]
        assert t["model_expected_from_rows"] == 0 and t["host_sgemm_gflops"] > 0
    assert times[0]["model_wall_s_upper"] > times[1]["model_wall_s_upper"]  # Ray's start
    assert (out / "ledger.md").read_text().startswith("# Reproduction ledger")
    assert "total" in cap.out and "wrote" in cap.out

    # a second call runs nothing and records nothing new
    assert main(["reproduce", "--out", str(out), "--local", "--plain"]) == 0
    assert capsys.readouterr().out.count("nothing to run") == 2
    assert len(json.loads((out / reproduce.TIMES).read_text())) == 2


def test_interrupt_keeps_finished_trials_writes_the_ledger_and_resumes(tmp_path, monkeypatch,
                                                                       capsys):
    from grokray.sweep.executors import calls as worker_calls
    from grokray.sweep.interrupt import Interrupted
    from grokray.trial import run_trial

    _specs(tmp_path, monkeypatch)
    out = tmp_path / "L"
    calls = []

    def stop_on_second(cfg):
        calls.append(cfg.group)
        if len(calls) == 2:
            raise Interrupted(signal.SIGINT)
        return run_trial(cfg)

    monkeypatch.setattr(worker_calls, "default_trial_fn", lambda hook=None: stop_on_second)
    assert main(["reproduce", "--out", str(out), "--local", "--plain"]) == 130
    cap = capsys.readouterr()
    assert "interrupted during tiny_a" in cap.err
    assert len(_rows(out, "tiny_a")) == 2 and not (out / "tiny_b" / "trials").exists()
    assert (out / "ledger.md").exists()  # the ledger from what is on disk
    times = json.loads((out / reproduce.TIMES).read_text())
    assert len(times) == 1 and times[0]["interrupted"] and times[0]["trials"] == 1

    monkeypatch.setattr(worker_calls, "default_trial_fn", lambda hook=None: run_trial)
    assert main(["reproduce", "--out", str(out), "--local", "--plain"]) == 0
    assert len(_rows(out, "tiny_a")) == 8 and len(_rows(out, "tiny_b")) == 8
    assert "[1/3]" in capsys.readouterr().err  # only the 3 missing trials of tiny_a ran


@pytest.mark.ray
def test_one_embedded_ray_serves_every_sweep(tmp_path, monkeypatch, ray_session):  # noqa: F811
    import ray

    _specs(tmp_path, monkeypatch)
    out = tmp_path / "L"
    assert main(["reproduce", "--out", str(out), "--plain"]) == 0
    assert len(_rows(out, "tiny_a")) == 8 and len(_rows(out, "tiny_b")) == 8
    assert ray.is_initialized()  # the fixture's Ray: joined, used, and left up


def test_local_and_address_together_is_exit_2(tmp_path, monkeypatch, capsys):
    _specs(tmp_path, monkeypatch)
    assert main(["reproduce", "--out", str(tmp_path), "--local", "--address", "auto"]) == 2
    assert "drop --address" in capsys.readouterr().err


def test_address_reaches_the_executor(tmp_path, monkeypatch):
    from grokray.sweep.executors.factory import make_executor
    from grokray.sweep.executors.local import LocalExecutor
    from grokray.sweep.executors.tune import TuneExecutor
    from grokray.sweep.executors.warm import WarmExecutor
    from grokray.sweep.session import RaySession
    from grokray.sweep.spec import load_spec

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    spec = load_spec(str(helpers.tiny_spec(tmp_path)))
    b = make_executor(spec, "r1", RaySession(address="ray://head:10001", num_cpus=3))
    assert isinstance(b, TuneExecutor) and b.session.address == "ray://head:10001"
    assert b.session.num_cpus == 3 and b.session.joined
    assert b.storage_path == str(tmp_path / "out" / "tiny" / "_ray") and b.name == "tiny-r1"
    assert isinstance(make_executor(spec, "r1", None), LocalExecutor)
    assert isinstance(make_executor(spec, "r1", RaySession(num_cpus=3)), WarmExecutor)


def test_cpu_ledger_dry_run_prices_every_sweep_within_the_hour(capsys, monkeypatch):
    # issue 26: the ledger is sized for an hour on a host at >= 60 GFLOP/s (1-thread sgemm)
    monkeypatch.setenv("GROKRAY_HOST_GFLOPS", "60")
    assert main(["reproduce", "--scale", "cpu", "--dry-run", "--out", "/nonexistent/x"]) == 0
    text = capsys.readouterr().out
    assert text.count("cost (this host") == len(reproduce.ledger_specs("cpu"))
    assert "no cost model" not in text
    line = text.split("estimated wall time left (cost model, one Ray session): ")[1]
    expected, upper = (float(x.split(" min")[0]) for x in line.split(", ")[0:2])
    assert 0 < expected < upper and expected <= 60  # the expected ledger within the hour
