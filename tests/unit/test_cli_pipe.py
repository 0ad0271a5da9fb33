"""A reader that closes the pipe (`grokray specs | head -3`) stops grokray quietly: no traceback,
no "Exception ignored" line from Python's exit flush; status 1, as rich gives the commands that
print through it."""

from __future__ import annotations

import subprocess
import sys


def _run(args: list[str], close_stdout: bool) -> tuple[int, str, str]:
    p = subprocess.Popen([sys.executable, "-m", "grokray.cli", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if close_stdout:
        p.stdout.close()  # the reader is gone before the command writes
        return p.wait(timeout=120), "", p.stderr.read()
    out, err = p.communicate(timeout=120)
    return p.returncode, out, err


def test_a_closed_pipe_stops_a_printing_command_without_a_traceback(tmp_path):
    rc, _, err = _run(["specs", "copy", "smoke", str(tmp_path / "a")], close_stdout=True)
    assert (rc, err) == (1, "")
    assert (tmp_path / "a" / "smoke.yaml").is_file()  # the work itself was done


def test_an_open_pipe_still_gets_everything(tmp_path):
    rc, out, err = _run(["specs", "copy", "smoke", str(tmp_path / "b")], close_stdout=False)
    assert (rc, err) == (0, "")
    assert "copied smoke" in out
