"""A full disk ends a sweep with one line (the file, how much the sweep still needs, how to
resume), exit 2, and nothing partial on disk; the same command then resumes."""

from __future__ import annotations

import builtins
import errno
import os
import sys

import pandas as pd
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import _sweep_helpers as helpers  # noqa: E402

from grokray.cli import main as cli_main  # noqa: E402
from grokray.sweep import store  # noqa: E402


class Disk:
    """A disk of `capacity` bytes under `root` (bytes written count; nothing is given back):
    a write past it raises ENOSPC, as a full filesystem does."""

    def __init__(self, root: str, capacity: int) -> None:
        self.root, self.capacity, self.used = str(root), capacity, 0

    def open(self, path, mode="r", *args, **kwargs):
        f = builtins.open(path, mode, *args, **kwargs)
        if "w" not in mode or not str(path).startswith(self.root):
            return f
        disk = self

        class Limited:
            def __getattr__(self, name):
                return getattr(f, name)

            def write(self, data):
                disk.used += len(data)
                if disk.used > disk.capacity:
                    raise OSError(errno.ENOSPC, "No space left on device")
                return f.write(data)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                f.close()

        return Limited()


def _files(sweep_dir):
    return {sub: sorted(p.name for p in (sweep_dir / sub).glob("*")) if (sweep_dir / sub).exists()
            else [] for sub in ("trials", "curves", "snapshots")}


def test_full_disk_one_line_no_partial_file_and_resume(tmp_path, capsys, monkeypatch):
    spec = helpers.tiny_spec(tmp_path, groups=("Z5",), steps=10)
    sweep_dir = tmp_path / "out" / "tiny"
    # a trial's three files take 100-140 kB: the second trial does not fit on 150 kB
    disk = Disk(tmp_path / "out", 150_000)
    monkeypatch.setattr(store, "open", disk.open, raising=False)
    rc = cli_main(["sweep", str(spec), "--local", "--plain"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    line = err[-1]
    assert "Traceback" not in "\n".join(err)
    assert line.startswith("grokray sweep: error: no space left on the device writing ")
    assert f"{sweep_dir}/" in line and line.endswith("free space and run the same command "
                                                     "to resume")
    assert "the sweep still needs about" in line and "(1 trial(s) of ~" in line
    on_disk = _files(sweep_dir)
    assert not [n for sub in on_disk.values() for n in sub if n.startswith(".")]
    for sub in ("curves", "snapshots"):  # none without their trials file
        assert set(on_disk[sub]) <= set(on_disk["trials"])
    done = len(on_disk["trials"])
    assert done == 1

    monkeypatch.setattr(store, "open", builtins.open, raising=False)
    assert cli_main(["sweep", str(spec), "--local", "--plain"]) == 0
    t = pd.concat(pd.read_parquet(sweep_dir / "trials" / n) for n in _files(sweep_dir)["trials"])
    assert len(t) == 4 and t.groupby(["config_hash", "seed"]).size().eq(1).all()
    assert set(_files(sweep_dir)["trials"]) >= set(on_disk["trials"])  # resumed, not redone


def test_trials_file_that_does_not_fit_takes_its_curves_file_with_it(tmp_path, monkeypatch):
    trials = pd.DataFrame({"config_hash": ["h"], "seed": [0], "status": ["grokked"]})
    curves = pd.DataFrame({"config_hash": ["h"] * 3, "seed": [0] * 3, "step": [0, 1, 2]})

    def no_trials(path, mode="r", *args, **kwargs):  # the curves file fits, its trials not
        if "w" in mode and "/trials/" in str(path):
            raise OSError(errno.ENOSPC, "No space left on device")
        return builtins.open(path, mode, *args, **kwargs)

    monkeypatch.setattr(store, "open", no_trials, raising=False)
    with pytest.raises(store.DiskFullError) as info:
        store.write_frames(tmp_path, trials, curves, config_hash="h", run_id="r")
    assert info.value.path == f"{tmp_path}/trials/h-r.parquet"
    assert info.value.trial_bytes > 0
    assert list((tmp_path / "curves").iterdir()) == []
    assert list((tmp_path / "trials").iterdir()) == []
