import math

import numpy as np
import pandas as pd
import pytest

from grokray.metrics.axioms import axiom_emergence, first_below


def _curves() -> pd.DataFrame:
    steps = np.arange(0, 1000, 100)  # 0, 100, ..., 900
    rows = []
    for seed in (0, 1):
        for s in steps:
            rows.append({
                "seed": seed,
                "step": int(s),
                # ident: 10 * 0.5^(step/100) -> <= 0.1 (rel 0.01) first at step 700
                "loss_ident": 10 * 0.5 ** (s / 100),
                # assoc: flat at 1 for seed 0 (never), drops at 300 for seed 1
                "loss_assoc": 1.0 if seed == 0 or s < 300 else 1e-3,
                "loss_inv": float("nan") if s == 0 else 2.0 * (0.1 if s >= 500 else 1.0),
            })
    return pd.DataFrame(rows).sample(frac=1.0, random_state=0)  # order must not matter


def test_first_below_vectorized():
    loss = np.array([[4.0, np.nan], [1.0, 2.0], [0.03, 0.01], [0.01, 0.5]])  # [T=4, 2]
    steps = np.array([0, 10, 20, 30])
    out = first_below(loss, steps, rel=0.01)
    assert out[0] == 20  # threshold 0.04: 0.03 at step 20
    assert out[1] == 20  # first finite is 2.0 -> threshold 0.02


def test_emergence_steps_and_leads():
    res = axiom_emergence(_curves(), {0: 900, 1: None}, rel=0.01)
    assert res[0]["ident_step"] == 700
    assert res[0]["ident_lead"] == 200
    assert math.isnan(res[0]["assoc_step"]) and math.isnan(res[0]["assoc_lead"])
    assert res[1]["assoc_step"] == 300
    assert math.isnan(res[1]["assoc_lead"])  # never grokked
    # inv: first finite value (step 100) is 2.0; 0.2 at step 500 is not <= 0.02
    assert math.isnan(res[0]["inv_step"])
    res_loose = axiom_emergence(_curves(), {0: 900, 1: 400}, rel=0.1)
    assert res_loose[0]["inv_step"] == 500
    assert res_loose[1]["assoc_lead"] == pytest.approx(100)


def test_no_algebra_columns_gives_empty_rows():
    df = pd.DataFrame({"seed": [0, 0], "step": [0, 100], "val_acc": [0.0, 1.0]})
    assert axiom_emergence(df, {0: 100}) == {0: {}}
