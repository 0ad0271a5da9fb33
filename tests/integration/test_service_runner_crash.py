"""`grokray serve` with its runner, SIGKILLed mid-run and started again, on a local Ray of one
CPU: a sweep whose driver outlived the service is adopted and finishes (one driver, its rows
once); a sweep whose driver died with the service is put back in the queue and resumes from its
checkpoint (a row with checkpoint_step > 0, once). Nothing is lost, nothing duplicated.

Slow (a few minutes); run with --runslow. Waits on the database's states and events and on
checkpoint files, never on a time."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from tests.helpers.service import ray_spec, terminate, wait_for

ray = pytest.importorskip("ray")

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.timeout(1800)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


def test_sigkill_of_the_service_mid_run_loses_and_duplicates_nothing(tmp_path):
    from ray.cluster_utils import Cluster

    import grokray
    from grokray.service import reuse
    from grokray.service.state import State
    from grokray.sweep.checkpoint_store import Files
    from grokray.sweep.spec import load_spec

    db, store, work = tmp_path / "s.db", tmp_path / "store", tmp_path / "work"
    st = State.open(str(db))
    alice, _ = st.add_user("alice")
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 1, "include_dashboard": False})
    log = open(tmp_path / "serve.log", "a")
    procs: list[subprocess.Popen] = []

    def serve() -> subprocess.Popen:
        out = tmp_path / f"serve-{len(procs)}.out"
        p = subprocess.Popen([sys.executable, "-m", "grokray.cli", "serve", "--db", str(db),
                              "--store", str(store), "--port", "0", "--address",
                              cluster.address, "--work", str(work)],
                             stdout=open(out, "w"), stderr=log)
        procs.append(p)
        wait_for("grokray serve listening", lambda: p.poll() is not None or
                 re.search(r"listening on http://", out.read_text()), 300)
        assert p.poll() is None, out.read_text()
        return p

    def submit(name, wds, steps):
        text = ray_spec(name, wds, steps, ck=0.5)
        d = store / "alice" / name / name
        sv, _ = st.submit(alice, name=name, spec_text=text, spec_source=name,
                          sweep_dir=str(d), trials_total=len(wds), seed_runs_total=len(wds))
        p = tmp_path / f"{name}.yaml"
        p.write_text(ray_spec(name, wds, steps, ck=0.5, out=d.parent))
        return sv, load_spec(str(p))

    def drivers(sv) -> list[int]:
        return [int(e.detail.split()[1]) for e in st.events(sv.id) if e.kind == "driver"]

    def checkpointed(spec) -> bool:
        h = spec.trials()[0].config_hash()
        return bool(Files(spec.sweep_dir).state_steps(h))

    try:
        first = serve()
        s1, spec1 = submit("survives", [0.3], 9000)
        s2, spec2 = submit("resumes", [0.6], 9000)
        wait_for("the first sweep's checkpoint", lambda: st.get(s1.id).state == "running"
                 and checkpointed(spec1))
        (pid1,) = drivers(s1)
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        assert _alive(pid1), "the sweep's driver died with the service"
        assert st.get(s1.id).state == "running" and st.get(s2.id).state == "queued"
        second = serve()
        wait_for("the first sweep adopted",
                 lambda: "adopted" in [e.kind for e in st.events(s1.id)])
        wait_for("the second sweep's checkpoint", lambda: st.get(s2.id).state == "running"
                 and checkpointed(spec2))
        (pid2,) = drivers(s2)
        # the service and this sweep's driver die together (a lost machine)
        second.send_signal(signal.SIGKILL)
        second.wait(30)
        os.killpg(pid2, signal.SIGKILL)
        wait_for("the killed driver gone", lambda: not _alive(pid2), 60)
        serve()
        wait_for("both sweeps done", lambda: all(st.get(s.id).state in ("done", "failed")
                                                 for s in (s1, s2)))
    finally:
        for p in procs:
            terminate(p, 60)
        cluster.shutdown()
        log.close()
    for sv, spec in ((s1, spec1), (s2, spec2)):
        got = st.get(sv.id)
        assert got.state == "done", (got.message, (tmp_path / "serve.log").read_text()[-3000:])
        t = grokray.load(spec.sweep_dir).trials
        keys = sorted(zip(t["config_hash"], t["seed"].astype(int), strict=True))
        assert keys == sorted(reuse.identities_of(spec))  # every row, once
    assert len(drivers(s1)) == 1  # adopted, never started twice
    assert len(drivers(s2)) == 2  # started again after its driver was lost
    t1 = grokray.load(spec1.sweep_dir).trials
    t2 = grokray.load(spec2.sweep_dir).trials
    assert t1["checkpoint_step"].isna().all()  # it ran on, never cut short
    assert int(t2["checkpoint_step"].iloc[0]) > 0  # resumed from its checkpoint
    st.close()
