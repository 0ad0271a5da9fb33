"""One writer per output dir: the lock file, its holder, stale takeover, and the CLI's exit 2."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from grokray.cli import main as cli_main
from grokray.sweep.lock import LOCK, STALE_S, LockHeld, WriterLock

SPEC = "name: s\nout: {out}\nconfig: {{group: Z5, arch: mlp}}\nseeds: 2\nsteps: 10\n"


def test_second_writer_is_refused_naming_the_holder(tmp_path):
    d = str(tmp_path / "sweep")
    with WriterLock(d, "first") as held:
        info = json.loads((tmp_path / "sweep" / LOCK).read_text())
        assert info["host"] == socket.gethostname() and info["pid"] == os.getpid()
        assert info["command"] == "first" and info["token"] == held.info["token"]
        with pytest.raises(LockHeld) as e:
            WriterLock(d, "second").acquire()
        msg = str(e.value)
        assert f"host {socket.gethostname()}, pid {os.getpid()}" in msg and "'first'" in msg
        assert len(msg.splitlines()) == 1
    assert not (tmp_path / "sweep" / LOCK).exists()  # released
    with WriterLock(d, "third"):
        pass


def test_lock_of_a_dead_process_is_taken_over(tmp_path):
    d = tmp_path / "sweep"
    d.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(dead.stdout)
    (d / LOCK).write_text(json.dumps({"host": socket.gethostname(), "pid": pid,
                                      "started_at": "x", "token": "old"}))
    lock = WriterLock(str(d)).acquire()
    try:
        assert lock.notice and f"process {pid} on this host is gone" in lock.notice
        assert json.loads((d / LOCK).read_text())["token"] == lock.info["token"]
    finally:
        lock.release()


def test_lock_with_an_old_heartbeat_on_another_host_is_taken_over(tmp_path):
    d = tmp_path / "sweep"
    d.mkdir()
    (d / LOCK).write_text(json.dumps({"host": "elsewhere", "pid": 1, "token": "old"}))
    fresh = WriterLock(str(d))
    with pytest.raises(LockHeld, match="host elsewhere, pid 1"):
        fresh.acquire()  # a fresh lock of another host: held
    old = time.time() - STALE_S - 10
    os.utime(d / LOCK, (old, old))
    lock = WriterLock(str(d)).acquire()
    assert "heartbeat" in lock.notice
    lock.release()


def test_heartbeat_refreshes_the_lock(tmp_path):
    lock = WriterLock(str(tmp_path)).acquire()
    try:
        old = time.time() - 1000
        os.utime(tmp_path / LOCK, (old, old))
        lock.refresh()
        assert time.time() - os.stat(tmp_path / LOCK).st_mtime < 100
    finally:
        lock.release()


def test_sweep_while_locked_exits_2_and_writes_nothing(tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC.format(out=tmp_path / "out"))
    with WriterLock(str(tmp_path / "out" / "s"), "holder"):
        rc = cli_main(["sweep", str(spec), "--local"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "being written by another grokray process" in err[0] and f"pid {os.getpid()}" in err[0]
    assert not (tmp_path / "out" / "s" / "trials").exists()


def test_run_out_while_locked_exits_2_before_training(tmp_path, capsys):
    out = tmp_path / "one"
    with WriterLock(str(out), "holder"):
        rc = cli_main(["run", "--set", "group=Z5", "--set", "steps=100000", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "being written by another grokray process" in err[0]
    assert not (out / "trials").exists()
