"""The service's runner without a cluster (grokray.service.runner): a restarted service adopts a
sweep driver that still runs and requeues a sweep whose driver is gone; a cancelled sweep's
driver is asked to stop (SIGTERM); a sweep whose every identity has a compatible row elsewhere
ends without a driver, its rows reused. Drivers here are stand-in processes or none; the
three-user test (tests/integration/test_service_three_users.py) runs real ones on Ray."""

from __future__ import annotations

import subprocess
import sys
import time

import grokray
from grokray.cli import main as cli
from grokray.service import reuse
from grokray.service.runner import Runner
from grokray.service.scheduler import Resources
from grokray.service.state import State
from tests.helpers.service import local_spec


def _runner(tmp_path):
    st = State.open(str(tmp_path / "s.db"))
    # a cluster address that is never dialled: the capacity is given, no driver starts on Ray
    return st, Runner(st, tmp_path / "work", address="127.0.0.1:1", capacity=Resources(cpu=1))


def _submit(st, user, tmp_path, name="s"):
    text = local_spec(name, "unused")
    sv, _ = st.submit(user, name=name, spec_text=text, spec_source=name,
                      sweep_dir=str(tmp_path / "store" / user.name / name),
                      trials_total=2, seed_runs_total=2)
    return sv


def _stand_in(runner, sv):
    """A process whose command line names the sweep's spec, as its driver's does."""
    path = runner._write_spec(sv, 1)
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", str(path)],
                            start_new_session=True)


def test_a_restart_requeues_a_sweep_whose_driver_is_gone_and_adopts_a_live_one(tmp_path):
    st, runner = _runner(tmp_path)
    alice, _ = st.add_user("alice")
    gone, alive = _submit(st, alice, tmp_path, "gone"), _submit(st, alice, tmp_path, "alive")
    for sv in (gone, alive):
        st.set_state(sv.id, "running")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    st.note(gone.id, "driver", f"pid {dead.pid} slots 1")
    proc = _stand_in(runner, alive)
    st.note(alive.id, "driver", f"pid {proc.pid} slots 1")
    try:
        runner.recover()
        assert st.get(gone.id).state == "queued"
        assert "resumes from its rows and checkpoints" in st.get(gone.id).message
        assert st.get(alive.id).state == "running" and list(runner.drivers) == [alive.id]
        assert runner.drivers[alive.id].proc is None  # adopted, not this process's child
        assert [e.kind for e in st.events(alive.id)][-1] == "adopted"
        # the adopted driver ends with rows missing: back in the queue, to resume
        proc.kill()
        proc.wait()
        runner._reap()
        assert st.get(alive.id).state == "queued" and not runner.drivers
    finally:
        proc.kill()
        st.close()


def test_a_cancelled_sweep_has_its_driver_stopped(tmp_path):
    st, runner = _runner(tmp_path)
    alice, _ = st.add_user("alice")
    sv = _submit(st, alice, tmp_path)
    st.set_state(sv.id, "running")
    proc = _stand_in(runner, sv)
    st.note(sv.id, "driver", f"pid {proc.pid} slots 1")
    try:
        runner.recover()
        st.cancel(alice, sv.id)
        runner.step()
        assert runner.drivers[sv.id].stopping == "cancelled"
        assert proc.wait(timeout=60) == -15  # SIGTERM: the driver's graceful stop
        deadline = time.monotonic() + 60
        while sv.id in runner.drivers and time.monotonic() < deadline:
            runner.step()
            time.sleep(0.05)
        assert sv.id not in runner.drivers and st.get(sv.id).state == "cancelled"
    finally:
        proc.kill()
        st.close()


def test_a_sweep_whose_rows_all_exist_elsewhere_ends_without_training(tmp_path):
    st, runner = _runner(tmp_path)
    alice, _ = st.add_user("alice")
    bob, _ = st.add_user("bob")
    first = tmp_path / "first.yaml"
    first.write_text(local_spec("first", tmp_path / "store" / "alice"))
    assert cli(["sweep", str(first), "--local", "--plain", "--no-summary"]) == 0
    src = str(tmp_path / "store" / "alice" / "first")
    reuse.index_dir(st, src, sweep_id=None, owner_id=alice.id)
    sv = _submit(st, bob, tmp_path, "same")
    decision = runner.step()
    assert decision.start == [] and not runner.drivers
    got = st.get(sv.id)
    assert got.state == "done" and got.seed_runs_reused == 2 and got.seed_runs_done == 2
    assert got.message.startswith("every row reused")
    t = grokray.load(sv.sweep_dir).trials
    assert set(t["reused_from"]) == {src} and len(t) == 2
    st.close()


def test_the_queue_lists_waiting_sweeps_in_the_schedulers_order(tmp_path):
    """Equal priorities: the user who used less recently goes first (fair share), which the
    API's queue shows through the runner's queue_order."""
    st, runner = _runner(tmp_path)
    alice, _ = st.add_user("alice")
    bob, _ = st.add_user("bob")
    a1, a2 = _submit(st, alice, tmp_path, "a1"), _submit(st, alice, tmp_path, "a2")
    b1 = _submit(st, bob, tmp_path, "b1")
    done = _submit(st, alice, tmp_path, "old")
    st.set_state(done.id, "running")
    st.record_usage(done.id, cpu_s=100.0)
    st.set_state(done.id, "done")
    plain = [v.id for v in st.list_queue()]
    assert plain == [a1.id, a2.id, b1.id]
    fair = st.list_queue(order=runner.queue_order)
    assert [v.id for v in fair] == [b1.id, a1.id, a2.id]
    assert [v.position for v in fair] == [1, 2, 3]
    st.close()


def test_a_slurm_site_submits_each_sweep_with_grokray_slurm(tmp_path):
    """`--engine slurm`: the driver is `grokray slurm SPEC ARGS`; the job id it prints is what
    the runner follows (squeue) once it has exited; Slurm preempts, the service does not."""
    from grokray.service import runner as runner_mod

    st = State.open(str(tmp_path / "s.db"))
    r = Runner(st, tmp_path / "work", engine="slurm", slurm_args=("--nodes=2",))
    assert r.capacity.cpu == float("inf")
    cmd = r.command(tmp_path / "work" / "1" / "spec.yaml")
    assert cmd[1:] == ["-m", "grokray.cli", "slurm", str(tmp_path / "work" / "1" / "spec.yaml"),
                       "--nodes=2"]
    log = tmp_path / "driver.log"
    log.write_text("wrote /x/job.sbatch\nsubmitted Slurm job 4242 (sweep s -> /x/s)\n")
    assert runner_mod._job_id(str(log)) == "4242"
    log.write_text("sbatch refused the job: no partition\n")
    assert runner_mod._job_id(str(log)) is None
    st.close()


def test_the_queue_says_why_rows_were_not_reused(tmp_path):
    """Rows of the sweep's identities trained on another device kind are not reused, and the
    sweep's message (the queue page's last column, `grokray show`) says so."""
    st = State.open(str(tmp_path / "s.db"))
    # a cluster without CPUs: nothing starts, the sweep stays queued with its reasons
    runner = Runner(st, tmp_path / "work", address="127.0.0.1:1", capacity=Resources(cpu=0))
    alice, _ = st.add_user("alice")
    sv = _submit(st, alice, tmp_path)
    keys = reuse.identities_of(runner.spec(sv))
    st.add_identities([{"config_hash": h, "seed": s, "sweep_dir": str(tmp_path / "gpu"),
                        "semantics": runner.semantics, "device_kind": "cuda:NVIDIA H100"}
                       for h, s in keys])
    runner.step()
    got = st.get(sv.id)
    assert got.state == "queued" and got.seed_runs_reused == 0
    here = reuse.expected_device_kind(runner.spec(sv))
    assert got.message == ("one trial needs cpu 1 gpu 0; the cluster has cpu 0 gpu 0; not "
                           f"reused: 2 trained on cuda:NVIDIA H100, here {here}")
    assert [e.detail for e in st.events(sv.id) if e.kind == "not_reused"] == [
        f"not reused: 2 trained on cuda:NVIDIA H100, here {here}"]
    st.close()


def test_a_sweep_held_for_its_quota_is_queued_once_it_fits(tmp_path):
    st, runner = _runner(tmp_path)
    bob, _ = st.add_user("bob", quota_cpu_hours=1.0)
    done = _submit(st, bob, tmp_path, "done")
    st.set_state(done.id, "running")
    st.record_usage(done.id, cpu_s=3000.0)
    st.set_state(done.id, "done")
    line = "sweep held: bob over quota by 0.333 CPU-hours (...)"
    sv, _ = st.submit(bob, name="big", spec_text="x", spec_source="big",
                      sweep_dir=str(tmp_path / "big"), state="held", estimate_cpu_s=1800.0,
                      message=line)
    mine, _ = st.submit(bob, name="mine", spec_text="x", spec_source="mine",
                        sweep_dir=str(tmp_path / "mine"), state="held", message="held by bob")
    runner._release_quota_holds(time.time())
    assert st.get(sv.id).state == "held"  # 3000 s used + 1800 s > 1 h
    st.set_quota("bob", cpu_hours=2.0, gpu_hours=None)
    runner._release_quota_holds(time.time())
    assert st.get(sv.id).state == "queued"
    assert st.get(sv.id).message == "released: within its user's quota now"
    assert st.get(mine.id).state == "held"  # a user's own hold stays
    st.close()
