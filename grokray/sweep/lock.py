"""One writer per output dir: `OUT/<sweep>/.lock`, created atomically, naming its holder.

    with WriterLock(sweep_dir, "grokray sweep sweeps/smoke.yaml"):
        ...   # the only process writing sweep_dir

The lock file is created with `O_CREAT | O_EXCL`, which is atomic on a local disk and on the NFS
(v3 and later) or EFS storage a cluster shares. It holds JSON naming the holder: host, pid, start
time, the command, a random token, and a heartbeat time that the holder refreshes every
`HEARTBEAT_S` seconds (the file's modification time is refreshed with it). A second writer exits
with code 2 naming the holder.

A lock is stale, and is taken over with a one-line notice, when
  - it names an earlier run of this process's Slurm job (SLURM_JOB_ID, SLURM_RESTART_COUNT):
    Slurm starts a requeued job's next run only after the previous one ended, on any node, or
  - its host is this host and its pid is no longer running, or
  - its heartbeat is older than `STALE_S` seconds (any host: the holder's machine went away).
Taking over renames the stale file aside (an atomic rename: of two processes taking over at
once, one wins) and creates a new lock. Otherwise, after making sure the holder is really gone,
delete the `.lock` file by hand.

On an object store (`s3://`, `gs://`) there is no atomic create-if-absent through pyarrow: the
lock is written, read back after a pause, and kept only when it still holds this writer's token;
two drivers started within that pause of each other can both pass. Use one driver per sweep there.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time
from datetime import datetime, timezone
from typing import Any

from grokray.errors import GrokrayError

LOCK = ".lock"
HEARTBEAT_S = 30.0
STALE_S = 300.0
_OBJECT_STORE_PAUSE_S = 2.0


class LockHeld(GrokrayError):
    """Another process is writing this output dir."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def describe_holder(info: dict[str, Any]) -> str:
    """`host H, pid P, since T (command C)`."""
    cmd = f", running {info['command']!r}" if info.get("command") else ""
    return (f"host {info.get('host', '?')}, pid {info.get('pid', '?')}, since "
            f"{info.get('started_at', '?')}{cmd}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    except (OSError, OverflowError, ValueError):
        return False
    return True


def _slurm_run() -> dict[str, Any]:
    """{"slurm_job", "slurm_run"} of the Slurm job this process runs in (its id and how many
    times it was requeued before this run), {} outside one."""
    job = os.environ.get("SLURM_JOB_ID", "").strip()
    if not job:
        return {}
    try:
        run = int(os.environ.get("SLURM_RESTART_COUNT", "0") or 0)
    except ValueError:
        run = 0
    return {"slurm_job": job, "slurm_run": run}


class WriterLock:
    """The lock of one output dir (a local path or a pyarrow URL)."""

    def __init__(self, out_dir: str, command: str = ""):
        # lazy: loads pandas; the CLI's command modules import this lock at `grokray --help`
        from grokray.reader import Location

        self.loc = Location.of(out_dir)
        self.out_dir = out_dir
        self.path = self.loc.join(LOCK)
        self.info = {
            "host": socket.gethostname(), "pid": os.getpid(), "started_at": _now(),
            "heartbeat_at": _now(), "command": command, "token": secrets.token_hex(8),
        }
        self.info.update(_slurm_run())
        self.notice: str | None = None
        """set when a stale lock was taken over (what it said)"""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ reading

    def read(self) -> dict[str, Any] | None:
        """The current holder's info, None when there is no lock ({} when unreadable)."""
        try:
            if self.loc.is_local:
                with open(self.path, "rb") as f:
                    raw = f.read(65536)
            else:
                if not self.loc.exists(LOCK):
                    return None
                with self.loc.fs.open_input_stream(self.path) as f:
                    raw = f.read(65536)
        except FileNotFoundError:
            return None
        try:
            info = json.loads(raw.decode())
            return info if isinstance(info, dict) else {}
        except (UnicodeDecodeError, ValueError):
            return {}

    def _age_s(self) -> float | None:
        """Seconds since the lock file was last refreshed."""
        try:
            if self.loc.is_local:
                return time.time() - os.stat(self.path).st_mtime
            mtime = self.loc.fs.get_file_info(self.path).mtime
            return None if mtime is None else time.time() - mtime.timestamp()
        except (OSError, ValueError):
            return None

    def stale_reason(self, info: dict[str, Any]) -> str | None:
        """Why the lock described by `info` is stale, or None when its holder may be alive."""
        ours = _slurm_run()
        if ours and info.get("slurm_job") == ours["slurm_job"] and \
                isinstance(info.get("slurm_run"), int) and info["slurm_run"] < ours["slurm_run"]:
            return (f"it was held by run {info['slurm_run']} of Slurm job {ours['slurm_job']}, "
                    f"which ended (this is run {ours['slurm_run']})")
        if info.get("host") == socket.gethostname() and isinstance(info.get("pid"), int):
            if _pid_alive(info["pid"]):
                return None  # a live process on this host: never taken over
            return f"its process {info['pid']} on this host is gone"
        age = self._age_s()
        if age is not None and age > STALE_S:
            return f"its heartbeat is {age:.0f} s old (stale after {STALE_S:.0f} s)"
        return None

    # ------------------------------------------------------------------ acquiring

    def acquire(self) -> WriterLock:
        """Take the lock, taking over a stale one; LockHeld naming the holder otherwise."""
        self.loc.fs.create_dir(self.loc.path, recursive=True)
        for _ in range(3):
            if self._create():
                self._start_heartbeat()
                return self
            info = self.read()
            if info is None:
                continue  # released between our try and our read
            why = self.stale_reason(info)
            if why is None:
                raise LockHeld(
                    f"{self.out_dir} is being written by another grokray process "
                    f"({describe_holder(info)}); wait for it to finish, or if that process is "
                    f"gone delete {self.path}")
            self._set_aside()
            self.notice = (f"took over the stale lock of {self.out_dir} "
                           f"({describe_holder(info)}): {why}")
        raise LockHeld(f"{self.out_dir}: could not take its lock {self.path}; another process "
                       "keeps creating it")

    def _create(self) -> bool:
        data = json.dumps(self.info).encode()
        if self.loc.is_local:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            return True
        if self.loc.exists(LOCK):
            return False
        with self.loc.fs.open_output_stream(self.path) as out:
            out.write(data)
        time.sleep(_OBJECT_STORE_PAUSE_S)
        info = self.read() or {}
        return info.get("token") == self.info["token"]

    def _set_aside(self) -> None:
        aside = self.loc.join(f"{LOCK}.stale-{self.info['token']}")
        try:
            self.loc.fs.move(self.path, aside)
        except (FileNotFoundError, OSError):
            return  # another process moved it first
        try:
            self.loc.fs.delete_file(aside)
        except OSError:
            pass

    # ------------------------------------------------------------------ holding

    def _start_heartbeat(self) -> None:
        self._thread = threading.Thread(target=self._beat, name="grokray-lock-heartbeat",
                                        daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            self.refresh()

    def refresh(self) -> None:
        """Refresh the heartbeat (when the lock is still ours)."""
        info = self.read()
        if not info or info.get("token") != self.info["token"]:
            return
        self.info["heartbeat_at"] = _now()
        data = json.dumps(self.info).encode()
        try:
            if self.loc.is_local:
                with open(self.path, "r+b") as f:
                    f.write(data)
                    f.truncate()
            else:
                with self.loc.fs.open_output_stream(self.path) as out:
                    out.write(data)
        except OSError:
            pass

    def release(self) -> None:
        """Remove the lock if it is still ours."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        info = self.read()
        if info and info.get("token") == self.info["token"]:
            try:
                self.loc.fs.delete_file(self.path)
            except OSError:
                pass

    def __enter__(self) -> WriterLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()
