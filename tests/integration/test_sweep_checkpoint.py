"""Checkpoints on Ray: a trial whose worker is killed mid-trial (warm workers), or whose node is
removed (a `ray.cluster_utils.Cluster`, Ray Tune), resumes on a fresh worker from its newest
checkpoint, which reached the driver's storage through the driver; its rows equal a run never cut
(float64, 1e-12) and are written once; the driver can ask running trials for a checkpoint."""

from __future__ import annotations

import os
import signal
import threading
import time

import pandas as pd
import pytest

from tests.helpers import specs
from tests.helpers import sweeps as helpers

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.ray


cluster = helpers.cluster  # the fixture: a head and two worker nodes

SPEC = """\
name: ck
out: {out}
config:
  group: Z23
  op: add
  steps: {steps}
  eval_every: 100
  dtype: float64
  device: cpu
  checkpoint_every: {every}
  model: {{hidden: 32, d: 16}}
axes:
  arch: [mlp]
seeds: 2
retries: 2
"""


def _spec(tmp_path, steps=2500, every=0.25):
    return specs.load(tmp_path, SPEC, "ck.yaml", out=tmp_path / "out", steps=steps, every=every)


def _check_rows(spec, cfg, seen_step: int) -> pd.DataFrame:
    """One row per seed; resumed at or after the checkpoint seen before the loss; rows and
    curves equal the trial never cut (run here, in this process, on one torch thread as the
    cpu-1 worker trained: on two, float64 sums in another order differ in the last bits, and
    15,000 steps can grow that past 1e-12)."""
    t = helpers.assert_rows_equal_uninterrupted(spec.sweep_dir, [cfg])
    assert (t["checkpoint_step"] >= seen_step).all() and seen_step > 0
    assert not os.path.exists(os.path.join(spec.sweep_dir, "checkpoints"))  # deleted when the
    # rows landed
    return t


def _live(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _freeze_after_checkpoint(stored: helpers.StoredCheckpoints, hashes: list[str],
                             after: dict[str, int], skip: set[int], stop: threading.Event,
                             timeout: float = 540.0) -> dict:
    """Wait until every trial of `hashes` runs in a live worker process not in `skip` and has
    handed the driver's checkpoint actor a checkpoint newer than `after[hash]`; then stop those
    processes (SIGSTOP), so that no trial can end, nor checkpoint again, between this look and
    the kill that follows; check that each trial is still running in them, and wait until the
    driver-side store has written the newest checkpoint the actor holds (`stored`: the run's
    display, told by the store). Returns {"pids", "steps": the storage's newest step per trial,
    "nodes": the node each runs on}. Raises AssertionError (naming what it saw) when that never
    happens (a trial ended first), or when `stop` is set first (the test's sweep ended: a
    thread that went on looking would act on a later one's).

    Synchronising on the trial's own checkpoint (not on the storage, which the driver's pump
    writes half a second later) keeps the kill at the trial's first checkpoint after `after`,
    however fast the machine trains; the stop keeps a fast trial from ending in between."""
    def look() -> dict:
        return {r.config_hash: r for r in helpers.running_trials() if r.config_hash in hashes}

    deadline = time.monotonic() + timeout
    saw: dict = {}
    while time.monotonic() < deadline and not stop.is_set():
        runs = saw = look()
        pids = {r.pid for r in runs.values()}
        if (set(runs) == set(hashes) and not pids & skip and all(_live(p) for p in pids)
                and all(r.step is not None and r.step > after[h] for h, r in runs.items())):
            stopped = []
            try:
                for pid in pids:
                    os.kill(pid, signal.SIGSTOP)
                    stopped.append(pid)
            except ProcessLookupError:  # died between the look and the stop: look again
                for pid in stopped:
                    os.kill(pid, signal.SIGCONT)
                time.sleep(0.05)
                continue
            runs = look()  # the actor holds what they sent before the stop
            if set(runs) != set(hashes) or {r.pid for r in runs.values()} != pids:
                for pid in stopped:
                    os.kill(pid, signal.SIGCONT)
                raise AssertionError(f"a trial ended at its checkpoint: {runs}")
            want = {h: r.step for h, r in runs.items()}
            steps = stored.wait(want, max(0.0, deadline - time.monotonic()))
            if steps is not None:
                return {"pids": pids, "steps": steps,
                        "nodes": {h: r.node_id for h, r in runs.items()}}
            for pid in stopped:
                os.kill(pid, signal.SIGCONT)
            raise AssertionError(f"checkpoints {want} never reached storage")
        time.sleep(0.02)
    raise AssertionError(f"no checkpoint newer than {after} in a live worker; running: {saw}")


def _kill_after_new_checkpoints(stored: helpers.StoredCheckpoints, hashes: list[str],
                                times: int, seen: dict) -> threading.Thread:
    """A thread that, `times` times, waits until every trial of `hashes` has handed over a
    checkpoint newer than the last it saw and runs in a live worker process it has not killed
    yet, stops those processes, waits until that checkpoint is in storage and SIGKILLs them (a
    worker lost mid-trial; `_freeze_after_checkpoint`). The running table keeps a killed
    worker's pid until the retry begins: such a pid is skipped. Each kill's storage steps go
    to seen["steps"]; an error to seen["error"]."""

    def kill(stop: threading.Event):
        last = dict.fromkeys(hashes, 0)
        killed: set[int] = set()
        for _ in range(times):
            got = _freeze_after_checkpoint(stored, hashes, last, killed, stop)
            for pid in got["pids"]:
                os.kill(pid, signal.SIGKILL)
            killed |= got["pids"]
            last = got["steps"]
            seen.setdefault("steps", []).append(dict(last))

    return helpers.in_thread(kill, seen)


def test_warm_worker_killed_mid_trial_resumes_from_its_checkpoint(tmp_path):
    from grokray.sweep.executors.factory import make_executor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.writer import run_plan

    spec = _spec(tmp_path)
    plan = make_plan(spec)
    cfg = plan.todo[0]
    seen: dict = {}
    stored = helpers.StoredCheckpoints()
    with RaySession(num_cpus=1) as session:
        ex = make_executor(spec, plan.run_id, session)
        th = _kill_after_new_checkpoints(stored, [cfg.config_hash()], 1, seen)
        writer = run_plan(plan, ex, stored)
        helpers.done(th)
    assert "error" not in seen, seen["error"]
    assert len(writer.outcomes) == 1 and writer.outcomes[0].error is None
    _check_rows(spec, cfg, seen["steps"][0][cfg.config_hash()])


def test_node_removed_mid_trial_resumes_on_another_node(tmp_path, cluster):
    """Ray Tune on a cluster of two worker nodes: once a checkpoint of the trial is in the
    driver's storage, the node it runs on is removed; the trial runs again on the other node,
    from its checkpoint."""
    from grokray.sweep.executors.factory import make_executor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.writer import run_plan

    c, workers = cluster
    spec = _spec(tmp_path)
    plan = make_plan(spec)
    cfg = plan.todo[0]
    h = cfg.config_hash()
    seen: dict = {}
    stored = helpers.StoredCheckpoints()

    def swap(stop: threading.Event):
        # the trial's worker is stopped at its checkpoint (it cannot end in between) while its
        # node goes at once, as a failed machine does; then the stopped worker is killed (a
        # worker outlives its raylet until it notices, which a stopped one cannot)
        got = _freeze_after_checkpoint(stored, [h], {h: 0}, set(), stop)
        node = got["nodes"][h]
        c.remove_node(next(w for w in workers if w.node_id == node), allow_graceful=False)
        for pid in got["pids"]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        seen.update(step=got["steps"][h], removed=node)

    session = RaySession()  # joins the cluster's Ray, connected by the fixture
    with session:
        ex = make_executor(spec, plan.run_id, session)
        th = helpers.in_thread(swap, seen)
        writer = run_plan(plan, ex, stored)
        helpers.done(th)
    assert "error" not in seen, seen["error"]
    out = writer.outcomes[0]
    assert out.error is None and out.node_id != seen["removed"]
    t = _check_rows(spec, cfg, seen["step"])
    assert set(t["ray_node_id"]) == {out.node_id}


def test_driver_asks_running_trials_to_checkpoint(tmp_path):
    """With a checkpoint interval far longer than the trial, the only checkpoint is the one the
    driver asks for; it reaches storage before `wait` returns."""
    from grokray.sweep import checkpoint_store
    from grokray.sweep.executors.factory import make_executor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.writer import run_plan

    spec = _spec(tmp_path, steps=20000, every=3600)
    plan = make_plan(spec)
    h = plan.todo[0].config_hash()
    got: dict = {}

    def ask(stop: threading.Event):
        # into training: the trial has run a second in its worker (its own clock, as the
        # checkpoint actor reports it), so the checkpoint asked for is past step 0
        running = helpers.wait_for_running(lambda rs: rs and all(r.trained_s >= 1.0 for r in rs),
                                           stop)
        ch = checkpoint_store.channel()
        gen = ch.request()
        got["left"] = ch.wait(gen, timeout_s=60)
        got["steps"] = helpers.checkpoint_steps(spec.sweep_dir, h)
        got["running"] = running

    with RaySession(num_cpus=1) as session:
        th = helpers.in_thread(ask, got)
        run_plan(plan, make_executor(spec, plan.run_id, session))
        th.join(timeout=5)
    assert "error" not in got, got["error"]
    assert got["left"] == 0 and len(got["steps"]) == 1 and got["steps"][0] > 0
    assert [r.config_hash for r in got["running"]] == [h]
    assert got["running"][0].checkpoint_every == 3600


@pytest.mark.slow  # three worker starts and two Ray sessions (tests/unit/test_checkpoint_files.py
# holds the rule without Ray)
def test_a_trial_lost_on_every_try_keeps_its_checkpoints_and_rerun_failed_resumes(tmp_path):
    """A trial whose worker dies on each of its three tries fails ("lost after 3 tries"): it did
    not fail by itself, so its checkpoints stay, and `--rerun-failed` resumes it from the newest
    one, with the rows of a trial never cut, once."""
    from grokray.sweep.executors.factory import make_executor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.writer import run_plan

    spec = _spec(tmp_path, steps=15000)  # each try outlives the thread's look and kill
    plan = make_plan(spec)
    cfg = plan.todo[0]
    h = cfg.config_hash()
    seen: dict = {}
    stored = helpers.StoredCheckpoints()
    with RaySession(num_cpus=1) as session:
        th = _kill_after_new_checkpoints(stored, [h], 3, seen)
        writer = run_plan(plan, make_executor(spec, plan.run_id, session), stored)
        helpers.done(th)
    assert "error" not in seen, seen["error"]
    (out,) = writer.outcomes
    assert out.lost and out.error.startswith("lost after 3 tries: "), out.error
    kept = helpers.checkpoint_steps(spec.sweep_dir, h)
    assert kept and kept[-1] >= seen["steps"][-1][h] > 0
    rerun = make_plan(spec, rerun_failed=True)
    assert [c.config_hash() for c in rerun.todo] == [h]
    with RaySession(num_cpus=1) as session:
        writer = run_plan(rerun, make_executor(spec, rerun.run_id, session))
    assert writer.outcomes[0].error is None
    _check_rows(spec, cfg, kept[-1])


def test_a_lost_pack_resumes_each_config_from_its_checkpoint(tmp_path):
    """A pack of two configs loses its warm worker once both have a checkpoint: the retry runs
    them as one-config trials, each resuming from its own checkpoint; one row per (config,
    seed), equal to each trial alone never cut (to the 1e-10 that packed and unpacked runs
    agree to, tests/unit/test_pack.py)."""
    from grokray.sweep.executors.factory import make_executor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.spec import load_spec
    from grokray.sweep.writer import run_plan

    p = tmp_path / "ck.yaml"
    p.write_text(SPEC.format(out=tmp_path / "out", steps=6000, every=0.25).replace(
        "  arch: [mlp]\n", "  arch: [mlp]\n  optim.weight_decay: [0.5, 1.0]\n"))
    spec = load_spec(str(p))
    plan = make_plan(spec)
    hashes = [c.config_hash() for c in plan.todo]
    assert len(hashes) == 2
    seen: dict = {}
    stored = helpers.StoredCheckpoints()
    with RaySession(num_cpus=1) as session:
        ex = make_executor(spec, plan.run_id, session, pack=2)
        th = _kill_after_new_checkpoints(stored, hashes, 1, seen)
        writer = run_plan(plan, ex, stored)
        helpers.done(th)
    assert "error" not in seen, seen["error"]
    assert len(writer.outcomes) == 2 and all(o.error is None for o in writer.outcomes)
    assert len({round(o.wall_s, 9) for o in writer.outcomes}) == 2, (  # apart, not as a pack
        seen, [(o.wall_s, [s.checkpoint_step for s in o.result.seeds]) for o in writer.outcomes])
    t = helpers.assert_rows_equal_uninterrupted(spec.sweep_dir, plan.todo, rtol=1e-10)
    at = seen["steps"][0]
    for h in hashes:
        assert (t[t["config_hash"] == h]["checkpoint_step"] >= at[h]).all() and at[h] > 0
    assert not os.path.exists(os.path.join(spec.sweep_dir, "checkpoints"))
