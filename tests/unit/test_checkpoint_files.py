"""Checkpoints on the sweep's driver (grokray/sweep/checkpoint_store.py): the files in the sweep
dir's `checkpoints/`, what a run of the sweep restores, what it ignores (one line), what it
removes; a local sweep cut short, restored, equals one never cut."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from grokray.checkpoint.restore import restore
from grokray.commands.status import repair as status_repair
from grokray.sweep import checkpoint_actor, checkpoint_store
from grokray.sweep.executors.local import LocalExecutor
from grokray.sweep.plan import make_plan
from grokray.sweep.spec import load_spec
from grokray.sweep.writer import run_plan
from grokray.trial import run_trial
from tests.helpers import specs
from tests.helpers.checkpoints import Killed, StepHook
from tests.helpers.checkpoints import ck_cfg as _cfg

SPEC = """\
name: ck
out: {out}
config:
  group: Z7
  op: add
  steps: 120
  eval_every: 10
  dtype: float64
  device: cpu
  checkpoint_every: 1000000000
  optim: {{lr: 0.003}}
axes:
  arch: [mlp]
  grokfast.filter: [none, ema]
seeds: 2
"""


class ChannelHook(StepHook):
    """The driver's channel as a trial's hook, checkpointing every `every` steps and dying at
    step `kill` of the run (a worker killed mid-trial)."""

    def __init__(self, ch, every, kill=None):
        super().__init__(every, kill)
        self.ch = ch

    def chain(self, h, every_s=0.0):
        return self.ch.chain(h, every_s)

    def save(self, h, step, delta, state):
        self.ch.save(h, step, delta, state)


def _spec(tmp_path):
    return specs.load(tmp_path, SPEC, "ck.yaml", out=tmp_path / "out")


def _tables(d):
    t = pd.concat(pd.read_parquet(p) for p in (d / "trials").glob("*.parquet"))
    c = pd.concat(pd.read_parquet(p) for p in (d / "curves").glob("*.parquet"))
    t = t.sort_values(["config_hash", "seed"]).reset_index(drop=True)
    c = c.sort_values(["config_hash", "seed", "step"]).reset_index(drop=True)
    drop = ["run_id", "wall_s", "started_at", "finished_at", "checkpoint_step", "hostname"]
    return t.drop(columns=drop), c.drop(columns=["run_id"])


@pytest.fixture(scope="module")
def uncut(tmp_path_factory):
    """The tables of the sweep run once, never cut: what every resumed run here must equal
    (one run serves the module's three comparisons)."""
    tmp = tmp_path_factory.mktemp("uncut")
    run_plan(make_plan(specs.load(tmp, SPEC, "ref.yaml", out=tmp / "ref_out")), LocalExecutor())
    return _tables(tmp / "ref_out" / "ck")


def _cut(spec, kills):
    """Start each config of the sweep on the driver's channel and lose it at `kills[i]`."""
    plan = make_plan(spec)
    ch = checkpoint_actor.serve(None, spec.sweep_dir, plan.todo)
    for cfg, k in zip(plan.todo, kills, strict=True):
        with pytest.raises(Killed):
            run_trial(cfg, checkpoints=ChannelHook(ch, 25, kill=k))
    ch.close()
    return plan


def test_local_sweep_resumes_from_checkpoints_and_removes_them(tmp_path, capsys, uncut):
    spec = _spec(tmp_path)
    d = tmp_path / "out" / "ck"
    plan = _cut(spec, [60, 80])
    ck = d / "checkpoints"
    names = {h: sorted(os.listdir(ck / h)) for h in os.listdir(ck)}
    assert sorted(names) == sorted(c.config_hash() for c in plan.todo)
    for files in names.values():  # deltas of the chain, the newest state only
        states = [f for f in files if f.endswith(".state.npz")]
        assert len(states) == 1 and files == sorted(files)
    steps = {h: int(f[0][:10]) for h, f in ((h, [x for x in fs if "state" in x])
                                             for h, fs in names.items())}
    assert sorted(steps.values()) == [50, 75]
    writer = run_plan(make_plan(spec), LocalExecutor())  # the next run of the sweep
    assert len(writer.outcomes) == 2
    assert not os.path.exists(ck) or os.listdir(ck) == []  # deleted when the rows landed
    t = pd.concat(pd.read_parquet(p) for p in (d / "trials").glob("*.parquet"))
    assert sorted(t.groupby("config_hash")["checkpoint_step"].first()) == [50, 75]
    got, ref = _tables(d), uncut
    pd.testing.assert_frame_equal(got[0].drop(columns=["sweep"], errors="ignore"),
                                  ref[0].drop(columns=["sweep"], errors="ignore"),
                                  check_exact=False, rtol=1e-12, atol=1e-12)
    pd.testing.assert_frame_equal(got[1], ref[1], check_exact=False, rtol=1e-12, atol=1e-12)
    assert "not used" not in capsys.readouterr().err


def test_unusable_checkpoint_one_line_and_step_zero(tmp_path, capsys):
    spec = _spec(tmp_path)
    plan = _cut(spec, [60, 60])
    d = tmp_path / "out" / "ck" / "checkpoints"
    a, b = (c.config_hash() for c in plan.todo)
    state = next(f for f in os.listdir(d / a) if "state" in f)
    with open(d / a / state, "r+b") as f:  # damaged
        f.seek(os.path.getsize(d / a / state) // 2)
        f.write(b"\0garbage\0")
    delta = sorted(f for f in os.listdir(d / b) if "delta" in f)[0]
    os.remove(d / b / delta)  # a broken chain
    capsys.readouterr()
    writer = run_plan(make_plan(spec), LocalExecutor())
    err = capsys.readouterr().err.splitlines()
    lines = [ln for ln in err if "not used" in ln]
    assert len(lines) == 2 and any(a in ln and "damaged" in ln for ln in lines)
    assert any(b in ln and "missing" in ln for ln in lines)
    assert all(s.checkpoint_step is None for o in writer.outcomes for s in o.result.seeds)


def test_status_repair_removes_orphans_and_temp_files(tmp_path):
    spec = _spec(tmp_path)
    plan = _cut(spec, [60, 60])
    run_plan(make_plan(spec), LocalExecutor())
    d = tmp_path / "out" / "ck" / "checkpoints"
    cfg = plan.todo[0]
    # the driver died between the rows and the removal: the checkpoint is an orphan
    ch = checkpoint_store.Channel()
    ch.open(spec.sweep_dir, [])
    with pytest.raises(Killed):
        run_trial(cfg, checkpoints=ChannelHook(ch, 25, kill=30))
    (d / cfg.config_hash() / ".tmp-x.state.npz.1234").write_bytes(b"partial")
    assert os.listdir(d / cfg.config_hash())
    status_repair(spec.sweep_dir)
    assert not os.path.exists(d / cfg.config_hash())


def test_chain_survives_the_file_round_trip(tmp_path):
    cfg = _cfg()
    files = checkpoint_store.Files(str(tmp_path))
    ch = checkpoint_store.Channel()
    ch.files = files
    with pytest.raises(Killed):
        run_trial(cfg, checkpoints=ChannelHook(ch, 10, kill=47))
    chain, why = files.load(cfg.config_hash())
    assert why is None and len(chain.deltas) == 4
    got = restore(chain, cfg.config_hash())
    assert got.step == 40 and sorted(got.seeds) == [0, 1]
    assert [r["step"] for r in got.seeds[0].rows] == [0, 10, 20, 30, 40]


def test_sigterm_runs_on_term_before_interrupting():
    """The graceful stop asks for checkpoints from the signal handler, while the trials run."""
    import signal
    import time

    from grokray.sweep.interrupt import Interrupted, on_signals

    calls = []
    with on_signals() as sig:
        sig.on_term = lambda: calls.append(sig.received)
        with pytest.raises(Interrupted) as exc:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    assert calls == [signal.SIGTERM] and exc.value.exit_code == 143
    with on_signals() as sig:
        sig.on_term = lambda: calls.append("no")
        with pytest.raises(Interrupted):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
    assert calls == [signal.SIGTERM]  # Ctrl-C asks nothing


def test_continued_run_cut_short_resumes_and_equals_a_run_never_cut(tmp_path, uncut):
    """A run continued from a smaller budget (grokray.sweep.continuing), cut short and resumed
    from its checkpoint, gives the rows of a run at the larger budget from step 0."""
    def spec(out, steps):
        p = tmp_path / f"ck{steps}.yaml"
        p.write_text(SPEC.format(out=out).replace("steps: 120", f"steps: {steps}"))
        return load_spec(str(p))

    out = tmp_path / "out"
    run_plan(make_plan(spec(out, 60)), LocalExecutor())
    s120 = spec(out, 120)
    plan = _cut(s120, [37, 37])
    assert all(c.continued_from.step == 60 for c in plan.todo)  # continued from 60, lost at 97
    run_plan(make_plan(s120), LocalExecutor())
    t = pd.concat(pd.read_parquet(p) for p in (out / "ck" / "trials").glob("*.parquet"))
    t = t[t["steps"] == 120]
    assert set(t["checkpoint_step"]) == {85} and set(t["continued_from_step"]) == {60}
    drop = ["continued_from", "continued_from_step"]
    t1, c1 = _tables(out / "ck")
    t1 = t1[t1["steps"] == 120].reset_index(drop=True)
    c1 = c1[c1["config_hash"].isin(set(t1["config_hash"]))].reset_index(drop=True)
    t0, c0 = uncut  # the run at the larger budget from step 0
    pd.testing.assert_frame_equal(t1.drop(columns=drop), t0.drop(columns=drop),
                                  check_exact=False, rtol=1e-12, atol=1e-12)
    pd.testing.assert_frame_equal(c1, c0, check_exact=False, rtol=1e-12, atol=1e-12)


def test_a_lost_trial_keeps_its_checkpoints_for_rerun_failed(tmp_path, uncut):
    """Two trials fail after a checkpoint at 50: one by itself (an exception in its trial: its
    row comes back failed), one lost to its worker on every try (`Outcome.lost`). The first's
    checkpoints go with its row; the second's stay through a plain run of the sweep and
    `status --repair`, and `--rerun-failed` resumes it from them, with the rows of a sweep never
    cut."""
    from grokray.sweep.outcome import Outcome
    from grokray.sweep.writer import Writer, failed_result

    spec = _spec(tmp_path)
    plan = _cut(spec, [60, 60])
    a, b = plan.todo
    d = tmp_path / "out" / "ck" / "checkpoints"
    ch = checkpoint_actor.serve(None, spec.sweep_dir, plan.todo)
    writer = Writer(plan)
    writer.landed = ch.land
    writer.finished(Outcome(a, failed_result(a, "RuntimeError: boom in the model")))
    writer.finished(Outcome(b, None, error="lost after 3 tries: WorkerCrashedError", lost=True))
    writer.close()
    ch.close()
    assert sorted(os.listdir(d)) == [b.config_hash()]
    again = make_plan(spec)
    assert again.todo == []  # failed rows count as done
    checkpoint_actor.serve(None, spec.sweep_dir, again.todo).close()  # a plain run's start
    status_repair(spec.sweep_dir)
    assert sorted(os.listdir(d)) == [b.config_hash()]
    rerun = make_plan(spec, rerun_failed=True)
    run_plan(rerun, LocalExecutor())
    assert not os.path.exists(d)
    t = pd.concat(pd.read_parquet(p) for p in (tmp_path / "out" / "ck" / "trials").glob("*"))
    assert len(t) == 4 and (t["status"] != "failed").all()
    steps = t.groupby("config_hash")["checkpoint_step"].first()
    assert steps[b.config_hash()] == 50 and pd.isna(steps[a.config_hash()])
    got, ref = _tables(tmp_path / "out" / "ck"), uncut
    pd.testing.assert_frame_equal(got[0].drop(columns=["sweep"], errors="ignore"),
                                  ref[0].drop(columns=["sweep"], errors="ignore"),
                                  check_exact=False, rtol=1e-12, atol=1e-12)
    pd.testing.assert_frame_equal(got[1], ref[1], check_exact=False, rtol=1e-12, atol=1e-12)
