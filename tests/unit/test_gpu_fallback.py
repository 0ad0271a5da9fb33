"""What a trial saw of the GPUs it was given: recorded in its row; `device: auto` without CUDA
said once in the sweep output; `device: cuda` without CUDA one clear error."""

from __future__ import annotations

import io
from datetime import datetime, timezone

import pandas as pd
import pytest
import torch

from grokray.config import TrialConfig
from grokray.errors import ConfigError
from grokray.result import SeedResult, TrialResult
from grokray.schema import trial_frame
from grokray.sweep.outcome import Outcome
from grokray.sweep.progress import Display
from grokray.trial import run_trial
from grokray.trialrun import resolve_device

TINY = {"group": "Z5", "arch": "mlp", "steps": 2, "eval_every": 1, "model.d": 4,
        "model.hidden": 4, "seeds": [0]}


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_cuda_without_cuda_is_one_line_naming_the_gpus_given(no_cuda, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    with pytest.raises(ConfigError) as e:
        resolve_device("cuda")
    msg = str(e.value)
    assert msg.startswith("device 'cuda' requested but CUDA is not available on ")
    assert msg.endswith(", CUDA_VISIBLE_DEVICES=1; valid: auto, cpu") and "\n" not in msg
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    with pytest.raises(ConfigError, match=r"not available on [^,]+; valid: auto, cpu$"):
        resolve_device("cuda:1")
    assert resolve_device("auto") == torch.device("cpu")


def test_the_row_records_the_gpu_ids_and_node(no_cuda, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    r = run_trial(TrialConfig.from_dict({**TINY, "device": "auto"}))
    assert r.device == "cpu" and r.cuda_visible_devices == "1"
    r.node_id = "abc"
    row = trial_frame(r, "sw", "r1").iloc[0]
    assert row.cuda_visible_devices == "1" and row.ray_node_id == "abc" and row.device == "cpu"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    row = trial_frame(run_trial(TrialConfig.from_dict(TINY)), "sw", "r1").iloc[0]
    assert pd.isna(row.cuda_visible_devices)


def _finish(display: Display, device: str, ran_on: str, visible: str | None) -> None:
    cfg = TrialConfig.from_dict({**TINY, "device": device})
    t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    result = TrialResult(cfg, 1, ran_on, 0.1, t, t, [SeedResult(0, 0, "not_grokked")],
                         curves=None, cuda_visible_devices=visible)
    display.finished(Outcome(cfg, result), result)


@pytest.mark.parametrize("device, ran_on, visible, said", [
    ("auto", "cpu", "0", 1),     # given a GPU share, no CUDA: said, once for three trials
    ("auto", "cpu", None, 0),    # no GPU asked for: the CPU is what auto means
    ("auto", "cpu", "", 0),      # Ray's "no GPUs" for a gpu 0 worker
    ("cpu", "cpu", "0", 0),      # the CPU was asked for
    ("auto", "cuda:0", "0", 0),  # it found the GPU
])
def test_the_cpu_fallback_is_said_once(device, ran_on, visible, said):
    out = io.StringIO()
    d = Display(3, 6, live=False, stream=out)
    for _ in range(3):
        _finish(d, device, ran_on, visible)
    lines = [ln for ln in out.getvalue().splitlines() if ln.startswith("device auto:")]
    assert len(lines) == said
    if said:
        assert lines[0] == ("device auto: Ray gave trials GPUs (CUDA_VISIBLE_DEVICES=0) but CUDA "
                            "is not available there: they run on the CPU (device: cuda makes "
                            "this an error)")
