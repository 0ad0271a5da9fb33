"""`grokray slurm` without Slurm: time parsing, the allocation's end, which trials fit before
it, the lock a requeued run takes over, the dry run, and bad input (one line, exit 2, before
anything is submitted)."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import time
from datetime import datetime

import pytest

from grokray.cli import main
from grokray.errors import GrokrayError
from grokray.slurm import allocation
from grokray.slurm.deadline import Deadline, fitting
from grokray.slurm.timefmt import format_time, parse_time, slurm_seconds
from grokray.sweep.lock import LOCK, LockHeld, WriterLock
from tests.helpers import specs

TINY = """\
name: tiny
out: {out}
config: {{group: Z5, arch: mlp, device: cpu, train_frac: 0.5}}
axes:
  optim.lr: [0.001, 0.002]
seeds: 2
steps: 100
eval_every: 50
resources: {{cpu: 1, gpu: 0}}
"""


@pytest.mark.parametrize("text, seconds", [
    ("30", 1800), ("01:30", 90), ("1:00:00", 3600), ("04:00:00", 14400), ("1-2", 93600),
    ("1-02:30", 95400), ("2-00:00:01", 172801), (" 10 ", 600),
])
def test_parse_time(text, seconds):
    assert parse_time(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "1:61:00", "0", "00:00:00", "1-25:00",
                                  "1:2:3:4", "-5", "1h"])
def test_parse_time_refuses(text):
    with pytest.raises(GrokrayError, match="valid: MM, MM:SS, HH:MM:SS"):
        parse_time(text)


def test_format_time_round_trips():
    for s in (60, 3599, 3600, 86399, 86400, 172801):
        assert parse_time(format_time(s)) == s
    assert format_time(93600) == "1-02:00:00" and format_time(90) == "00:01:30"
    assert slurm_seconds(90) == 120 and slurm_seconds(120) == 120


def test_end_time_from_env_and_squeue_format(monkeypatch):
    env = {"SLURM_JOB_ID": "7", "SLURM_JOB_END_TIME": "1900000000"}
    assert allocation.end_time(env=env) == 1900000000.0
    assert allocation.end_time(env={}) is None  # not in a job
    local = datetime(2026, 12, 3, 14, 5, 0)
    assert allocation.parse_end("2026-12-03T14:05:00") == local.timestamp()
    for text in ("N/A", "Unknown", "NONE", ""):
        assert allocation.parse_end(text) is None
    # no SLURM_JOB_END_TIME (Slurm before 23.02): squeue's %e
    monkeypatch.setattr(allocation, "_ask", lambda cmd: "2026-12-03T14:05:00\n"
                        if cmd[0] == "squeue" else "")
    assert allocation.end_time(env={"SLURM_JOB_ID": "7"}) == local.timestamp()
    monkeypatch.setattr(allocation, "_ask", lambda cmd: "" if cmd[0] == "squeue" else
                        "JobId=7 JobName=x EndTime=2026-12-03T14:05:00 Deadline=N/A")
    assert allocation.end_time(env={"SLURM_JOB_ID": "7"}) == local.timestamp()
    assert allocation.signal_lead({"GROKRAY_SLURM_SIGNAL_S": "90"}) == 90.0
    assert allocation.restart_count({"SLURM_RESTART_COUNT": "2"}) == 2


def test_fitting_lays_longest_first_on_slots():
    cfgs = list("abcdef")
    secs = [50.0, 10.0, 40.0, 30.0, None, 200.0]
    # 2 slots, 100 s: f (200) never fits; a (50) and c (40) start at 0; d (30) after c at 40
    # -> ends 70; b (10) after a at 50 -> 60; e (no estimate) at 60
    fits, rest = fitting(cfgs, secs, 2, 100.0)
    assert [cfgs[i] for i in fits] == list("abcde") and [cfgs[i] for i in rest] == ["f"]
    fits, rest = fitting(cfgs, secs, 1, 60.0)
    assert [cfgs[i] for i in fits] == ["a", "b"]
    fits, rest = fitting(cfgs, secs, 4, 0.0)
    assert fits == [] and len(rest) == 6
    # with checkpoints every 60 s a trial needs only reach its first one: f (200 s) starts at
    # 0 and holds its slot for its whole estimate; a 0-50, c 50-90, b 90-100; d would end at 120
    fits, rest = fitting(cfgs, secs, 2, 100.0, [60.0] * 6)
    assert [cfgs[i] for i in fits] == list("abcf") and [cfgs[i] for i in rest] == list("de")
    # a checkpoint interval longer than the trials (the default 600 s): each needs its end
    assert fitting(cfgs, secs, 2, 100.0, [600.0] * 6) == fitting(cfgs, secs, 2, 100.0)
    # a trial with a checkpoint is laid first: b (10 s) then a (50 s) ends at 60 > 55
    assert fitting(list("ab"), [50.0, 10.0], 1, 55.0) == ([0], [1])
    assert fitting(list("ab"), [50.0, 10.0], 1, 55.0, first={1}) == ([1], [0])


def test_deadline_lines():
    d = Deadline(stop_at=time.time() + 600, job="42", secs={"h": 900.0})

    class C:
        def config_hash(self):
            return "h"
    assert "15.0 min" in d.later_line([C()]) and "job 42" in d.later_line([C()])
    line = d.no_progress_line([C()])
    assert "no new row and no newer checkpoint" in line and "longer --time" in line


def test_lock_taken_over_by_the_same_jobs_next_run(tmp_path, monkeypatch):
    """A requeued run (any host) takes over the lock of an earlier run of its own job; another
    job, or the same run, does not."""
    d = tmp_path / "sweep"
    d.mkdir()

    def held_by(job, run, host="another-node"):
        (d / LOCK).write_text(json.dumps({"host": host, "pid": 1, "started_at": "t",
                                          "command": "grokray sweep", "token": "x",
                                          "slurm_job": job, "slurm_run": run}))
        os.utime(d / LOCK)  # a fresh heartbeat: not stale by age

    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "2")
    held_by("77", 1)
    with WriterLock(str(d), "grokray sweep") as lock:
        assert "run 1 of Slurm job 77, which ended (this is run 2)" in lock.notice
        info = json.loads((d / LOCK).read_text())
        assert info["slurm_job"] == "77" and info["slurm_run"] == 2
    for job, run in (("78", 1), ("77", 2)):
        held_by(job, run)
        with pytest.raises(LockHeld, match="another-node"):
            WriterLock(str(d), "grokray sweep").acquire()
    monkeypatch.delenv("SLURM_JOB_ID")
    held_by("77", 1)
    with pytest.raises(LockHeld):
        WriterLock(str(d), "grokray sweep").acquire()


def test_trial_records_its_own_host():
    from grokray.config import TrialConfig
    from grokray.schema import trial_frame
    from grokray.trial import run_trial

    cfg = TrialConfig.from_dict({"group": "Z5", "arch": "mlp", "steps": 20, "eval_every": 10,
                                 "seeds": [0], "device": "cpu"})
    res = run_trial(cfg)
    assert res.hostname == socket.gethostname()
    res.hostname = "node-7"  # as if it ran elsewhere than the driver
    assert trial_frame(res, "s", "r")["hostname"].tolist() == ["node-7"]


def test_failed_row_names_where_the_trial_raised_and_no_host_when_lost(tmp_path):
    """A failed row made on the driver names the host the trial raised on, or none for a trial
    that was lost (its worker gone): never the driver's host, where no trial ran."""
    import pandas as pd

    from grokray.config import TrialConfig
    from grokray.sweep.outcome import Outcome, execute
    from grokray.sweep.plan import make_plan
    from grokray.sweep.spec import load_spec
    from grokray.sweep.writer import Writer

    def boom(cfg):
        raise ValueError("no")

    cfg = TrialConfig.from_dict({"group": "Z5", "arch": "mlp", "steps": 20, "eval_every": 10,
                                 "seeds": [0], "device": "cpu"})
    raised = execute(cfg, boom)
    assert raised.error and raised.hostname == socket.gethostname()  # on the worker
    spec_path = tmp_path / "tiny.yaml"
    spec_path.write_text(TINY.format(out=tmp_path / "out"))
    plan = make_plan(load_spec(spec_path))
    a, b = plan.todo
    raised = Outcome(a, None, error="ValueError: no", hostname="node-7")  # as from a worker
    lost = Outcome(b, None, error="lost after 2 tries: worker died")      # made on the driver
    w = Writer(plan)
    for o in (raised, lost):
        w.finished(o)
    w.close()
    df = pd.concat(pd.read_parquet(f) for f in (tmp_path / "out" / "tiny" / "trials").iterdir())
    assert len(df) == 4 and (df["status"] == "failed").all()  # 2 configs x 2 seeds
    by = df.set_index("config_hash")["hostname"]
    assert by.loc[a.config_hash()].tolist() == ["node-7", "node-7"]
    assert by.loc[b.config_hash()].isna().all(), by.loc[b.config_hash()].tolist()


# ---------------------------------------------------------------- the command


def _spec(tmp_path, out=None):
    return specs.write(tmp_path, TINY, "tiny.yaml", out=out or tmp_path / "results")


def test_dry_run_prints_script_and_allocations(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch: a dry run does not need it
    spec = _spec(tmp_path)
    rc = main(["slurm", str(spec), "--dry-run", "--nodes", "2", "--cpus-per-node", "4",
               "--time", "00:30:00", "--partition", "short"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.startswith("#!/bin/bash") and "#SBATCH --nodes=2" in out
    assert "#SBATCH --partition=short" in out and "#SBATCH --time=00:30:00" in out
    assert "allocation: 2 nodes x 00:30:00 = 1.00 node-hours; 4 CPUs per node; 8 trial slots" \
        in out
    assert "likely 1 allocation, at most 1" in out
    assert "to run: 2 trials, 4 seed-runs" in out
    assert not (tmp_path / "results").exists()  # a dry run writes nothing


def test_dry_run_counts_allocations(tmp_path, capsys):
    from grokray.slurm.costs import AllocationFit, fit_text

    f = AllocationFit(slots=4, usable_s=3000.0, wall_s_expected=7000.0, wall_s_upper=20000.0,
                      longest_s=4000.0, cpu_per_node=4, cpus_given=True)
    text = fit_text(f, 1, 3600, 120, max_requeues=3)
    assert "likely 3 allocations, at most 7" in text
    assert "--max-requeues 3 allows 4 allocations" in text
    assert "longer than an allocation" in text


def test_warns_for_node_local_paths(tmp_path, capsys, monkeypatch):
    from grokray.commands.slurm import node_local

    assert node_local("/tmp/x") and node_local("/dev/shm/y") and not node_local("s3://b/x")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert node_local(str(tmp_path / "results"))
    assert main(["slurm", str(_spec(tmp_path)), "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert "warning: the spec" in err and "node-local" in err


@pytest.mark.parametrize("args, message", [
    (["--time", "90min"], "is not a Slurm time"),
    (["--nodes", "0"], "--nodes 0: at least 1"),
    (["--max-requeues", "-1"], "0 or more"),
    (["--signal-lead", "3000", "--time", "00:10:00"], "--signal-lead 3000"),
    (["--pack", "many"], "pack"),
    (["--sbatch-arg", "constraint=a100"], "one sbatch option"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, args, message):
    rc = main(["slurm", str(_spec(tmp_path)), "--dry-run", *args])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and message in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize("time, lead", [("00:02:00", 60), ("1", 30), ("00:00:45", 15),
                                        ("00:04:00", 120), ("01:00:00", 120)])
def test_the_default_signal_lead_fits_the_time_limit(tmp_path, capsys, time, lead):
    """A short --time gets half of it as its lead (at most 120 s, leaving 30 s to run)."""
    from grokray.commands.slurm import default_lead
    from grokray.slurm.timefmt import parse_time

    assert default_lead(parse_time(time)) == lead
    assert main(["slurm", str(_spec(tmp_path)), "--dry-run", "--time", time]) == 0
    assert f"#SBATCH --signal=B:USR1@{lead}\n" in capsys.readouterr().out


def test_a_lead_that_does_not_fit_says_what_to_pass(tmp_path, capsys):
    rc = main(["slurm", str(_spec(tmp_path)), "--dry-run", "--time", "00:02:00",
               "--signal-lead", "120"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err == (
        "grokray slurm: error: --signal-lead 120 does not fit --time 00:02:00 (120 s): pass a "
        "lead of 10 to 90 s (e.g. --signal-lead 60), or a --time of at least 150 s")
    rc = main(["slurm", str(_spec(tmp_path)), "--dry-run", "--time", "00:00:30"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err == ("grokray slurm: error: --time 00:00:30 (30 s) leaves no time to "
                               "run: at least 40 s (e.g. --time 00:05:00)")


def test_no_sbatch_is_one_line_before_anything_is_written(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    rc = main(["slurm", str(_spec(tmp_path))])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "no 'sbatch' on PATH" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "results").exists()


def test_spec_error_and_unwritable_out(tmp_path, capsys, monkeypatch):
    sbatch = tmp_path / "bin" / "sbatch"
    sbatch.parent.mkdir()
    sbatch.write_text("#!/bin/sh\necho submitted >> " + str(tmp_path / "calls") + "\n")
    sbatch.chmod(0o755)
    monkeypatch.setenv("PATH", f"{sbatch.parent}:{os.environ['PATH']}")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\naxes:\n  nosuch.key: [1, 2]\n")
    assert main(["slurm", str(bad)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    assert main(["slurm", str(_spec(tmp_path)), "--out", str(blocker / "out")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "calls").exists()  # nothing was submitted


def test_submits_and_prints_how_to_follow(tmp_path, capsys, monkeypatch):
    sbatch = tmp_path / "bin" / "sbatch"
    sbatch.parent.mkdir()
    sbatch.write_text("#!/bin/sh\necho \"$@\" > " + str(tmp_path / "calls") + "\necho 123\n")
    sbatch.chmod(0o755)
    monkeypatch.setenv("PATH", f"{sbatch.parent}:{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    assert main(["slurm", str(_spec(tmp_path)), "--time", "10", "--max-requeues", "1"]) == 0
    out = capsys.readouterr().out
    script = tmp_path / "results" / "tiny" / "slurm" / "tiny.sbatch"
    assert (tmp_path / "calls").read_text().split() == ["--parsable", str(script)]
    assert f"wrote {script}" in out and "submitted Slurm job 123" in out
    assert "squeue -j 123" in out and f"grokray status {tmp_path / 'results' / 'tiny'}" in out
    assert "scancel --batch --signal=TERM 123" in out
    text = script.read_text()
    assert os.access(script, os.X_OK) and f"cd {tmp_path}" in text
    assert '[ "$RUN" -lt 1 ]' in text and "#SBATCH --time=00:10:00" in text


@dataclasses.dataclass
class _Cfg:
    """A config as the deadline's rounds see it: its hash (the name) and, where a test prices
    by it, its seconds."""

    name: str = "x"
    secs: float = 0.0

    def config_hash(self):
        return self.name


@dataclasses.dataclass
class _Plan:
    spec: object
    todo: list


@dataclasses.dataclass
class _Spec:
    sweep_dir: str = "/nonexistent/sweep"
    search: object = None
    gpu: float = 0.0
    cpu: float = 1.0
    concurrency: object = None


@dataclasses.dataclass
class _Session:
    n: int = 2

    def slots(self, cpu, concurrency):
        return self.n


def test_deadline_runs_rounds_of_what_fits(monkeypatch):
    """Round 1 starts what fits in the time left; after it, with the time then left, round 2
    starts what fits now; what never fits is left for the next allocation."""
    from grokray.slurm import deadline as dl

    monkeypatch.setattr(dl, "model_seconds",
                        lambda cfg, gpu=0.0, steps=None, done=0: cfg.secs - dl.OVERHEAD_S)
    lefts = iter([100.0, 100.0, 60.0, 60.0, 5.0])
    monkeypatch.setattr(dl.Deadline, "left", lambda self: next(lefts))
    todo = [_Cfg("a", 50), _Cfg("b", 40), _Cfg("c", 70), _Cfg("d", 55), _Cfg("e", 500)]
    ran = []
    later = dl.Deadline(stop_at=0, job="9").run(_Plan(_Spec(), todo),
                                                lambda p: ran.append([c.name for c in p.todo]),
                                                _Session())
    # 100 s on 2 slots, longest first: c 0-70, d 0-55, then a (55-105) is too late and b
    # (55-95) fits; with 60 s left, a fits; e (500 s) never does
    assert ran == [["c", "d", "b"], ["a"]]  # each round in the order it was laid
    assert [c.name for c in later] == ["e"]


def test_pace_is_the_median_measured_and_never_below_the_model():
    from grokray.slurm.deadline import pace_of

    assert pace_of([]) == 1.0                      # nothing measured: the cost model's times
    assert pace_of([0.4, 0.8]) == 1.0              # faster than priced: still 1x
    assert pace_of([2.0, 3.5, 9.0]) == 3.5         # one slow trial does not swing it
    assert pace_of([1.5, 2.5]) == 2.0


def test_measured_pace_of_a_finished_trial(monkeypatch):
    """Wall time over the model's time for the steps the trial trained here: a seed resumed
    from a checkpoint (or continued) counts only the steps past it."""
    from types import SimpleNamespace as NS

    from grokray.slurm import deadline as dl

    asked = []

    def model(cfg, gpu=0.0, steps=None, done=0):
        asked.append(list(steps))
        return 0.01 * sum(steps)

    monkeypatch.setattr(dl, "model_seconds", model)

    def seed(run, ck=None, cont=None):
        return NS(steps_run=run, checkpoint_step=ck, continued_from_step=cont)

    res = NS(seeds=[seed(1000), seed(600, ck=200), seed(900, cont=400)])
    out = NS(config="cfg", result=res, error=None, wall_s=57.0)
    assert dl.measured_pace(out) == pytest.approx(57.0 / 19.0)  # (1000 + 400 + 500) x 0.01
    assert asked == [[1000, 400, 500]]
    assert dl.measured_pace(NS(config="c", result=None, error="lost", wall_s=9.0)) is None
    tiny = NS(config="c", result=NS(seeds=[seed(100)]), error=None, wall_s=9.0)
    assert dl.measured_pace(tiny) is None  # priced 1 s: mostly its start, no measurement


def test_deadline_learns_the_pace_of_this_allocation(monkeypatch):
    """Until a trial has finished here, a round holds one wave (a trial per slot); then the
    estimates are scaled by the measured pace: at 3x, what the model says fits does not."""
    from types import SimpleNamespace as NS

    from grokray.slurm import deadline as dl

    monkeypatch.setattr(dl, "model_seconds", lambda cfg, gpu=0.0, steps=None, done=0: 20.0)
    monkeypatch.setattr(dl, "first_checkpoint_s", lambda cfg: None)

    def sweep(pace, lefts, learn=True):
        left = iter(lefts)
        monkeypatch.setattr(dl.Deadline, "left", lambda self: next(left))
        done, ran = [], []

        def run_part(p):
            ran.append([c.name for c in p.todo])
            done.extend(NS(config=c, result=NS(seeds=[NS(steps_run=100, checkpoint_step=None,
                                                         continued_from_step=None)]),
                           error=None, wall_s=20.0 * pace) for c in p.todo)

        d = dl.Deadline(stop_at=0, job="9")
        later = d.run(_Plan(_Spec(), [_Cfg(x) for x in "abcdef"]), run_part, _Session(),
                      (lambda: done) if learn else None)
        return d, ran, [c.name for c in later]

    # the model says 25 s a trial (20 + 5): 6 trials on 2 slots fit in 100 s
    d, ran, later = sweep(3.0, [100.0, 75.0, 75.0, 10.0])
    assert ran[0] == ["a", "b"]                 # one wave first
    assert d.pace() == 3.0 and d.secs["c"] == 65.0
    assert ran[1:] == [["c", "d"]] and later == ["e", "f"]  # 75 s left: one 65 s trial a slot
    # trials as fast as priced (or faster): after the wave, everything the model fits
    d, ran, later = sweep(0.5, [100.0, 75.0])
    assert d.pace() == 1.0 and ran == [["a", "b"], ["c", "d", "e", "f"]] and later == []
    # no outcomes to learn from (packs): the model's times, all in one round
    d, ran, later = sweep(3.0, [100.0], learn=False)
    assert ran == [list("abcdef")] and later == []


def test_a_trial_needs_its_start_and_its_first_checkpoint_before_the_limit(monkeypatch):
    """A 100 s trial that checkpoints every 20 s of trial time may start with its start
    (OVERHEAD_S) and 20 s left, not with 20 s alone."""
    from grokray.slurm import deadline as dl

    monkeypatch.setattr(dl, "model_seconds", lambda cfg, gpu=0.0, steps=None, done=0: 100.0)
    monkeypatch.setattr(dl, "first_checkpoint_s", lambda cfg: 20.0)
    for left, starts in ((20.0 + dl.OVERHEAD_S - 1, False), (20.0 + dl.OVERHEAD_S + 1, True)):
        monkeypatch.setattr(dl.Deadline, "left", lambda self, v=left: v)
        ran = []
        later = dl.Deadline(stop_at=0, job="1").run(_Plan(_Spec(), [_Cfg()]), ran.append,
                                                    _Session(1))
        assert bool(ran) is starts and len(later) == (0 if starts else 1)


def test_a_checkpointed_trial_is_priced_for_the_steps_it_has_left(tmp_path, monkeypatch):
    """The newest checkpoint state's step (from its file name) comes off the trial's budget:
    a trial cut at 900 of 1,000 steps fits where a whole one would not."""
    from grokray.config import TrialConfig
    from grokray.slurm import deadline as dl

    ck = tmp_path / "checkpoints"
    (ck / "h1").mkdir(parents=True)
    (ck / "h2").mkdir()
    for name in ("0000001000.state.npz", "0000003000.state.npz", "0000003000.delta.npz",
                 "0000004000.delta.npz"):
        (ck / "h1" / name).write_bytes(b"x")
    (ck / "h2" / "0000000500.delta.npz").write_bytes(b"x")  # a delta alone: no state
    assert dl.checkpoint_steps(str(tmp_path)) == {"h1": 3000}
    assert dl.checkpoint_steps(str(tmp_path / "none")) == {}
    # the cost model: a checkpoint at 1,200 of 2,000 steps leaves the cost of 800
    cfg = TrialConfig.from_dict({"group": "Z5", "arch": "mlp", "steps": 2000, "eval_every": 100,
                                 "seeds": [0, 1], "device": "cpu"})
    assert dl.model_seconds(cfg, done=1200) == dl.model_seconds(cfg, steps=[800, 800])
    assert dl.model_seconds(cfg, done=1200) < dl.model_seconds(cfg)

    monkeypatch.setattr(dl, "checkpoint_steps", lambda d: {"a": 900})
    monkeypatch.setattr(dl, "model_seconds",
                        lambda cfg, gpu=0.0, steps=None, done=0: 0.1 * (1000 - done))
    monkeypatch.setattr(dl.Deadline, "left", lambda self: 120.0)
    ran = []
    later = dl.Deadline(stop_at=0, job="3").run(
        _Plan(_Spec(str(tmp_path)), [_Cfg("a"), _Cfg("b")]),
        lambda p: ran.append([c.name for c in p.todo]), _Session(1))
    # a (10 + 5 s, laid first: it has a checkpoint) then b (105 s): both end by 120 s;
    # priced whole, a (105 s) would wait
    assert ran == [["a", "b"]] and later == []
    # two slots, 90 s, checkpoints every 20 s: the two resumed trials (40 + 5 s) first, then
    # the fresh ones (100 + 5 s), which reach their first checkpoint (25 s) by 70 s; laid
    # longest first instead, c and d would start first and a, b wait for the next allocation
    monkeypatch.setattr(dl, "checkpoint_steps", lambda d: {"a": 600, "b": 600})
    monkeypatch.setattr(dl, "first_checkpoint_s", lambda cfg: 20.0)
    monkeypatch.setattr(dl.Deadline, "left", lambda self: 90.0)

    ran = []
    later = dl.Deadline(stop_at=0, job="3").run(
        _Plan(_Spec(str(tmp_path)), [_Cfg(x) for x in "cdab"]),
        lambda p: ran.append([c.name for c in p.todo]), _Session(2))
    assert ran == [["a", "b", "c", "d"]] and later == []


def test_progress_counts_rows_and_newer_checkpoints(tmp_path):
    from grokray.slurm.deadline import newest_checkpoint, progress

    sweep = tmp_path / "s"
    (sweep / "trials").mkdir(parents=True)

    @dataclasses.dataclass
    class Spec:
        sweep_dir: str

    @dataclasses.dataclass
    class Plan:
        spec: Spec
        run_id: str

    plan = Plan(Spec(str(sweep)), "RUN")
    d = Deadline(stop_at=time.time() + 60, job="1")
    assert newest_checkpoint(str(sweep)) == 0.0 and not progress(plan, d)
    ck = sweep / "checkpoints" / "abc" / "0000000100.state.npz"
    ck.parent.mkdir(parents=True)
    ck.write_bytes(b"x")
    os.utime(ck, (d.started - 100, d.started - 100))  # an older allocation's checkpoint
    assert not progress(plan, d)
    os.utime(ck, (d.started + 5, d.started + 5))  # written in this allocation
    assert progress(plan, d)
    ck.unlink()
    (sweep / "trials" / "h-RUN.parquet").write_bytes(b"")  # a row of this run
    assert progress(plan, d)


def test_ask_checkpoints_on_a_graceful_stop(monkeypatch):
    """The driver asks its trials to checkpoint through the checkpoints channel, waiting at
    most what the allocation leaves after its own stop."""
    import sys
    import types

    from grokray.slurm import deadline as dl

    calls = []

    class Channel:
        def request(self):
            calls.append("request")
            return 7

        def wait(self, gen, timeout_s):
            calls.append((gen, timeout_s))
            return missing

    fake = types.ModuleType("grokray.sweep.checkpoint_store")
    fake.channel = lambda: chan
    monkeypatch.setitem(sys.modules, "grokray.sweep.checkpoint_store", fake)
    monkeypatch.setenv("GROKRAY_SLURM_SIGNAL_S", "120")
    chan, missing = None, 0
    assert dl.ask_checkpoints(None) is None and calls == []  # no sweep with checkpoints
    chan = Channel()
    d = Deadline(stop_at=time.time(), job="5")  # the signal: 120 s before the end
    assert "done in" in dl.ask_checkpoints(d)
    assert calls[0] == "request" and calls[1][0] == 7
    assert 70 <= calls[1][1] <= 75  # 120 s left less the driver's own 45
    missing = 2
    assert "2 did not answer within 30 s" in dl.ask_checkpoints(None)
