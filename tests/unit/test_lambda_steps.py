"""`forge.lambda_steps`: lambda_alg's decay ending at a fixed step, independent of the budget.
The field enters a config's identity only when set, so every config written without it keeps
its config_hash (pinned here as they were before the field existed)."""

from __future__ import annotations

import numpy as np
import pytest

from grokray.config import TrialConfig
from grokray.cost.work import algebra_steps
from grokray.models.forge import ForgeConfig
from grokray.optim.schedules import lambda_alg

PINNED = [  # config_hash of each before forge.lambda_steps existed
    ({"arch": "forge"}, "547a9f03e4fdc477"),
    ({"arch": "forge", "group": "S5", "train_frac": 0.5, "steps": 4000, "eval_every": 50},
     "21b26735a688cc2a"),
    ({"arch": "forge", "forge.lambda_schedule": "constant"}, "8ae4e573623174e4"),
    ({"arch": "mlp", "model.matched_budget": True, "group": "A4"}, "912ce5d3412f6aa0"),
    ({"arch": "mlp"}, "82d0c11f10adfeec"),
]


@pytest.mark.parametrize(("over", "h"), PINNED)
def test_configs_without_the_field_keep_their_hash(over, h):
    cfg = TrialConfig().with_overrides(over)
    assert cfg.config_hash() == h
    assert "lambda_steps" not in cfg.canonical_json()


def test_the_identity_reads_lambda_steps_and_not_lambda_end_once_set():
    cfg = TrialConfig().with_overrides({"arch": "forge", "forge.lambda_steps": 2000})
    forge = cfg.canonical()["forge"]
    assert forge["lambda_steps"] == 2000 and "lambda_end" not in forge
    assert cfg.config_hash() != TrialConfig().with_overrides({"arch": "forge"}).config_hash()
    # lambda_end is not read: one effective config, one hash
    assert cfg.with_overrides({"forge.lambda_end": 0.3}).config_hash() == cfg.config_hash()
    assert cfg.with_overrides({"forge.lambda_steps": 1000}).config_hash() != cfg.config_hash()
    matched = cfg.with_overrides({"arch": "mlp", "model.matched_budget": True})
    assert matched.canonical()["forge"]["lambda_steps"] == 2000
    again = TrialConfig.from_dict(cfg.to_dict())
    assert again.config_hash() == cfg.config_hash()


def test_a_fixed_decay_does_not_depend_on_the_budget():
    fixed = ForgeConfig(lambda_alg=0.03, lambda_schedule="linear", lambda_steps=2000)
    a = [lambda_alg(t, fixed, 4000) for t in range(0, 4000, 7)]
    b = [lambda_alg(t, fixed, 12000) for t in range(0, 4000, 7)]
    assert a == b
    assert lambda_alg(1000, fixed, 12000) == pytest.approx(0.015)
    assert lambda_alg(2000, fixed, 12000) == 0.0
    # equal to the budget-tied default at the budget where both end at step 2,000
    tied = ForgeConfig(lambda_alg=0.03, lambda_schedule="linear", lambda_end=0.5)
    assert [lambda_alg(t, tied, 4000) for t in range(0, 4000, 7)] == a
    assert lambda_alg(1000, tied, 12000) == pytest.approx(0.025)  # tied: 1/6 of its decay
    for kind, t, expect in (("step", 1999, 0.03), ("step", 2000, 0.0),
                            ("cosine", 1000, 0.015), ("constant", 3000, 0.03)):
        f = ForgeConfig(lambda_alg=0.03, lambda_schedule=kind, lambda_steps=2000)
        assert lambda_alg(t, f, 9000) == pytest.approx(expect, abs=1e-15)


def test_the_cost_model_counts_the_algebra_steps_of_a_fixed_decay():
    cfg = TrialConfig().with_overrides({"arch": "forge", "steps": 12000,
                                        "forge.lambda_steps": 2000})
    assert algebra_steps(cfg) == 2000
    assert algebra_steps(cfg.with_overrides({"steps": 1500})) == 1500
    assert algebra_steps(cfg.with_overrides({"forge.lambda_steps": None})) == 6000


def test_bad_lambda_steps_is_one_clear_error():
    from grokray.errors import ConfigError

    with pytest.raises(ConfigError, match="forge.lambda_steps must be > 0 or null"):
        TrialConfig().with_overrides({"arch": "forge", "forge.lambda_steps": 0})


def test_training_with_lambda_steps_equals_the_tied_schedule_where_they_agree():
    # float64: lambda_end 0.5 of 60 steps and lambda_steps 30 are the same schedule, the same
    # numbers
    from grokray.trial import run_trial

    base = {"group": "S3", "arch": "forge", "steps": 60, "eval_every": 10, "seeds": [0],
            "dtype": "float64", "device": "cpu", "train_frac": 0.5, "model.d": 8,
            "model.rank": 8, "forge.lambda_alg": 0.3}
    tied = run_trial(TrialConfig().with_overrides(base))
    fixed = run_trial(TrialConfig().with_overrides({**base, "forge.lambda_steps": 30}))
    cols = ["step", "train_loss", "val_loss", "val_acc", "lambda_alg"]
    a, b = tied.curves[cols], fixed.curves[cols]
    assert len(a) == 7 and np.isfinite(a.to_numpy(float)).all()
    assert a.to_numpy(float).tolist() == b.to_numpy(float).tolist()
    assert a["lambda_alg"].iloc[-1] == 0.0 and a["lambda_alg"].iloc[0] == 0.3
