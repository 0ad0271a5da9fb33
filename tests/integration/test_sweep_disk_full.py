"""A full disk ends a sweep with one line (the file, how much the sweep still needs, how to
resume), exit 2, and nothing partial on disk; the same command then resumes."""

from __future__ import annotations

import builtins
import errno

import pandas as pd
import pytest

from grokray.cli import main as cli_main  # noqa: E402
from grokray.sweep import store  # noqa: E402
from tests.helpers import sweeps as helpers


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


@pytest.mark.ray
def test_full_disk_on_the_tune_path_raises_the_one_line_error_and_resumes(tmp_path, monkeypatch):
    """Ray Tune's callbacks hand the outcomes to the writer: a write that runs out of space
    still ends the sweep with DiskFullError (what the CLI prints as its one line, exit 2), not
    an error of Tune's, and leaves nothing partial; the rerun writes only what is missing."""
    from grokray.sweep.executors.tune import TuneExecutor
    from grokray.sweep.plan import make_plan
    from grokray.sweep.session import RaySession
    from grokray.sweep.spec import load_spec
    from grokray.sweep.writer import run_plan

    spec = load_spec(helpers.tiny_spec(tmp_path, groups=("Z5", "Z3"), concurrency=1))
    sweep_dir = tmp_path / "out" / "tiny"
    disk = Disk(tmp_path / "out", 60_000)  # room for the plan and one or two trials
    monkeypatch.setattr(store, "open", disk.open, raising=False)
    with RaySession() as session:
        def tune():
            return TuneExecutor(session, name="full", storage_path=str(tmp_path / "ray"),
                                concurrency=1, retries=0, trial_fn=helpers.synthetic)

        with pytest.raises(store.DiskFullError) as info:
            run_plan(make_plan(spec), tune())
        line = str(info.value)
        assert "\n" not in line and line.startswith("no space left on the device writing ")
        assert line.endswith("free space and run the same command to resume")
        on_disk = _files(sweep_dir)
        assert not [n for sub in on_disk.values() for n in sub if n.startswith(".")]
        assert set(on_disk["curves"]) <= set(on_disk["trials"])
        assert len(on_disk["trials"]) < 4

        monkeypatch.setattr(store, "open", builtins.open, raising=False)
        plan = make_plan(spec)
        assert len(plan.todo) == 4 - len(on_disk["trials"])
        run_plan(plan, tune())
    t = pd.concat(pd.read_parquet(sweep_dir / "trials" / n) for n in _files(sweep_dir)["trials"])
    assert len(t) == 8 and t.groupby(["config_hash", "seed"]).size().eq(1).all()
