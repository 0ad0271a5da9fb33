"""`grokray sweep --out` that cannot be written: one line, exit 2, before any trial runs."""

from __future__ import annotations

from grokray.cli import main as cli_main
from tests.helpers import sweeps as helpers


def test_unwritable_out_is_one_line_and_exit_2(tmp_path, capsys):
    spec = helpers.tiny_spec(tmp_path)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    assert cli_main(["sweep", str(spec), "--local", "--plain", "--out", str(blocker / "r")]) == 2
    captured = capsys.readouterr()
    err = [line for line in captured.err.splitlines() if line.strip()]
    assert len(err) == 1 and f"output {blocker}/r/tiny: has a file in the way" in err[0], err
    assert "Traceback" not in captured.err
    assert "[1/" not in captured.out  # no trial ran
    assert blocker.read_text() == "not a directory"

