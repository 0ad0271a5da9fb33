"""Paper claim at small scale: the MLP baseline groks a cyclic group (Z97 addition, train 0.4)
within its budget for every seed of 3 (config: sweeps/run/mlp_z97.yaml)."""

from pathlib import Path

import pytest
import torch

from grokray.config import load_yaml
from grokray.trial import run_trial

CONFIG = Path(__file__).resolve().parents[2] / "sweeps" / "run" / "mlp_z97.yaml"


@pytest.mark.slow
def test_mlp_groks_z97_every_seed():
    torch.set_num_threads(1)
    cfg = load_yaml(str(CONFIG)).with_overrides({"seeds": [0, 1, 2], "device": "cpu"})
    r = run_trial(cfg)
    print({s.seed: (s.status, s.grok_step, s.memorize_step) for s in r.seeds})
    for s in r.seeds:
        assert s.status == "grokked", s
        assert s.memorize_step is not None and s.grok_step >= s.memorize_step
        assert s.final["final_val_acc"] >= 0.99
