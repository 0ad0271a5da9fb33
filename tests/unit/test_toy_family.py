"""A new architecture is one file and one registry line: the worked example of
docs/architecture.md ("Adding an architecture"), executed from the doc itself, is registered
here and runs through `grokray run` and a local `grokray sweep` (in-process CLI), editing no
other file.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pandas as pd
import pytest
import torch

from grokray.cli import main
from grokray.config import TrialConfig
from grokray.families import get_family, register

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def _documented_module() -> types.ModuleType:
    """The doc's ```python block that starts `# grokray/models/bilinear.py`, run as a module."""
    block = re.search(r"```python\n(# grokray/models/bilinear\.py\n.*?)```", DOC.read_text(),
                      re.S)
    mod = types.ModuleType("bilinear_doc")
    sys.modules[mod.__name__] = mod  # dataclasses look their module up
    exec(compile(block.group(1), str(DOC), "exec"), mod.__dict__)  # noqa: S102
    return mod


bilinear = _documented_module()
FAMILY = bilinear.FAMILY


@pytest.fixture(autouse=True)
def _registered():
    register(FAMILY)
    yield
    from grokray import families as registry

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


def test_the_toy_family_writes_four_members_and_gets_the_rest():
    """The documented family defines __init__, count_params, logits and embedding; every other
    member of the protocol comes from BaseModel's defaults, with the values they document."""
    from grokray.models.protocol import BaseModel, Model

    cls = bilinear.Bilinear
    own = {k for k in vars(cls) if k == "__init__" or not k.startswith("__")}
    assert own == {"__init__", "count_params", "logits", "embedding"}
    members = {k for k in vars(Model) if not k.startswith("_")} | set(Model.__annotations__)
    defaults = set(dir(BaseModel)) | set(BaseModel.__annotations__)  # params: set in __init__
    assert len(members) == 18 and members <= own | defaults
    m = cls(TrialConfig.from_dict({"arch": "bilinear", "bilinear.d": 4}), 5, 5, [0, 1, 2])
    a, b, y = torch.tensor([0, 1, 4]), torch.tensor([2, 2, 3]), torch.tensor([[1, 0, 2]] * 3)
    assert not m.has_aux and m.pair_floats == 0 and m.aux_weight(0, 10) == 0.0
    assert m.aux_losses() == {} and m.hooks() == {}
    assert m.weight_decay(0.5) == {"E": 0.5, "U": 0.5}
    assert m.embeddings()["E"] is m.params["E"]
    torch.testing.assert_close(m.activations(a, b)["logits"], m.logits(a, b))
    whole, = m.data_losses(a.expand(3, -1), b.expand(3, -1), y, chunk=8)
    parts = sum(m.data_losses(a.expand(3, -1), b.expand(3, -1), y, chunk=2))
    torch.testing.assert_close(parts, whole)
    E2 = m.params["E"][2].detach().clone()
    m.select(torch.tensor([2]))
    assert m.params["E"].shape[0] == 1 and m.params["E"].requires_grad
    torch.testing.assert_close(m.params["E"][0], E2)


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
