"""A graceful stop (SIGTERM: `grokray slurm`'s time limit, `scancel --batch --signal=TERM`) on
Ray: the running trials are asked to checkpoint from the signal handler (the sweep driver's,
grokray.sweep.driver, on warm workers; `ask_checkpoints` on Ray Tune), the run stops, and the
next run of the sweep resumes every trial cut short from that checkpoint, at a step > 0, with
the rows of a sweep never stopped (float64, 1e-12), each once. On warm workers and on Ray Tune;
and for trials that end within the request's polling lag (they checkpoint their end, or their
result is written). The stop waits on states the code exposes: the checkpoint actor's running
trials and the driver's TrialWritten events (the rows on disk on Tune)."""

from __future__ import annotations

import os
import signal

import pytest

from tests.helpers import specs
from tests.helpers import sweeps as helpers

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray


SPEC = """\
name: stop
out: {out}
config:
  group: Z23
  op: add
  eval_every: 100
  dtype: float64
  device: cpu
  checkpoint_every: 3600
  model: {{hidden: 32, d: 16}}
axes:
  optim.weight_decay: {wds}
seeds: 1
steps: {steps}
resources: {{cpu: 1}}
concurrency: 2
retries: 1
"""


def _spec(tmp_path, steps: int, wds=(0.5, 1.0)):
    return specs.load(tmp_path, SPEC, "stop.yaml", out=tmp_path / "out", steps=steps,
                      wds=list(wds))


def _stop_when(ready, written) -> dict:
    """SIGTERM to this process once `ready(running, written())` holds for the trials the
    checkpoint actor sees running and the trials whose rows are written; what happened, for the
    test's assertions."""
    got: dict = {}

    def watch(stop):
        running = helpers.wait_for_running(lambda rs: bool(rs) and ready(rs, written()), stop)
        got["running"] = [r.config_hash for r in running]
        os.kill(os.getpid(), signal.SIGTERM)

    helpers.in_thread(watch, got)
    return got


def _run(kind: str, spec, stop=None) -> tuple[list[str], dict]:
    """One run of the sweep, stopped by SIGTERM once `stop(running, written)` holds. "warm":
    the sweep driver `grokray sweep` runs (grokray.sweep.driver; its signal handler asks the
    running trials to checkpoint, and the stop's line and the written trials come as its
    events); "tune": a TuneExecutor under the same signal handling. The lines the stop printed
    and what the watcher saw."""
    from grokray.sweep.session import RaySession

    # a Ray of its own per run, as each `grokray sweep` has (a stopped Tune experiment leaves
    # its trial actors holding the CPUs until the driver's Ray goes)
    lines: list[str] = []
    got: dict = {}
    if kind == "warm":
        from grokray.sweep.driver import SweepDriver
        from grokray.sweep.events import Notice, TrialWritten

        driver = SweepDriver(spec)
        written: set[str] = set()

        def on(event) -> None:
            if isinstance(event, Notice) and event.err and "checkpoint" in event.line:
                lines.append(event.line)
            elif isinstance(event, TrialWritten):
                written.add(event.outcome.config.config_hash())

        driver.subscribe(on)
        if stop is not None:
            got = _stop_when(stop, lambda: set(written))
        out = driver.run(RaySession(num_cpus=2))
        assert "error" not in got, got.get("error")
        # the run after a stop has nothing to run when the stop cut nothing short (a trial
        # that ended as the stop asked: its rows were written)
        want = {("done", 0), ("nothing_to_run", 0)} if stop is None else {("stopped", 143)}
        assert (out.state, out.exit_code) in want, (out.state, out.exit_code, out.messages)
        return lines, got

    from grokray.slurm.deadline import ask_checkpoints
    from grokray.sweep.executors.tune import TuneExecutor
    from grokray.sweep.interrupt import on_signals
    from grokray.sweep.plan import make_plan
    from grokray.sweep.writer import run_plan

    plan = make_plan(spec)
    with RaySession(num_cpus=2) as session, on_signals() as signals:
        signals.on_term = lambda: lines.append(ask_checkpoints(None))
        ex = TuneExecutor(session, name=f"stop-{plan.run_id}",
                          storage_path=os.path.join(spec.sweep_dir, "_ray"), cpu=1,
                          concurrency=2, retries=1)
        if stop is None:
            run_plan(plan, ex)
        else:
            got = _stop_when(stop, lambda: _rows_hashes(spec.sweep_dir))
            with pytest.raises(KeyboardInterrupt):
                run_plan(plan, ex)
    assert "error" not in got, got.get("error")
    return lines, got


def _rows_hashes(sweep_dir: str) -> set[str]:
    trials = os.path.join(sweep_dir, "trials")
    return {f[:16] for f in os.listdir(trials)} if os.path.isdir(trials) else set()


def _cut_then_rerun(kind: str, spec, stop) -> None:
    from grokray.sweep.plan import make_plan

    configs = make_plan(spec).todo
    lines, got = _run(kind, spec, stop)
    assert len(lines) == 1 and lines[0].startswith(
        "asked the running trials to checkpoint: done in "), lines
    written = _rows_hashes(spec.sweep_dir)
    cut = [c.config_hash() for c in configs if c.config_hash() not in written]
    assert set(got["running"]) >= set(cut)  # nothing else had started
    for h in cut:  # what the stop asked for is in storage, past the trial's first step
        steps = helpers.checkpoint_steps(spec.sweep_dir, h)
        assert steps and steps[-1] > 0, (h, steps)
    _run(kind, spec)
    t = helpers.assert_rows_equal_uninterrupted(spec.sweep_dir, configs)
    resumed = t[t["config_hash"].isin(cut)]
    assert (resumed["checkpoint_step"] > 0).all(), resumed[["config_hash", "checkpoint_step"]]
    assert t[~t["config_hash"].isin(cut)]["checkpoint_step"].isna().all()
    assert not os.path.exists(os.path.join(spec.sweep_dir, "checkpoints"))


# Ray Tune's variants are slow (about a minute each here): `--runslow`, which .ci/run passes
@pytest.mark.parametrize("kind", ["warm", pytest.param("tune", marks=pytest.mark.slow)])
def test_stopped_mid_trial_resumes_every_cut_trial(tmp_path, kind):
    """The trials are stopped half a second or more into their training (6,000 steps each):
    both, or (when one started so much later than the other, or the machine trains so fast,
    that the first had ended) the one still running. The stop waits for that state, not for
    a time: a stop that waited for both to have trained 1.5 s never came on a machine where
    the first trial ended before the second had."""
    from grokray.sweep.plan import make_plan

    spec = _spec(tmp_path, steps=6000)
    hashes = {c.config_hash() for c in make_plan(spec).todo}

    def ready(running, written) -> bool:
        begun = {r.config_hash for r in running} | written
        return hashes <= begun and all(r.trained_s >= 0.5 for r in running)

    _cut_then_rerun(kind, spec, ready)


@pytest.mark.parametrize("kind", ["warm", pytest.param("tune", marks=pytest.mark.slow)])
def test_a_trial_ending_as_the_stop_asks_loses_nothing(tmp_path, kind):
    """A trial of 600 steps (under a second here) is asked as soon as it starts: it ends before
    its next poll (a second after its first) would see the request, and asks once more at its
    end. It ends with its result written, or with an end checkpoint from which the next run
    trains nothing; never from step 0 (what a stop that dropped its result did before)."""
    spec = _spec(tmp_path, steps=600, wds=[0.5])
    _cut_then_rerun(kind, spec, lambda running, written: len(running) == 1)
