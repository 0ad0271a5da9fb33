"""Weight norms: per seed, total and per parameter group, as curve columns of every gradient
family, and `--metric norms` in the curves view."""

import math

import pandas as pd
import pytest
import torch

from grokray.metrics.norms import weight_norms
from grokray.models.mlp import MLP
from grokray.trial import run_trial
from grokray_analysis.curves import curve_bands, expand_metrics
from grokray_analysis.errors import AnalysisError
from tests.helpers.configs import tiny_cfg

torch.set_num_threads(1)


def test_norms_per_seed_and_group_by_hand():
    params = {"W.0": torch.tensor([[3.0, 0.0], [0.0, 1.0]]),  # [S=2, 2]
              "W.1": torch.tensor([[4.0], [0.0]]),
              "b": torch.tensor([[0.0], [2.0]])}
    n = weight_norms(params)
    assert set(n) == {"weight_norm", "weight_norm_W", "weight_norm_b"}
    assert n["weight_norm_W"].tolist() == [5.0, 1.0]
    assert n["weight_norm_b"].tolist() == [0.0, 2.0]
    assert n["weight_norm"].tolist() == [5.0, pytest.approx(math.sqrt(5.0))]
    assert n["weight_norm"].dtype == torch.float64


def _cfg(arch, **over):
    return tiny_cfg(arch=arch, steps=20, **{
        "transformer.n_layers": 2, "transformer.d_model": 16, "transformer.d_mlp": 32,
        "transformer.n_heads": 2, **over})


def test_step0_norm_is_the_init_norm_and_decay_shrinks_it():
    cfg = _cfg("mlp", **{"optim.weight_decay": 5.0})
    c = run_trial(cfg).curves
    task_n = 6  # S3
    model = MLP(cfg, task_n, task_n, [0, 1], "cpu", torch.float64)
    for pos, seed in enumerate((0, 1)):
        mine = c[c.seed == seed].set_index("step")
        want = math.sqrt(sum(float(p[pos].detach().square().sum()) for p in model.params.values()))
        assert mine.loc[0, "weight_norm"] == pytest.approx(want, rel=1e-12)
        assert mine.loc[0, "weight_norm_W2"] == pytest.approx(
            float(model.params["W2"][pos].detach().norm()), rel=1e-12)
        groups = [k for k in mine.columns if k.startswith("weight_norm_")]
        assert sorted(groups) == sorted(f"weight_norm_{k}" for k in model.params)
        total = mine[groups].pow(2).sum(axis=1).pow(0.5)
        assert total.to_numpy() == pytest.approx(mine["weight_norm"].to_numpy(), rel=1e-12)
        assert mine.loc[20, "weight_norm"] < mine.loc[0, "weight_norm"]  # strong decay


@pytest.mark.parametrize("arch", ["forge", "transformer"])
def test_every_gradient_family_has_them(arch):
    over = {"transformer.norm": "spherical_bounded", "transformer.learn_scale": True}
    r = run_trial(_cfg(arch, **(over if arch == "transformer" else {})))
    c = r.curves
    assert [s.status for s in r.seeds] == ["not_grokked"] * 2
    assert c["weight_norm"].gt(0).all() and c["weight_norm"].notna().all()
    if arch == "transformer":  # layers share a group; the learned scale is one number a seed
        assert not any("." in k for k in c.columns)
        assert "weight_norm_W_Q" in c.columns
        assert c[c.step == 0]["weight_norm_scale"].tolist() == [5.0, 5.0]


def test_curves_view_norms():
    c = pd.DataFrame({"config_hash": "h", "seed": [0, 0, 1, 1], "arm": "a", "step": [0, 10] * 2,
                      "val_acc": [0.1, 1.0, 0.2, 1.0], "weight_norm": [3.0, 2.0, 5.0, 4.0],
                      "weight_norm_E": [1.0, 1.0, 2.0, 2.0]})
    names = expand_metrics(["val_acc", "norms"], c)
    assert names == ("val_acc", "weight_norm", "weight_norm_E")
    s = curve_bands(c, metric=names)
    assert s.bands[1].median == (4.0, 3.0) and math.isnan(s.bands[1].cross_step)
    with pytest.raises(AnalysisError, match="no weight_norm columns"):
        expand_metrics(["norms"], c.drop(columns=["weight_norm", "weight_norm_E"]))
