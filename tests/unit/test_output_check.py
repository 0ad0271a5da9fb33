"""The output location is checked before any work: one line, exit 2."""

from __future__ import annotations

import os

import pytest

from grokray.cli import main as cli_main

SPEC = "name: s\nconfig: {group: Z5, arch: mlp}\nseeds: 1\nsteps: 10\n"


@pytest.fixture
def spec(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(SPEC)
    return p


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("dry", [True, False])
def test_output_is_a_file(spec, tmp_path, capsys, dry):
    f = tmp_path / "afile"
    f.write_text("x")
    rc = cli_main(["sweep", str(spec), "--out", str(f), "--local", *(["--dry-run"] * dry)])
    assert rc == 2 and "has a file in the way" in _one_line(capsys)
    assert f.read_text() == "x"


def test_output_under_a_read_only_filesystem(spec, capsys):
    rc = cli_main(["sweep", str(spec), "--out", "/proc/grokray-test/out", "--local"])
    line = _one_line(capsys)
    assert rc == 2 and "output /proc/grokray-test/out/s" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_output_read_only_dir(spec, tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        rc = cli_main(["sweep", str(spec), "--out", str(ro), "--local"])
        assert rc == 2 and "not writable" in _one_line(capsys)
    finally:
        ro.chmod(0o755)


@pytest.mark.parametrize("url,fragment", [
    ("ftp://host/results", "unsupported URL scheme 'ftp'"),
    ("mem://x", "unsupported URL scheme 'mem'"),
])
def test_output_url_unsupported(spec, capsys, url, fragment):
    rc = cli_main(["sweep", str(spec), "--out", url, "--dry-run"])
    assert rc == 2 and fragment in _one_line(capsys)


def test_output_url_unreachable(spec, capsys):
    # nothing listens on port 9: pyarrow's S3 client gives up after its retries (about 8 s)
    url = "s3://bucket/x?endpoint_override=127.0.0.1:9&scheme=http&region=us-east-1"
    rc = cli_main(["sweep", str(spec), "--out", url, "--dry-run"])
    line = _one_line(capsys)
    assert rc == 2 and "unreachable" in line and "s3://bucket/x/s?" in line


def test_run_checks_out_before_training(tmp_path, capsys):
    f = tmp_path / "afile"
    f.write_text("x")
    rc = cli_main(["run", "--set", "group=Z5", "--set", "steps=100000", "--out", str(f)])
    line = _one_line(capsys)  # no progress bar, no table: nothing trained
    assert rc == 2 and "is a file" in line


def test_run_out_to_read_only_fs(capsys):
    rc = cli_main(["run", "--set", "group=Z5", "--out", "/proc/grokray-test"])
    assert rc == 2 and "cannot write there" in _one_line(capsys)
