import math
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
from toy_groups import cyclic, s3

from grokray.errors import ConfigError
from grokray.metrics.mechanism import (
    MetricInputs,
    compute_eval_metrics,
    metrics_due,
    summarize,
    validate_metric_names,
)


def test_metrics_due_cadence():
    m = SimpleNamespace(cheap=["spectrum"], costly=["wedderburn"], costly_every=3)
    due = [metrics_due(m, i) for i in range(5)]
    assert due == [["spectrum", "wedderburn"], ["spectrum"], ["spectrum"],
                   ["spectrum", "wedderburn"], ["spectrum"]]
    assert metrics_due(m, 4, final=True) == ["spectrum", "wedderburn"]


def test_unknown_name_is_a_config_error():
    with pytest.raises(ConfigError, match="valid: spectrum, wedderburn"):
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
