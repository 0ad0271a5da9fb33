"""The sweep driver as a library (grokray.sweep.driver), in process (no Ray): its events, its
outcome and exit codes, a graceful stop from a subscriber, from another thread and before the
run, and a scheduling policy's codes."""

from __future__ import annotations

import dataclasses
import os
import signal
import threading

import pandas as pd
import pytest

from grokray.sweep import events as ev
from grokray.sweep.driver import SchedulingPolicy, SweepDriver, SweepOutcome
from grokray.sweep.spec import parse_spec

SPEC = """\
name: drv
out: {out}
config:
  group: Z5
  arch: mlp
  eval_every: 50
  device: cpu
  model: {{hidden: 16, d: 8}}
axes:
  optim.weight_decay: [0.0, 0.5, 1.0]
seeds: 1
steps: {steps}
"""


def _spec(tmp_path, steps: int = 100):
    return parse_spec(SPEC.format(out=tmp_path / "out", steps=steps), "drv.yaml")


def _rows(spec) -> pd.DataFrame:
    d = os.path.join(spec.sweep_dir, "trials")
    files = sorted(os.listdir(d)) if os.path.isdir(d) else []
    if not files:
        return pd.DataFrame(columns=["config_hash"])
    return pd.concat(pd.read_parquet(os.path.join(d, f)) for f in files)


def test_a_run_tells_its_events_and_ends_done(tmp_path):
    spec = _spec(tmp_path)
    driver = SweepDriver(spec)
    got: list = []
    driver.subscribe(got.append)
    out = driver.run()
    assert (out.state, out.exit_code, out.cut_short, out.later, out.messages) == \
        ("done", 0, 0, [], [])
    hashes = [c.config_hash() for c in out.plan.todo]
    assert len(hashes) == 3 and out.failed == 0
    assert isinstance(got[0], ev.SweepStarted) and got[0].plan is out.plan
    assert isinstance(got[-1], ev.SweepEnded) and got[-1].outcome is out
    started = [e.config.config_hash() for e in got if isinstance(e, ev.TrialStarted)]
    written = [e.outcome.config.config_hash() for e in got if isinstance(e, ev.TrialWritten)]
    assert started == hashes and sorted(written) == sorted(hashes)
    assert [o.config.config_hash() for o in out.written] == written
    assert sorted(_rows(spec)["config_hash"]) == sorted(hashes)
    # each TrialWritten comes after its TrialStarted, and carries the rows' statuses
    for e in got:
        if isinstance(e, ev.TrialWritten):
            assert [s.status for s in e.result.seeds] == \
                list(_rows(spec).set_index("config_hash").loc[[e.outcome.config.config_hash()],
                                                              "status"])

    again: list = []
    d2 = SweepDriver(spec)
    d2.subscribe(again.append)
    out2 = d2.run()
    assert (out2.state, out2.exit_code, out2.written) == ("nothing_to_run", 0, [])
    assert [type(e) for e in again] == [ev.SweepStarted, ev.SweepEnded]


def test_each_checkpoint_the_store_writes_is_told_with_its_trial_and_step(tmp_path):
    """CheckpointStored(config_hash, step) for every checkpoint of every trial, in order, as
    the driver-side store writes it (storage's newest state is at that step when the event
    comes), between the trial's TrialStarted and its TrialWritten; a trial checkpointing every
    1e-9 s of training takes one at the top of each of its 12 steps. The rows landed: the
    checkpoints are gone."""
    from grokray.sweep.checkpoint_store import Files

    text = SPEC.format(out=tmp_path / "out", steps=12).replace(
        "  device: cpu\n", "  device: cpu\n  checkpoint_every: 1.0e-9\n")
    spec = parse_spec(text, "drv.yaml")
    files = Files(spec.sweep_dir)
    got: list = []

    def on(event):
        if isinstance(event, ev.CheckpointStored):
            got.append((event, files.state_steps(event.config_hash)))
        elif isinstance(event, (ev.TrialStarted, ev.TrialWritten)):
            cfg = event.config if isinstance(event, ev.TrialStarted) else event.outcome.config
            got.append((type(event).__name__, cfg.config_hash()))

    driver = SweepDriver(spec)
    driver.subscribe(on)
    out = driver.run()
    assert (out.state, out.failed) == ("done", 0)
    hashes = [c.config_hash() for c in out.plan.todo]
    stored = [(e.config_hash, e.step) for e, _ in got if isinstance(e, ev.CheckpointStored)]
    assert stored == [(h, step) for h in hashes for step in range(12)]
    assert all(steps == [e.step] for e, steps in got if isinstance(e, ev.CheckpointStored))
    for h in hashes:
        at = [i for i, (e, x) in enumerate(got)
              if (isinstance(e, ev.CheckpointStored) and e.config_hash == h) or x == h]
        assert got[at[0]] == ("TrialStarted", h) and got[at[-1]] == ("TrialWritten", h)
        assert len(at) == 12 + 2
    assert files.hashes() == []


def test_unsubscribe(tmp_path):
    driver = SweepDriver(_spec(tmp_path))
    got: list = []
    off = driver.subscribe(got.append)
    off()
    assert driver.run().state == "done" and got == []


def test_a_stop_from_a_subscriber_keeps_the_finished_trials(tmp_path):
    """A subscriber stops the sweep as the second trial starts (on the driver's thread): the
    first trial's rows stay, the second never trains, the third never starts; the outcome
    says stopped, 143; the next run runs the two others and nothing more."""
    spec = _spec(tmp_path)
    driver = SweepDriver(spec)
    got: list = []

    def on(event):
        got.append(event)
        if isinstance(event, ev.TrialStarted) and \
                sum(isinstance(e, ev.TrialStarted) for e in got) == 2:
            driver.stop()

    driver.subscribe(on)
    out = driver.run()
    assert (out.state, out.exit_code) == ("stopped", 128 + signal.SIGTERM)
    first = out.plan.todo[0].config_hash()
    assert [o.config.config_hash() for o in out.written] == [first]
    assert list(_rows(spec)["config_hash"]) == [first]
    assert out.messages == ["interrupted: 1 trials written; run the same command to resume"]
    assert sum(isinstance(e, ev.TrialStarted) for e in got) == 2
    notices = [e for e in got if isinstance(e, ev.Notice)]
    assert len(notices) == 1 and notices[0].err
    assert notices[0].line.startswith("asked the running trials to checkpoint: done in")
    assert got[-1] == ev.SweepEnded(out)
    driver.stop()  # a second call: nothing

    rest = SweepDriver(spec).run()
    assert rest.state == "done" and len(rest.written) == 2
    assert sorted(_rows(spec)["config_hash"]) == sorted(c.config_hash() for c in out.plan.todo)


def test_a_stop_from_another_thread(tmp_path):
    """A caller's thread stops a run that is training its first trial: stopped, 143, and only
    whole trials are on disk."""
    spec = _spec(tmp_path, steps=20000)
    driver = SweepDriver(spec)
    began = threading.Event()
    driver.subscribe(lambda e: began.set() if isinstance(e, ev.TrialStarted) else None)
    errors: list = []

    def stopper():
        try:
            assert began.wait(120)
            driver.stop()
        except BaseException as exc:  # noqa: BLE001 - to the test's assertion
            errors.append(exc)

    t = threading.Thread(target=stopper)
    t.start()
    out = driver.run()
    t.join()
    assert errors == []
    assert (out.state, out.exit_code) == ("stopped", 143)
    assert len(out.written) < 3
    assert sorted(_rows(spec)["config_hash"]) == sorted(o.config.config_hash()
                                                        for o in out.written)


def test_a_stop_before_the_run_starts_nothing(tmp_path):
    spec = _spec(tmp_path)
    driver = SweepDriver(spec)
    driver.stop()
    got: list = []
    driver.subscribe(got.append)
    out = driver.run()
    assert (out.state, out.exit_code, out.written) == ("stopped", 143, [])
    assert not any(isinstance(e, ev.TrialStarted) for e in got)
    assert len(_rows(spec)) == 0


@dataclasses.dataclass
class _Policy:
    """A policy that runs the first config of the plan and leaves the rest for later."""

    progress: bool = True
    more_to_do_exit: int = 75
    no_progress_exit: int = 3
    said: list = dataclasses.field(default_factory=list)

    def run(self, plan, run_part, session, outcomes=None, say=print):
        say("first part only")
        run_part(dataclasses.replace(plan, todo=plan.todo[:1]))
        self.said.append(len(outcomes()))
        return plan.todo[1:]

    def stop_wait_s(self, default_s):
        return 1.0

    def made_progress(self, plan):
        return self.progress

    def later_line(self, later):
        return f"{len(later)} later"

    def no_progress_line(self, later):
        return f"no progress ({len(later)} later)"


def test_a_policy_that_leaves_trials_for_later(tmp_path):
    spec = _spec(tmp_path)
    policy = _Policy()
    assert isinstance(policy, SchedulingPolicy)
    driver = SweepDriver(spec, policy=policy)
    got: list = []
    driver.subscribe(got.append)
    out = driver.run()
    assert (out.state, out.exit_code, out.messages) == ("more_to_do", 75, ["2 later"])
    assert [c.config_hash() for c in out.later] == [c.config_hash() for c in out.plan.todo[1:]]
    assert len(out.written) == 1 and policy.said == [1]  # the outcomes so far, for the pace
    assert ev.Notice("first part only") in got

    stuck = _Policy(progress=False)
    out = SweepDriver(_spec(tmp_path / "b"), policy=stuck).run()
    assert (out.state, out.exit_code) == ("no_progress", 3)
    assert out.messages == ["2 later", "no progress (2 later)"]


def test_the_slurm_deadline_is_a_scheduling_policy():
    import time

    from grokray.slurm import EXIT_MORE_TO_DO, EXIT_NO_PROGRESS
    from grokray.slurm.deadline import Deadline

    d = Deadline(stop_at=time.time() + 600, job="1")
    assert isinstance(d, SchedulingPolicy)
    assert (d.more_to_do_exit, d.no_progress_exit) == (EXIT_MORE_TO_DO, EXIT_NO_PROGRESS)


def test_the_outcome_counts_failed_trials():
    from grokray.sweep.outcome import Outcome

    out = SweepOutcome(plan=None, state="done", exit_code=0,  # type: ignore[arg-type]
                       written=[Outcome(config=None, result=None, error="x"),  # type: ignore
                                Outcome(config=None, result=object())])  # type: ignore
    assert out.failed == 1


def test_a_held_lock_is_refused_before_any_trial(tmp_path):
    from grokray.errors import GrokrayError
    from grokray.sweep.lock import WriterLock

    spec = _spec(tmp_path)
    os.makedirs(spec.sweep_dir)
    with WriterLock(spec.sweep_dir, "another driver"):
        with pytest.raises(GrokrayError):
            SweepDriver(spec).run()
    assert len(_rows(spec)) == 0


def test_a_slurm_deadline_with_no_time_left_runs_nothing_and_says_so(tmp_path, monkeypatch):
    """The driver under a Slurm job's Deadline whose allocation is about to end: no trial
    fits, none starts, and the outcome is no progress (exit 3) with the deadline's two lines."""
    import time

    from grokray.slurm import EXIT_NO_PROGRESS
    from grokray.slurm import deadline as dl

    monkeypatch.setattr(dl, "model_seconds", lambda cfg, gpu=0.0, steps=None, done=0: 600.0)

    class Session:  # an open Ray session's face, as the policy and the driver use it
        open = True

        def slots(self, cpu, concurrency):
            return 2

        def gpu_slots(self, gpu, concurrency):
            return 1

        def logs_dir(self):
            return "/ray/logs"

    spec = _spec(tmp_path)
    got: list = []
    driver = SweepDriver(spec, policy=dl.Deadline(stop_at=time.time() + 30, job="77"))
    driver.subscribe(got.append)
    out = driver.run(Session())  # type: ignore[arg-type]
    assert (out.state, out.exit_code, out.written, out.logs_dir) == \
        ("no_progress", EXIT_NO_PROGRESS, [], "/ray/logs")
    assert len(out.later) == 3 and not any(isinstance(e, ev.TrialStarted) for e in got)
    assert out.messages[0].startswith("grokray sweep: 3 trials cannot finish in the 0.")
    assert "of Slurm job 77 (the longest about 10.1 min)" in out.messages[0]
    assert out.messages[1].startswith("grokray sweep: no new row and no newer checkpoint in "
                                      "this allocation of Slurm job 77")
    assert len(_rows(spec)) == 0
