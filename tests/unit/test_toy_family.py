"""A new architecture is one file and one registry line: this file defines a toy family (model +
config section), registers it, and runs it through `grokray run` and a local `grokray sweep`
(in-process CLI), editing no other file. The worked example in docs/architecture.md is this one.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pytest
import torch

from grokray.cli import main
from grokray.config import TrialConfig
from grokray.fields import positive
from grokray.models import gather_rows, normal, select_params, stack_init
from grokray.models.protocol import NoAux, chunked_losses, uniform_decay
from grokray.models.registry import Family, get_family, register
from grokray.trainer import train


@dataclass
class BilinearConfig:
    """logits = (E[a] * E[b]) U^T: one elementwise product."""

    d: int = positive(16)
    """embedding width"""


class Bilinear(NoAux):
    pair_floats = 0  # no per-pair buffers beyond the logits (CPU chunk sizing)

    def __init__(self, cfg, n_in, n_out, seeds, device="cpu", dtype=torch.float32):
        d = cfg.bilinear.d
        self.params = stack_init(seeds, lambda g: {"E": normal(g, (n_in, d), 1.0),
                                                   "U": normal(g, (n_out, d), d**-0.5)},
                                 device, dtype)

    @staticmethod
    def count_params(cfg, n_in, n_out):
        return (n_in + n_out) * cfg.bilinear.d

    def logits(self, a, b):  # a, b: [S, B] or [B] -> [S, B, n_out]
        E = self.params["E"]
        return torch.bmm(gather_rows(E, a) * gather_rows(E, b), self.params["U"].transpose(1, 2))

    def data_losses(self, a, b, y, chunk):
        return chunked_losses(self.logits, a, b, y, chunk)

    def weight_decay(self, base):
        return uniform_decay(self.params, base)

    def embedding(self):
        return self.params["E"]

    def hooks(self):
        return {}

    def embeddings(self):
        return {"E": self.params["E"]}

    def activations(self, a, b):
        return {"logits": self.logits(a, b)}

    def select(self, keep):
        self.params = select_params(self.params, keep)


FAMILY = Family("bilinear", model=Bilinear, train=train, section="bilinear",
                config=BilinearConfig)


@pytest.fixture(autouse=True)
def _registered():
    register(FAMILY)
    yield
    from grokray.models import registry

    registry._FAMILIES.pop("bilinear", None)


def test_the_toy_family_is_a_config_section_and_an_identity():
    assert get_family("bilinear") is FAMILY
    cfg = TrialConfig.from_dict({"arch": "bilinear", "bilinear.d": 8})
    assert cfg.bilinear.d == 8
    with pytest.raises(Exception, match="bilinear.d must be > 0"):
        TrialConfig.from_dict({"arch": "bilinear", "bilinear.d": 0})
    # a bilinear trial reads its own section; an MLP's identity ignores it
    assert cfg.config_hash() != cfg.with_overrides({"bilinear.d": 9}).config_hash()
    mlp = TrialConfig.from_dict({"arch": "mlp"})
    assert mlp.config_hash() == mlp.with_overrides({"bilinear.d": 9}).config_hash()


def test_grokray_run_trains_the_toy_family(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["run", "--set", "arch=bilinear", "--set", "bilinear.d=8", "--set", "group=Z5",
               "--set", "steps=30", "--set", "eval_every=10", "--set", "device=cpu",
               "--set", "optim.lr=0.05", "--seeds", "2", "--out", str(out), "--json"])
    assert rc == 0
    t = pd.read_parquet(next((out / "trials").glob("*.parquet")))
    c = pd.read_parquet(next((out / "curves").glob("*.parquet")))
    assert list(t["arch"]) == ["bilinear"] * 2 and list(t["bilinear_d"]) == [8, 8]
    assert (t["n_params"] == (5 + 5) * 8).all() and set(t["status"]) <= {"grokked", "not_grokked"}
    for _, seed in c.groupby("seed"):  # it trained: the train loss went down
        assert seed.sort_values("step")["train_loss"].iloc[-1] < seed["train_loss"].iloc[0]


def test_a_local_sweep_runs_the_toy_family(tmp_path):
    spec = tmp_path / "toy.yaml"
    spec.write_text(f"""\
name: toy
out: {tmp_path / "out"}
config: {{group: Z5, device: cpu, steps: 20, eval_every: 10, arch: bilinear}}
axes:
  bilinear.d: [4, 8]
seeds: 2
""")
    assert main(["sweep", str(spec), "--local", "--plain"]) == 0
    t = pd.concat(pd.read_parquet(p) for p in (tmp_path / "out" / "toy" / "trials").glob("*"))
    assert sorted(t["bilinear_d"]) == [4, 4, 8, 8] and t["config_hash"].nunique() == 2
    assert set(t["status"]) <= {"grokked", "not_grokked"}
