"""The service's execution side: runs admitted sweeps on the engines that exist.

Each admitted sweep runs as its own sweep driver, `grokray sweep SPEC --address ADDR`, a process
attached to the Ray cluster the service is attached to (the service's `--address`, or the local
Ray it started), in a session of its own: the service's death (SIGKILL included) does not take
it along. On a Slurm site (`engine="slurm"`) each admitted sweep becomes an sbatch job through
`grokray slurm SPEC` instead, and Slurm's priorities and fair share decide when it runs; the
service's scheduler then only orders submissions (it preempts nothing).

One pass of `Runner.step`:
1. reap: a driver that ended has its rows indexed (grokray.service.reuse.index_dir) and their
   CPU/GPU-seconds recorded as its owner's usage; the sweep is done when every identity of its
   spec has a row, preempted when it was asked to stop for another, failed otherwise (its log's
   last line as the message);
2. a running sweep cancelled through the API is asked to stop (SIGTERM: the graceful stop);
3. each waiting sweep is prepared for reuse: rows of its identities already in the lab's store
   (compatible: grokray.service.reuse) are copied into its dir; when another sweep is training
   some of its identities it waits for that sweep (nothing is trained twice); when nothing is
   left to train it is done without training;
4. the scheduler (grokray.service.scheduler.decide) says which sweeps start on how many trial
   slots and which running ones are preempted; a preempted driver gets SIGTERM, on which its
   running trials checkpoint and stop (`grokray sweep`'s graceful stop); started again later,
   the same command resumes them from those checkpoints, with the rows of a run never stopped.

A sweep's driver runs the spec as submitted with its `out`/`name` set to the sweep's dir and its
`concurrency` to the slots granted, from `WORK/<id>/spec.yaml`; its output goes to
`WORK/<id>/driver.log`. Its pid is recorded as a `driver` event: a restarted service adopts a
driver still running (same pid, same command line), and puts a sweep whose driver is gone back in
the queue, which resumes it from its rows and checkpoints. Two drivers never write one dir (the
dir's writer lock: a second exits 2), so nothing is duplicated.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from grokray.service import reuse
from grokray.service.scheduler import (
    Charge,
    Decision,
    Policy,
    Resources,
    Running,
    Sweep,
    Usage,
    decide,
)

WORK_DIR = os.path.join("grokray-service", "runner")
"""where drivers' specs and logs go, and the embedded Ray's address (default)"""
STOP_GRACE_S = 120.0
"""a driver asked to stop that has not exited after this long is killed (its trials resume
from their last periodic checkpoint)"""


@dataclass
class Driver:
    """A sweep's driver process."""

    sweep_id: int
    pid: int
    slots: int
    started: float
    proc: subprocess.Popen | None = None
    """None: adopted after a restart (not this process's child)"""
    stopping: str | None = None
    """why it was asked to stop: preempted, cancelled"""
    stop_at: float | None = None
    log: str = ""
    job: str | None = None
    """a Slurm job id: `grokray slurm` submitted the sweep and ended; the job runs it"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (an exited child not yet reaped) is not running
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def ray_capacity(address: str) -> Resources:
    """The CPUs and GPUs of the Ray cluster at `address` (this process joins it)."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    r = ray.cluster_resources()
    return Resources(cpu=float(r.get("CPU", 0.0)), gpu=float(r.get("GPU", 0.0)))


def _listening(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=2):
            return True
    except (OSError, ValueError):
        return False


def local_ray(work: Path, num_cpus: int | None, num_gpus: float | None,
              python: str = sys.executable) -> str:
    """The address of the service's embedded local Ray: the one it started before (its address
    in WORK/ray-address, still listening), else a new head (`ray start --head`) on a free port.
    It outlives the service, so that running sweep drivers go on through a restart; `ray stop`
    ends it."""
    work.mkdir(parents=True, exist_ok=True)
    saved = work / "ray-address"
    if saved.exists() and _listening(saved.read_text().strip()):
        return saved.read_text().strip()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray_cli = Path(python).parent / "ray"
    cmd = [str(ray_cli), "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1",
           "--include-dashboard=false", "--disable-usage-stats"]
    if num_cpus is not None:
        cmd.append(f"--num-cpus={num_cpus}")
    if num_gpus is not None:
        cmd.append(f"--num-gpus={num_gpus:g}")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        from grokray.errors import GrokrayError

        raise GrokrayError("could not start the embedded Ray (`ray start --head`): "
                           f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}; give "
                           "--address of a running cluster")
    address = f"127.0.0.1:{port}"
    saved.write_text(address + "\n")
    return address


class Runner:
    """Runs the service's admitted sweeps (module docstring). `state`: the service's state
    (grokray.service.state.State); `work_dir`: where drivers' specs and logs go; `address`: the
    Ray cluster; `capacity`: its resources (default: asked of Ray)."""

    def __init__(self, state: Any, work_dir: str | os.PathLike | None = None, *,  # noqa: ANN401
                 settings: Any = None, address: str | None = None,  # noqa: ANN401
                 num_cpus: int | None = None, num_gpus: float | None = None,
                 capacity: Resources | None = None, policy: Policy | None = None,
                 engine: str = "ray", slurm_args: tuple[str, ...] = (),
                 python: str = sys.executable, env: dict[str, str] | None = None) -> None:
        if engine not in ("ray", "slurm"):
            raise ValueError(f"engine {engine!r}; valid: ray, slurm")
        self.state = state
        self.work = Path(work_dir) if work_dir is not None else Path(WORK_DIR)
        self.engine = engine
        self.slurm_args = tuple(slurm_args)
        self.policy = policy or getattr(settings, "policy", None) or Policy()
        self.python = python
        self.env = env
        if engine == "ray" and address is None:
            address = local_ray(self.work, num_cpus, num_gpus, python)
        self.address = address
        if capacity is None:
            if engine == "slurm":
                capacity = Resources(cpu=float("inf"), gpu=float("inf"))
            else:
                capacity = ray_capacity(address)
        self.capacity = capacity
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        """what ended the runner's thread, if anything did"""
        self.drivers: dict[int, Driver] = {}
        self._specs: dict[int, Any] = {}
        self._ready: dict[tuple[int, str], tuple[int | None, str]] = {}
        """(waiting sweep, its state) -> (trials left, why it may not start: '' when it may),
        until a driver ends (rows landed: every waiting sweep is prepared again)"""
        self.semantics = reuse.current_semantics()
        self._why_not: dict[int, str] = {}
        """sweep -> why some of its identities' rows were not reused (its running message)"""

    # ---------------------------------------------------------------------------- specs

    def _spec_path(self, sweep_id: int) -> Path:
        return self.work / str(sweep_id) / "spec.yaml"

    def _write_spec(self, sv: Any, slots: int | None) -> Path:  # noqa: ANN401 - SweepView
        """The sweep's spec as its driver runs it: `out`/`name` its dir, `concurrency` its
        slots."""
        data = yaml.safe_load(self.state.spec_text(sv.id))
        d = sv.sweep_dir.rstrip("/")
        data["out"], data["name"] = os.path.dirname(d) or ".", os.path.basename(d)
        if slots is not None:
            data["concurrency"] = int(slots)
        path = self._spec_path(sv.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(yaml.safe_dump(data, sort_keys=False))
        os.replace(tmp, path)
        return path

    def spec(self, sv: Any) -> Any:  # noqa: ANN401 - SweepView -> SweepSpec
        """The sweep's parsed spec (cached)."""
        if sv.id not in self._specs:
            from grokray.sweep.spec import load_spec

            self._specs[sv.id] = load_spec(str(self._write_spec(sv, None)))
        return self._specs[sv.id]

    # ---------------------------------------------------------------------------- a pass

    def recover(self) -> None:
        """After a (re)start: adopt the drivers of running sweeps that still run; put the others
        back in the queue (they resume from their rows and checkpoints)."""
        for sv in self.state.list_queue(states=("running",)):
            if sv.id in self.drivers:
                continue
            pid = self._driver_pid(sv.id)
            path = str(self._spec_path(sv.id))
            job = self._slurm_job(sv.id)
            if job is not None and _slurm_listed(job):
                self.drivers[sv.id] = Driver(sv.id, 0, slots=self._slots_of(sv.id),
                                             started=time.time(), log=self._log(sv.id), job=job)
                self.state.note(sv.id, "adopted", f"Slurm job {job} still listed")
            elif pid and _alive(pid) and path in _cmdline(pid):
                self.drivers[sv.id] = Driver(sv.id, pid, slots=self._slots_of(sv.id),
                                             started=time.time(), log=self._log(sv.id))
                self.state.note(sv.id, "adopted", f"driver pid {pid} still running")
            else:
                self.state.set_state(sv.id, "queued", message="the service restarted without "
                                     "its driver; it resumes from its rows and checkpoints")
        for sv in self.state.list_queue(states=("preempted",)):
            pid = self._driver_pid(sv.id)
            path = str(self._spec_path(sv.id))
            if pid and _alive(pid) and path in _cmdline(pid):  # still stopping
                self.drivers[sv.id] = Driver(sv.id, pid, slots=self._slots_of(sv.id),
                                             started=time.time(), stopping="preempted",
                                             stop_at=time.time(), log=self._log(sv.id))

    def _driver_pid(self, sweep_id: int) -> int | None:
        for e in reversed(self.state.events(sweep_id)):
            if e.kind == "driver":
                return int(e.detail.split()[1])
        return None

    def _slurm_job(self, sweep_id: int) -> str | None:
        """The Slurm job of the sweep's last start, if it was submitted as one."""
        for e in reversed(self.state.events(sweep_id)):
            if e.kind == "slurm_job":
                return e.detail.split()[1]
            if e.kind == "driver":
                return None
        return None

    def _slots_of(self, sweep_id: int) -> int:
        for e in reversed(self.state.events(sweep_id)):
            if e.kind == "driver":
                return int(e.detail.split()[3])
        return 1

    def _log(self, sweep_id: int) -> str:
        return str(self.work / str(sweep_id) / "driver.log")

    def step(self, now: float | None = None) -> Decision:
        """One pass (module docstring); returns what the scheduler decided."""
        now = time.time() if now is None else now
        self._reap()
        self._stop_cancelled()
        self._release_quota_holds(now)
        waiting = self.state.list_queue(states=("queued", "preempted"))
        candidates = []
        for sv in waiting:
            if sv.id in self.drivers:  # preempted, still stopping
                continue
            key = (sv.id, sv.state)
            if key not in self._ready:
                self._ready[key] = self._prepare(sv)
            left, why = self._ready[key]
            if why:
                if sv.message != why:
                    self.state.record_progress(sv.id, message=why)
                continue
            if left is None:
                continue
            spec = self.spec(sv)
            candidates.append(Sweep(
                id=str(sv.id), user=sv.owner, priority=sv.priority,
                submitted=float(sv.seq), per_trial=Resources(spec.cpu, spec.gpu),
                trials_left=left, concurrency=spec.concurrency,
                expected=Usage(max(0.0, sv.estimate_cpu_s - sv.used_cpu_s),
                               max(0.0, sv.estimate_gpu_s - sv.used_gpu_s))))
        running = []
        for d in self.drivers.values():
            sv = self.state.get(d.sweep_id)
            spec = self.spec(sv)
            running.append(Running(
                Sweep(id=str(sv.id), user=sv.owner, priority=sv.priority,
                      submitted=float(sv.seq), per_trial=Resources(spec.cpu, spec.gpu),
                      trials_left=d.slots, expected=Usage(sv.estimate_cpu_s, sv.estimate_gpu_s)),
                slots=d.slots, started=d.started, stopping=d.stopping is not None,
                used=Usage(sv.used_cpu_s, sv.used_gpu_s)))
        decision = decide(candidates, running, self.capacity, self.charges(now), now,
                          self.policy)
        if self.engine == "slurm":
            decision.preempt = []  # Slurm's own priorities are in charge of the nodes
        for sid in decision.preempt:
            self._stop(int(sid), "preempted", decision.why)
        for g in decision.start:
            self._start(self.state.get(int(g.id)), g.slots)
        for sid, why in decision.why.items():
            sv = next((s for s in waiting if s.id == int(sid)), None)
            if int(sid) in self._why_not:
                why = f"{why}; {self._why_not[int(sid)]}"
            if sv is not None and sv.message != why:
                self.state.record_progress(sv.id, message=why)
        return decision

    def _release_quota_holds(self, now: float) -> None:
        """Queue each sweep held for its user's quota (`--over-quota hold`) once it fits: its
        user's usage left the window, their quota was raised, or their other sweeps ended. A
        sweep held by a user (`grokray hold`) stays held."""
        from grokray.service.scheduler import Quota, check_quota

        for sv in self.state.list_queue(states=("held",)):
            if not sv.message.startswith("sweep held: "):
                continue
            user = self.state.user(sv.owner)
            quota = Quota(user.quota_cpu_hours, user.quota_gpu_hours)
            since = dt.datetime.fromtimestamp(now - self.policy.quota_window_s, dt.timezone.utc)
            used = Usage(*self.state.usage_by_user(since).get(user.name, (0.0, 0.0)))
            mine = Usage(sv.estimate_cpu_s, sv.estimate_gpu_s)
            pending = (Usage(*self.state.committed_seconds(user)) - mine).clamp()
            verdict, _ = check_quota(user.name, mine, used, pending, quota, self.policy)
            if verdict == "admit":
                self.state.set_state(sv.id, "queued", message="released: within its user's "
                                     "quota now")

    def queue_order(self, views: list[Any]) -> list[Any]:  # noqa: ANN401 - SweepViews
        """The waiting sweeps among `views` (queued, preempted) in the order the scheduler
        serves them: priority, then fair share, then submission (`grokray queue`'s order); the
        others keep their places."""
        from grokray.service.scheduler import queue_order, share_scores

        waiting = [v for v in views if v.state in ("queued", "preempted")]
        if len(waiting) < 2:
            return views
        now = time.time()
        as_sweep = {str(v.id): v for v in waiting}
        sweeps = [Sweep(id=str(v.id), user=v.owner, priority=v.priority, submitted=float(v.seq),
                        per_trial=Resources(), trials_left=1,
                        expected=Usage(max(0.0, v.estimate_cpu_s - v.used_cpu_s),
                                       max(0.0, v.estimate_gpu_s - v.used_gpu_s)))
                  for v in waiting]
        running = [Running(Sweep(id=str(v.id), user=v.owner, priority=v.priority,
                                 submitted=float(v.seq), per_trial=Resources(), trials_left=1,
                                 expected=Usage(v.estimate_cpu_s, v.estimate_gpu_s)),
                           slots=1, started=0.0, used=Usage(v.used_cpu_s, v.used_gpu_s))
                   for v in views if v.state == "running"]
        scores = share_scores(self.charges(now), running, now, self.policy)
        ordered = iter([as_sweep[s.id] for s in queue_order(sweeps, scores, self.policy)])
        return [next(ordered) if v.state in ("queued", "preempted") else v for v in views]

    def charges(self, now: float) -> list[Charge]:
        """Each usage record of the last 10 half-lives (fair share reads them)."""
        from sqlalchemy import select

        from grokray.service.db import Usage as UsageRow
        from grokray.service.db import User

        since = dt.datetime.fromtimestamp(now - 10 * self.policy.half_life_s, dt.timezone.utc)
        q = (select(User.name, UsageRow.at, UsageRow.cpu_s, UsageRow.gpu_s)
             .join(User, UsageRow.user_id == User.id).where(UsageRow.at >= since))
        with self.state.session() as s:
            return [Charge(name, _ts(at), Usage(cpu, gpu)) for name, at, cpu, gpu in s.execute(q)]

    # --------------------------------------------------------------------------- reuse

    def _prepare(self, sv: Any) -> tuple[int | None, str]:  # noqa: ANN401 - SweepView
        """(trials left to train, '') for a sweep that may start; (None, why) for one that
        waits for another sweep's identities; (None, '') when it ended here (every row
        reused). Copies the compatible rows found elsewhere into its dir first."""
        spec = self.spec(sv)
        keys = reuse.identities_of(spec)
        if not keys:  # a search: identities are not known ahead
            return max(1, sv.trials_total), ""
        have = self._rows_of(sv)
        todo = [k for k in keys if k not in have]
        kind = reuse.expected_device_kind(spec)
        m = reuse.match(self.state, todo, sv.sweep_dir, self.semantics, kind)
        if m.found:
            n = reuse.copy_rows(m.found, sv.sweep_dir, spec.name)
            self.state.note(sv.id, "reused", f"{n} seed-runs from " + ", ".join(
                sorted({r.sweep_dir for r in m.found.values()})))
            reuse.index_dir(self.state, sv.sweep_dir, sweep_id=sv.id, owner_id=sv.owner_id,
                            cpu=spec.cpu, gpu=spec.gpu)
            have = self._rows_of(sv)
            todo = [k for k in keys if k not in have]
        reused = self._reused_count(sv)
        why_not = m.why_not()
        self.state.record_progress(sv.id, seed_runs_done=len(keys) - len(todo),
                                   seed_runs_reused=reused)
        if why_not:
            self.state.note(sv.id, "not_reused", why_not)
            self._why_not[sv.id] = why_not
        if m.training:
            others = sorted({str(r.sweep_id) for r in m.training.values()})
            return None, (f"waits for sweep {', '.join(others)}, training {len(m.training)} of "
                          f"its seed-runs (each identity is trained once)")
        if not todo:
            self.state.set_state(sv.id, "running", message="every row reused")
            self.state.set_state(sv.id, "done", message="every row reused: nothing trained" +
                                 (f"; {why_not}" if why_not else ""))
            return None, ""
        configs = {h for h, _ in todo}
        return len(configs), ""

    def _rows_of(self, sv: Any) -> set[tuple[str, int]]:  # noqa: ANN401
        df = reuse.read_rows(sv.sweep_dir)
        return set(zip(df["config_hash"], df["seed"].astype(int), strict=True))

    def _reused_count(self, sv: Any) -> int:  # noqa: ANN401
        df = reuse.read_rows(sv.sweep_dir)
        return int(df["reused_from"].notna().sum()) if len(df) else 0

    # --------------------------------------------------------------------------- drivers

    def command(self, spec_path: Path) -> list[str]:
        """The driver's command line."""
        cli = [self.python, "-m", "grokray.cli"]
        if self.engine == "slurm":
            return [*cli, "slurm", str(spec_path), *self.slurm_args]
        addr = ["--address", self.address] if self.address else []
        return [*cli, "sweep", str(spec_path), *addr, "--plain", "--no-summary"]

    def _start(self, sv: Any, slots: int) -> None:  # noqa: ANN401 - SweepView
        spec = self.spec(sv)
        keys = reuse.identities_of(spec)
        have = self._rows_of(sv)
        reuse.claim(self.state, [k for k in keys if k not in have], sweep_id=sv.id,
                    owner_id=sv.owner_id, sweep_dir=sv.sweep_dir, semantics=self.semantics,
                    device_kind=reuse.expected_device_kind(spec))
        path = self._write_spec(sv, slots)
        why_not = self._why_not.get(sv.id)
        self.state.set_state(sv.id, "running", message=f"running on {slots} slot"
                             f"{'s' if slots != 1 else ''}" + (f"; {why_not}" if why_not else ""))
        log = self._log(sv.id)
        with open(log, "ab") as out:
            proc = subprocess.Popen(self.command(path), stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    env=self.env)
        self.drivers[sv.id] = Driver(sv.id, proc.pid, slots, time.time(), proc=proc, log=log)
        self._ready.clear()  # its claims: a waiting sweep sharing identities now waits for it
        self.state.note(sv.id, "driver", f"pid {proc.pid} slots {slots}")

    def _stop(self, sweep_id: int, why: str, reasons: dict[str, str] | None = None) -> None:
        """Ask a driver to stop (its trials checkpoint: SIGTERM); the sweep is `why`."""
        d = self.drivers.get(sweep_id)
        if d is None or d.stopping:
            return
        d.stopping, d.stop_at = why, time.time()
        if why == "preempted":
            by = next((k for k, v in (reasons or {}).items() if str(sweep_id) in v), None)
            self.state.set_state(sweep_id, "preempted", message="preempted" + (
                f" for sweep {by}" if by else "") + ": its trials checkpoint and stop; it "
                "resumes from them")
        if d.job is not None:  # a Slurm job: its batch step gets the graceful stop
            subprocess.run(["scancel", "--batch", "--signal=TERM", d.job], capture_output=True,
                           timeout=60)
            return
        try:
            os.killpg(d.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass

    def _stop_cancelled(self) -> None:
        for sid, d in list(self.drivers.items()):
            if d.stopping is None and self.state.get(sid).state == "cancelled":
                self._stop(sid, "cancelled")
            elif d.job is None and d.stopping and d.stop_at and \
                    time.time() - d.stop_at > STOP_GRACE_S:
                try:
                    os.killpg(d.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _reap(self) -> None:
        for sid, d in list(self.drivers.items()):
            if d.job is not None:  # a Slurm job: ended when Slurm no longer lists it
                if _slurm_listed(d.job):
                    continue
                rc = None
            elif d.proc is not None:
                rc = d.proc.poll()
                if rc is None:
                    continue
                if self.engine == "slurm" and rc == 0 and d.stopping is None:
                    job = _job_id(d.log)
                    if job is not None:  # submitted: follow the job from now on
                        d.job, d.proc = job, None
                        self.state.note(sid, "slurm_job", f"job {job}")
                        continue
            elif _alive(d.pid):
                continue
            else:
                rc = None  # adopted: its exit code is not ours to read
            del self.drivers[sid]
            self._ended(d, rc)
            self._ready.clear()

    def _ended(self, d: Driver, rc: int | None) -> None:
        sv = self.state.get(d.sweep_id)
        spec = self.spec(sv)
        before = {(i.config_hash, i.seed) for i in self.state.identities_of(sv.id)
                  if i.status in ("ok", "failed") and i.source_dir is None}
        reuse.index_dir(self.state, sv.sweep_dir, sweep_id=sv.id, owner_id=sv.owner_id,
                        cpu=spec.cpu, gpu=spec.gpu)
        new = [i for i in self.state.identities_of(sv.id)
               if i.status in ("ok", "failed") and i.source_dir is None
               and (i.config_hash, i.seed) not in before]
        if new:
            self.state.record_usage(sv.id, cpu_s=sum(i.cpu_s for i in new),
                                    gpu_s=sum(i.gpu_s for i in new))
        keys = reuse.identities_of(spec)
        have = self._rows_of(sv)
        todo = [k for k in keys if k not in have]
        self.state.record_progress(sv.id, seed_runs_done=len(keys) - len(todo),
                                   seed_runs_reused=self._reused_count(sv))
        if sv.state == "cancelled":
            reuse.release(self.state, todo, sweep_dir=sv.sweep_dir)
            return
        if d.stopping == "preempted":
            self.state.note(sv.id, "stopped", f"driver exited {rc} after the graceful stop; "
                            f"{len(todo)} seed-runs to go")
            return
        if not todo and (rc in (0, None) or keys):
            self.state.set_state(sv.id, "done", message=f"{len(keys)} seed-runs, "
                                 f"{self._reused_count(sv)} reused")
            return
        if rc is None:  # an adopted driver that ended with rows missing: run it again
            self.state.set_state(sv.id, "queued", message="its driver ended with "
                                 f"{len(todo)} seed-runs to go; resumes")
            return
        reuse.release(self.state, todo, sweep_dir=sv.sweep_dir)
        self.state.set_state(sv.id, "failed", message=f"driver exited {rc}: {_last_line(d.log)}")

    def run(self, stop: Any, interval_s: float = 1.0) -> None:  # noqa: ANN401 - an Event
        """Pass after pass until `stop` (a threading.Event) is set."""
        self.recover()
        while not stop.is_set():
            self.step()
            stop.wait(interval_s)

    def start(self, interval_s: float = 1.0) -> None:
        """Run the passes in a thread of this process (`grokray serve`)."""

        def loop() -> None:
            try:
                self.run(self._halt, interval_s)
            except BaseException as exc:  # noqa: BLE001 - kept for the service to report
                self.error = exc
                print(f"grokray serve: the runner stopped: {exc}", file=sys.stderr, flush=True)

        self._thread = threading.Thread(target=loop, name="grokray-runner", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the passes. Running sweep drivers go on (a restarted service adopts them)."""
        self._halt.set()
        if self._thread is not None:
            self._thread.join()


def _job_id(log: str) -> str | None:
    """The job id `grokray slurm` printed ("submitted Slurm job 123 ...") in a driver's log."""
    import re

    try:
        found = re.findall(r"submitted Slurm job (\d+)", Path(log).read_text(errors="replace"))
    except OSError:
        return None
    return found[-1] if found else None


def _slurm_listed(job: str) -> bool:
    """Whether Slurm still lists the job (pending, running, requeued); when squeue cannot be
    asked, the job counts as listed (the runner asks again on its next pass)."""
    try:
        p = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True,
                           text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return True
    if p.returncode != 0:
        return "Invalid job id" not in p.stderr
    return bool(p.stdout.strip())


def _ts(at: dt.datetime) -> float:
    return (at if at.tzinfo else at.replace(tzinfo=dt.timezone.utc)).timestamp()


def _last_line(path: str) -> str:
    try:
        lines = [x for x in Path(path).read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return "(no log)"
    return lines[-1][:300] if lines else "(empty log)"


__all__ = ["Driver", "Runner", "ray_capacity"]
