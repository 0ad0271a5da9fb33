"""Three users submit overlapping sweeps at three priorities to the service's runner on a local
Ray of one CPU (one trial slot): the high-priority sweep starts first and preempts the running
low-priority one by checkpoint; the two users of equal priority alternate (fair share); every
identity shared between sweeps is trained once (the others reuse its row); every sweep ends with
one row per identity; the preempted trial resumes from its checkpoint with the rows of a run
never stopped (float64, 1e-12).

Slow (a few minutes: seven sweep drivers joining Ray); run with --runslow. The test waits on
states the service exposes (its database's sweep states and events, the checkpoint files in a
sweep's dir), never on a time."""

from __future__ import annotations

import threading

import pandas as pd
import pytest

from tests.helpers.service import ray_spec, wait_for

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.timeout(1800)]


def test_three_users_priorities_preemption_fair_share_reuse(tmp_path):
    from ray.cluster_utils import Cluster

    import grokray
    from grokray.cli import main as cli
    from grokray.cost.sweep import estimate_plan
    from grokray.service import reuse
    from grokray.service.runner import Runner
    from grokray.service.scheduler import Resources
    from grokray.service.state import State
    from grokray.sweep.checkpoint_store import Files
    from grokray.sweep.plan import make_plan
    from grokray.sweep.spec import load_spec

    st = State.open(str(tmp_path / "service.db"))
    alice, _ = st.add_user("alice")
    bob, _ = st.add_user("bob")
    carol, _ = st.add_user("carol")
    store = tmp_path / "store"

    def submit(user, name, wds, priority, steps=1500, ck=0):
        text = ray_spec(name, wds, steps, ck)
        p = tmp_path / f"{name}.yaml"
        p.write_text(ray_spec(name, wds, steps, ck, out=store / user.name))
        spec = load_spec(str(p))
        cost = estimate_plan(make_plan(spec, build=False))
        sv, _ = st.submit(user, name=name, spec_text=text, spec_source=str(p),
                          sweep_dir=spec.sweep_dir, priority=priority,
                          estimate_cpu_s=cost.cpu_s_expected, estimate_wall_s=cost.wall_s_expected,
                          trials_total=len(wds), seed_runs_total=len(wds))
        return sv, spec

    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 1, "include_dashboard": False})
    stop = threading.Event()
    errors: list[BaseException] = []
    runner = Runner(st, tmp_path / "work", address=cluster.address, capacity=Resources(cpu=1))

    def serve():
        try:
            runner.run(stop, interval_s=0.2)
        except BaseException as exc:  # the test's assertion reports it
            errors.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        low, low_spec = submit(alice, "low", [0.8], 0, steps=6000, ck=0.5)
        low_hash = low_spec.trials()[0].config_hash()
        # the low sweep's trial is training: it has a checkpoint in storage
        wait_for("the low sweep's first checkpoint", lambda: errors or (
            st.get(low.id).state == "running" and Files(low_spec.sweep_dir).state_steps(low_hash)))
        assert not errors, errors
        high, high_spec = submit(alice, "high", [0.1], 2)
        b1 = submit(bob, "b1", [0.1, 0.2], 1)
        b2 = submit(bob, "b2", [0.3, 0.5, 0.6], 1)
        c1 = submit(carol, "c1", [0.2, 0.3, 0.4], 1)
        c2 = submit(carol, "c2", [0.5, 0.7], 1)
        sweeps = {"low": (low, low_spec), "high": (high, high_spec), "b1": b1, "b2": b2,
                  "c1": c1, "c2": c2}
        wait_for("every sweep done", lambda: errors or all(
            st.get(sv.id).state in ("done", "failed", "cancelled") for sv, _ in sweeps.values()))
        assert not errors, errors
    finally:
        stop.set()
        thread.join(timeout=60)
        for d in list(runner.drivers.values()):
            if d.proc is not None:
                d.proc.kill()
        cluster.shutdown()
    names = {sv.id: name for name, (sv, _) in sweeps.items()}
    for name, (sv, _) in sweeps.items():
        assert st.get(sv.id).state == "done", (name, st.get(sv.id).message,
                                               (tmp_path / "work" / str(sv.id) / "driver.log"
                                                ).read_text()[-2000:])

    # the order the sweeps started in (each `running` event, across sweeps, by event id)
    events = sorted((e for sv, _ in sweeps.values() for e in st.events(sv.id)),
                    key=lambda e: e.id)
    starts = [names[e.sweep_id] for e in events if e.kind == "running"]
    assert starts == ["low", "high", "b1", "c1", "b2", "c2", "low"], starts
    kinds = [(names[e.sweep_id], e.kind) for e in events if e.kind in ("running", "preempted")]
    assert kinds.index(("low", "preempted")) < kinds.index(("high", "running"))

    # every sweep: one row per identity of its spec
    trained: dict[tuple[str, int], list[str]] = {}
    for name, (_sv, spec) in sweeps.items():
        t = grokray.load(spec.sweep_dir).trials
        keys = list(zip(t["config_hash"], t["seed"].astype(int), strict=True))
        assert sorted(keys) == sorted(reuse.identities_of(spec)), name
        for k, src in zip(keys, t["reused_from"], strict=True):
            if pd.isna(src):
                trained.setdefault(k, []).append(name)
    # every identity trained once, for everyone: 8 distinct weight decays, 8 trainings
    assert all(len(v) == 1 for v in trained.values()), trained
    assert len(trained) == 8
    reused = {name: st.get(sv.id).seed_runs_reused for name, (sv, _) in sweeps.items()}
    assert reused == {"low": 0, "high": 0, "b1": 1, "c1": 1, "b2": 1, "c2": 1}

    # what the closing note shows: the start order with the preemption, and the accounting
    from grokray.service import accounting

    for e in events:
        print(f"{e.at:%H:%M:%S} {names[e.sweep_id]:<5} {e.kind:<10} {e.detail}")
    print(accounting.text(st))

    # the preempted trial resumed from its checkpoint, with the rows of a run never stopped
    rows = grokray.load(low_spec.sweep_dir)
    assert int(rows.trials["checkpoint_step"].iloc[0]) > 0
    ref_path = tmp_path / "ref.yaml"
    ref_path.write_text(ray_spec("ref", [0.8], 6000, out=tmp_path / "ref"))
    assert cli(["sweep", str(ref_path), "--local", "--plain", "--no-summary"]) == 0
    ref = grokray.load(str(tmp_path / "ref" / "ref"))
    cols = ["final_train_acc", "final_val_acc", "final_train_loss", "final_val_loss"]
    for c in cols:
        assert rows.trials[c].iloc[0] == pytest.approx(ref.trials[c].iloc[0], rel=1e-12,
                                                       abs=1e-12), c
    a = rows.curves.sort_values("step").reset_index(drop=True)
    b = ref.curves.sort_values("step").reset_index(drop=True)
    assert list(a["step"]) == list(b["step"])
    for c in ("train_loss", "val_loss", "train_acc", "val_acc"):
        for x, y in zip(a[c], b[c], strict=True):
            assert x == pytest.approx(y, rel=1e-12, abs=1e-12), c
    st.close()
