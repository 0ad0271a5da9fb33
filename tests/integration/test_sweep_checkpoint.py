"""Checkpoints on Ray: a trial whose worker is killed mid-trial (warm workers), or whose node is
removed (a `ray.cluster_utils.Cluster`, Ray Tune), resumes on a fresh worker from its newest
checkpoint, which reached the driver's storage through the driver; its rows equal a run never cut
(float64, 1e-12) and are written once; the driver can ask running trials for a checkpoint."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pandas as pd
import pytest

ray = pytest.importorskip("ray")

sys.path.insert(0, os.path.dirname(__file__))
import _sweep_helpers as helpers  # noqa: E402

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


def _spec(tmp_path, steps=2500, every=0.5):
    from grokray.sweep.spec import load_spec

    p = tmp_path / "ck.yaml"
    p.write_text(SPEC.format(out=tmp_path / "out", steps=steps, every=every))
    return load_spec(str(p))


def _wait_for_checkpoint(sweep_dir: str, h: str, timeout: float = 120.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        steps = helpers.checkpoint_steps(sweep_dir, h)
        if steps and steps[-1] > 0:
            return steps[-1]
        time.sleep(0.05)
    raise AssertionError("no checkpoint reached the driver's storage")


def _check_rows(spec, cfg, seen_step: int) -> pd.DataFrame:
    """One row per seed; resumed at or after the checkpoint seen before the loss; rows and
    curves equal the trial never cut (run here, in this process)."""
    from grokray.schema import curve_frame, trial_frame
    from grokray.trial import run_trial

    d = spec.sweep_dir
    t = pd.concat(pd.read_parquet(p) for p in sorted(os.scandir(f"{d}/trials")))
    c = pd.concat(pd.read_parquet(p) for p in sorted(os.scandir(f"{d}/curves")))
    assert len(t) == 2 and t.groupby(["config_hash", "seed"]).size().eq(1).all()
    assert (t["checkpoint_step"] >= seen_step).all() and seen_step > 0
    ref = run_trial(cfg)
    drop = ["run_id", "wall_s", "started_at", "finished_at", "checkpoint_step", "hostname",
            "ray_node_id", "ray_version", "cuda_visible_devices", "sweep"]
    t0 = trial_frame(ref, spec.name, "r").drop(columns=drop, errors="ignore")
    t1 = t.drop(columns=drop, errors="ignore").sort_values("seed").reset_index(drop=True)
    pd.testing.assert_frame_equal(t1[t0.columns], t0, check_exact=False, rtol=1e-12,
                                  atol=1e-12, check_dtype=False)
    c0 = curve_frame(ref, spec.name, "r").drop(columns="run_id")
    c1 = c.drop(columns="run_id").sort_values(["seed", "step"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(c1[c0.columns], c0.sort_values(["seed", "step"]).reset_index(
        drop=True), check_exact=False, rtol=1e-12, atol=1e-12, check_dtype=False)
    assert not os.path.exists(os.path.join(d, "checkpoints"))  # deleted when the rows landed
    return t


def test_warm_worker_killed_mid_trial_resumes_from_its_checkpoint(tmp_path):
    from grokray.sweep import checkpoints
    from grokray.sweep.executors.factory import make_executor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.writer import run_plan

    spec = _spec(tmp_path)
    plan = make_plan(spec)
    cfg = plan.todo[0]
    seen = {}
    with RaySession(num_cpus=1) as session:
        ex = make_executor(spec, plan.run_id, session)

        def killer():
            seen["step"] = _wait_for_checkpoint(spec.sweep_dir, cfg.config_hash())
            # the process the trial runs in (a busy warm worker answers no other call)
            seen["pids"] = pids = [r.pid for r in checkpoints.channel().running()]
            for pid in pids:
                os.kill(pid, signal.SIGKILL)

        th = threading.Thread(target=killer, daemon=True)
        th.start()
        writer = run_plan(plan, ex)
        th.join(timeout=5)
        assert seen.get("pids")
    assert len(writer.outcomes) == 1 and writer.outcomes[0].error is None
    _check_rows(spec, cfg, seen["step"])


def test_node_removed_mid_trial_resumes_on_another_node(tmp_path, cluster):
    """Ray Tune on a cluster of two worker nodes: once a checkpoint of the trial is in the
    driver's storage, the node it runs on is removed; the trial runs again on the other node,
    from its checkpoint."""
    from grokray.sweep import checkpoints
    from grokray.sweep.executors.factory import make_executor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.writer import run_plan

    c, workers = cluster
    spec = _spec(tmp_path)
    plan = make_plan(spec)
    cfg = plan.todo[0]
    seen = {}

    def swap():
        seen["step"] = _wait_for_checkpoint(spec.sweep_dir, cfg.config_hash())
        node = checkpoints.channel().running()[0].node_id
        c.remove_node(next(w for w in workers if w.node_id == node))
        seen["removed"] = node

    session = RaySession()  # joins the cluster's Ray, connected by the fixture
    with session:
        ex = make_executor(spec, plan.run_id, session)
        th = threading.Thread(target=swap, daemon=True)
        th.start()
        writer = run_plan(plan, ex)
        th.join(timeout=30)
    out = writer.outcomes[0]
    assert out.error is None and out.node_id != seen["removed"]
    t = _check_rows(spec, cfg, seen["step"])
    assert set(t["ray_node_id"]) == {out.node_id}


def test_driver_asks_running_trials_to_checkpoint(tmp_path):
    """With a checkpoint interval far longer than the trial, the only checkpoint is the one the
    driver asks for; it reaches storage before `wait` returns."""
    from grokray.sweep import checkpoints
    from grokray.sweep.executors.factory import make_executor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.writer import run_plan

    spec = _spec(tmp_path, steps=20000, every=3600)
    plan = make_plan(spec)
    h = plan.todo[0].config_hash()
    got = {}

    def ask():
        try:
            asking()
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            got["error"] = repr(exc)

    def asking():
        deadline = time.monotonic() + 120
        ch = checkpoints.channel()
        while time.monotonic() < deadline:
            ch = checkpoints.channel()
            running = ch.running() if ch is not None and ch.files is not None else []
            if running:
                break
            time.sleep(0.1)
        time.sleep(1.0)  # into training
        gen = ch.request()
        got["left"] = ch.wait(gen, timeout_s=60)
        got["steps"] = helpers.checkpoint_steps(spec.sweep_dir, h)
        got["running"] = running

    with RaySession(num_cpus=1) as session:
        th = threading.Thread(target=ask, daemon=True)
        th.start()
        run_plan(plan, make_executor(spec, plan.run_id, session))
        th.join(timeout=5)
    assert "error" not in got, got["error"]
    assert got["left"] == 0 and len(got["steps"]) == 1 and got["steps"][0] > 0
    assert [r.config_hash for r in got["running"]] == [h]
    assert got["running"][0].checkpoint_every == 3600


def _kill_after_new_checkpoints(sweep_dir: str, hashes: list[str], times: int,
                                seen: dict) -> threading.Thread:
    """A thread that, `times` times, waits until every trial of `hashes` has a checkpoint newer
    than the last it saw and runs in a live worker process it has not killed yet, then SIGKILLs
    those processes (a worker lost mid-trial). A checkpoint can reach storage after its worker
    died (the actor writes what was sent before the kill), and the running table keeps a dead
    worker's pid until the retry begins: such a pid is skipped, never counted as a kill."""
    from grokray.sweep import checkpoints

    def live(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    def kill():
        try:
            killing()
        except Exception as exc:  # noqa: BLE001 - the test asserts on seen["error"]
            seen["error"] = repr(exc)

    def killing():
        last = dict.fromkeys(hashes, 0)
        killed: set[int] = set()
        for _ in range(times):
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                time.sleep(0.05)
                steps = {h: (helpers.checkpoint_steps(sweep_dir, h) or [0])[-1] for h in hashes}
                if not all(steps[h] > last[h] for h in hashes):
                    continue
                # a checkpoint of this sweep is on disk, so the channel is this sweep's
                runs = {r.config_hash: r.pid for r in checkpoints.channel().running()
                        if r.config_hash in hashes}
                pids = set(runs.values())
                if set(runs) != set(hashes) or pids & killed or not all(map(live, pids)):
                    continue
                try:
                    for pid in pids:
                        os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:  # ended between the look and the kill
                    continue
                break
            else:
                seen["error"] = f"no newer checkpoint in a live worker after {last}"
                return
            killed |= pids
            last = steps
            seen.setdefault("steps", []).append(dict(steps))

    th = threading.Thread(target=kill, daemon=True)
    th.start()
    return th


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
    with RaySession(num_cpus=1) as session:
        th = _kill_after_new_checkpoints(spec.sweep_dir, [h], 3, seen)
        writer = run_plan(plan, make_executor(spec, plan.run_id, session))
        th.join(timeout=5)
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
    p.write_text(SPEC.format(out=tmp_path / "out", steps=6000, every=0.5).replace(
        "  arch: [mlp]\n", "  arch: [mlp]\n  optim.weight_decay: [0.5, 1.0]\n"))
    spec = load_spec(str(p))
    plan = make_plan(spec)
    hashes = [c.config_hash() for c in plan.todo]
    assert len(hashes) == 2
    seen: dict = {}
    with RaySession(num_cpus=1) as session:
        ex = make_executor(spec, plan.run_id, session, pack=2)
        th = _kill_after_new_checkpoints(spec.sweep_dir, hashes, 1, seen)
        writer = run_plan(plan, ex)
        th.join(timeout=5)
    assert "error" not in seen, seen["error"]
    assert len(writer.outcomes) == 2 and all(o.error is None for o in writer.outcomes)
    assert len({round(o.wall_s, 9) for o in writer.outcomes}) == 2, (  # apart, not as a pack
        seen, [(o.wall_s, [s.checkpoint_step for s in o.result.seeds]) for o in writer.outcomes])
    t = helpers.assert_rows_equal_uninterrupted(spec.sweep_dir, plan.todo, rtol=1e-10)
    at = seen["steps"][0]
    for h in hashes:
        assert (t[t["config_hash"] == h]["checkpoint_step"] >= at[h]).all() and at[h] > 0
    assert not os.path.exists(os.path.join(spec.sweep_dir, "checkpoints"))
