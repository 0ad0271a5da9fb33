import math
from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from grokray.config import TrialConfig
from grokray.errors import ConfigError
from grokray.metrics.mechanism import (
    MetricInputs,
    compute_eval_metrics,
    metrics_due,
    summarize,
    validate_metric_names,
)
from grokray.models.forge import Forge
from grokray.models.mlp import MLP
from tests.helpers.toy_groups import cyclic, s3


def test_metrics_due_cadence():
    m = SimpleNamespace(cheap=["spectrum"], costly=["wedderburn"], costly_every=3)
    due = [metrics_due(m, i) for i in range(5)]
    assert due == [["spectrum", "wedderburn"], ["spectrum"], ["spectrum"],
                   ["spectrum", "wedderburn"], ["spectrum"]]
    assert metrics_due(m, 4, final=True) == ["spectrum", "wedderburn"]


def test_unknown_name_is_a_config_error():
    with pytest.raises(ConfigError, match="valid: nfa, spectrum, spectrum_readings, wedderburn"):
        validate_metric_names(["spectrum", "fourier"])


def test_compute_eval_metrics_per_seed():
    G = cyclic(11)
    x = torch.arange(11, dtype=torch.float64)
    cos3 = torch.cos(2 * math.pi * 3 * x / 11)[:, None]
    noise = torch.randn(11, 1, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    E = torch.stack([cos3, noise]).float()  # [S=2, n, 1]
    wrong = G.table.clone()
    wrong[0, 0] = 5
    table = torch.stack([G.table, wrong])  # [S=2, n, n]
    out = compute_eval_metrics(MetricInputs(group=G, E=E, pred_table=table),
                               ["spectrum", "wedderburn"])
    assert set(out) == {"eff_modes", "n_key_modes", "top_mode", "top_mode_frac",
                        "wedderburn_match", "wedderburn_total", "wedderburn_frac",
                        "wedderburn_match_nz", "wedderburn_total_nz", "wedderburn_frac_nz"}
    assert all(v.shape == (2,) and v.dtype == torch.float64 for v in out.values())
    assert out["eff_modes"][0].item() == pytest.approx(1.0, abs=1e-5)
    assert out["eff_modes"][1].item() > 1.5
    assert out["top_mode"][0].item() == 3
    assert out["wedderburn_match"].tolist() == [11**3, 11**3 - 2]
    assert out["wedderburn_match_nz"].tolist() == [121, 120]
    assert out["wedderburn_total_nz"].tolist() == [121, 121]
    # no group: the axis is read as Z_n
    no_group = compute_eval_metrics(MetricInputs(group=None, E=E, pred_table=table),
                                    ["spectrum", "wedderburn"])
    assert torch.allclose(no_group["eff_modes"], out["eff_modes"])
    assert no_group["wedderburn_match"].isnan().all()
    # missing inputs: NaN columns, not an error
    no_table = compute_eval_metrics(MetricInputs(group=G, E=E), ["wedderburn"])
    assert no_table["wedderburn_frac"].shape == (2,) and no_table["wedderburn_frac"].isnan().all()
    with pytest.raises(ValueError, match="E has 5 rows"):
        compute_eval_metrics(MetricInputs(group=G, E=E[:, :5]), ["spectrum"])


def test_spectrum_on_s3_sign():
    G = s3()
    sign = torch.tensor([1.0, -1.0, 1.0])[G.class_of]
    out = compute_eval_metrics(MetricInputs(group=G, E=sign[None, :, None]), ["spectrum"])
    assert out["top_mode"].item() == 1 and out["n_key_modes"].item() == 1


def test_summarize_last_values_and_axioms():
    curves = pd.DataFrame({
        "seed": [0, 0, 0, 1, 1, 1],
        "step": [0, 100, 200, 0, 100, 200],
        "metric_eff_modes": [9.0, 4.0, float("nan"), 8.0, 7.0, 6.0],
        "loss_ident": [1.0, 0.001, 0.0, 1.0, 0.5, 0.2],
    })
    s = summarize(curves, {0: 200, 1: None})
    assert s[0]["eff_modes"] == 4.0  # last finite value
    assert s[1]["eff_modes"] == 6.0
    assert s[0]["ident_step"] == 100 and s[0]["ident_lead"] == 100
    assert math.isnan(s[1]["ident_step"])


def _direct_nfa(model: MLP, s: int, a: torch.Tensor, b: torch.Tensor) -> tuple[float, ...]:
    """NFA of seed s by autograd: Jacobians of logits wrt the one-hot input e_a (+) e_b."""
    P = {k: v[s].detach().double() for k, v in model.params.items()}
    n = P["Ea"].shape[0]
    W1 = torch.cat([P["Ea"] @ P["W1a"], P["Eb"] @ P["W1b"]], 0).T  # [h, 2n]

    def f(x):  # x [2n] -> logits [n_out]
        return model.act(W1 @ x + P["b1"]) @ P["W2"] + P["b2"]

    X = torch.zeros(a.numel(), 2 * n, dtype=torch.float64)
    X[torch.arange(a.numel()), a] = 1.0
    X[torch.arange(a.numel()), n + b] = 1.0
    # the one-hot function is the model's: same logits on the pairs
    ref = model.logits(a, b)[s].double()
    assert torch.allclose(torch.stack([f(x) for x in X]), ref, atol=1e-5)
    J = torch.stack([torch.autograd.functional.jacobian(f, x) for x in X])  # [N, c, 2n]
    G = torch.einsum("ncd,nce->de", J, J) / X.shape[0]  # AGOP [2n, 2n]
    w, V = torch.linalg.eigh(G)
    root = (V * w.clamp(min=0).sqrt()) @ V.T
    nfm = W1.T @ W1
    off = ~torch.eye(2 * n, dtype=torch.bool)

    def r(A, B):
        return float(pd.Series(A.flatten().numpy()).corr(pd.Series(B.flatten().numpy())))

    return r(nfm, root), r(nfm, G), r(nfm[off], root[off])


@pytest.mark.parametrize("act", ["relu", "quadratic"])
def test_nfa_matches_autograd_on_a_tiny_mlp(act):
    cfg = TrialConfig().with_overrides({"model.d": 4, "model.hidden": 6, "model.act": act})
    model = MLP(cfg, 5, 5, [0, 1], dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    a = torch.randint(0, 5, (2, 12), generator=gen)
    b = torch.randint(0, 5, (2, 12), generator=gen)
    inputs = MetricInputs(group=None, hooks=model.hooks(), pairs=(a, b))
    out = compute_eval_metrics(inputs, ["nfa"])
    assert set(out) == {"nfa_corr", "nfa_corr_agop", "nfa_corr_offdiag"}
    for s in range(2):
        corr, corr1, corr_off = _direct_nfa(model, s, a[s], b[s])
        assert out["nfa_corr"][s].item() == pytest.approx(corr, abs=1e-9)
        assert out["nfa_corr_agop"][s].item() == pytest.approx(corr1, abs=1e-9)
        assert out["nfa_corr_offdiag"][s].item() == pytest.approx(corr_off, abs=1e-9)
        assert abs(corr) < 0.999  # an untrained net: a real correlation, not a degenerate 1
    # no pairs given: the AGOP over the whole 5 x 5 grid
    grid = compute_eval_metrics(MetricInputs(group=None, hooks=model.hooks()), ["nfa"])
    g = torch.arange(5)
    corr = _direct_nfa(model, 1, g.repeat_interleave(5), g.repeat(5))[0]
    assert grid["nfa_corr"][1].item() == pytest.approx(corr, abs=1e-9)


def test_nfa_is_nan_for_other_archs():
    cfg = TrialConfig().with_overrides({"model.d": 4, "model.rank": 3, "forge.inv_hidden": 4})
    forge = Forge(cfg, 5, 5, [0, 1, 2])
    out = compute_eval_metrics(MetricInputs(group=None, hooks=forge.hooks(), n_seeds=3), ["nfa"])
    assert out["nfa_corr"].shape == (3,) and out["nfa_corr"].isnan().all()
    none = compute_eval_metrics(MetricInputs(group=None, E=torch.zeros(2, 5, 3)), ["nfa"])
    assert none["nfa_corr_agop"].shape == (2,) and none["nfa_corr_agop"].isnan().all()


def test_spectrum_readings_values():
    """exp-entropy and 99%-mass readings, and one operand embedding alone (MLP's E_a)."""
    G = cyclic(11)
    x = torch.arange(11, dtype=torch.float64)
    c = [torch.cos(2 * math.pi * k * x / 11) for k in (1, 2, 3, 4)]
    # seed 0: modes 1, 2 with masses 1 : 1; seed 1: masses 16 : 1 (amplitudes 4 : 1)
    E = torch.stack([torch.stack([c[0], c[1]], -1),
                     torch.stack([4 * c[0], c[1]], -1)])  # [S=2, n, 2]
    out = compute_eval_metrics(MetricInputs(group=G, E=E), ["spectrum", "spectrum_readings"])
    assert set(out) >= {"modes_entropy", "n_modes_99", "eff_modes_one"}
    assert out["modes_entropy"][0].item() == pytest.approx(2.0, abs=1e-9)
    p = torch.tensor([16 / 17, 1 / 17], dtype=torch.float64)
    assert out["modes_entropy"][1].item() == pytest.approx(
        math.exp(-(p * p.log()).sum().item()), abs=1e-9)  # 1.2507
    assert out["eff_modes"][1].item() == pytest.approx(289 / 257, abs=1e-9)  # PR 1.1245
    assert out["n_key_modes"].tolist() == [2.0, 1.0]  # 90%: seed 1's first mode holds 0.94
    assert out["n_modes_99"].tolist() == [2.0, 2.0]
    assert torch.allclose(out["eff_modes_one"], out["eff_modes"])  # no pair_mlp: E itself
    # an MLP view: E is [E_a, E_b]; eff_modes_one reads E_a only (a pure cosine: 1 mode)
    Ea, Eb = c[2][None, :, None], torch.stack([c[0], c[1]], -1)[None]
    hooks = {"pair_mlp": {"Ea": Ea}}
    mlp = compute_eval_metrics(MetricInputs(group=G, E=torch.cat([Ea, Eb], -1), hooks=hooks),
                               ["spectrum", "spectrum_readings"])
    assert mlp["eff_modes_one"].item() == pytest.approx(1.0, abs=1e-9)
    assert mlp["eff_modes"].item() == pytest.approx(3.0, abs=1e-9)  # 3 equal modes in [Ea, Eb]
    assert compute_eval_metrics(MetricInputs(group=G, n_seeds=2),
                                ["spectrum_readings"])["modes_entropy"].isnan().all()
