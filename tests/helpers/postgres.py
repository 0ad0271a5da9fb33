"""A throwaway PostgreSQL server for the service's tests: Debian's `postgresql` package's
initdb/pg_ctl (no systemd), a data dir under /tmp, a Unix socket and a free TCP port on
127.0.0.1. As root the server runs as the `postgres` user (initdb refuses root).
.ci/run installs the package where it is root; elsewhere `missing()` says why the tests skip."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def bindir() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if found:
        return os.path.dirname(found[-1])
    pg_ctl = shutil.which("pg_ctl")
    return os.path.dirname(pg_ctl) if pg_ctl else None


def missing() -> str | None:
    """Why no server can be started here, or None."""
    if bindir() is None:
        return "no PostgreSQL (Debian's postgresql package: apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root without a postgres user to run the server"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One PostgreSQL server: `start()`, `url`, `kill()` (SIGKILL to the postmaster and its
    backends), `stop()`."""

    def __init__(self) -> None:
        self.root = tempfile.mkdtemp(prefix="grokray-pg-")
        self.data = os.path.join(self.root, "data")
        self.port = _free_port()
        self.bin = bindir()
        self._as = []
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
            os.chmod(self.root, 0o755)
            self._as = ["runuser", "-u", "postgres", "--"]
        self._run("initdb", "-D", self.data, "-A", "trust", "-U", "grokray", "--no-sync",
                  "-E", "UTF8")

    @property
    def url(self) -> str:
        return f"postgresql://grokray@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([*self._as, os.path.join(self.bin, tool), *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=self.root,
                       timeout=120)

    def start(self) -> None:
        opts = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=on"
        self._run("pg_ctl", "-D", self.data, "-o", opts, "-l",
                  os.path.join(self.root, "log"), "-w", "-t", "60", "start")

    def pid(self) -> int | None:
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None

    def kill(self) -> None:
        """SIGKILL the server (the postmaster and every backend), as a crash would."""
        pid = self.pid()
        if pid is None:
            return
        kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
        for p in [pid, *map(int, kids.split())]:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", self.data, "-m", "immediate", "stop")
        except subprocess.CalledProcessError:
            self.kill()
        shutil.rmtree(self.root, ignore_errors=True)
