import math

import pytest

from grokray.config import OptimConfig
from grokray.models.forge import ForgeConfig
from grokray.optim.schedules import lambda_alg, lr_at


@pytest.mark.parametrize("kind,t,expect", [
    ("linear", 0, 2.0), ("linear", 250, 1.0), ("linear", 500, 0.0), ("linear", 900, 0.0),
    ("constant", 900, 2.0), ("off", 0, 0.0), ("step", 499, 2.0), ("step", 500, 0.0),
    ("cosine", 0, 2.0), ("cosine", 250, 1.0), ("cosine", 600, 0.0),
])
def test_lambda_schedules(kind, t, expect):
    f = ForgeConfig(lambda_alg=2.0, lambda_schedule=kind, lambda_end=0.5)
    assert lambda_alg(t, f, 1000) == pytest.approx(expect, abs=1e-12)


def test_lr_warmup_and_schedules():
    o = OptimConfig(lr=1.0, warmup_steps=10)
    assert lr_at(0, o, 100) == pytest.approx(0.1)
    assert lr_at(9, o, 100) == pytest.approx(1.0)
    assert lr_at(50, o, 100) == 1.0
    c = OptimConfig(lr=1.0, lr_schedule="cosine")
    assert lr_at(50, c, 100) == pytest.approx(0.5 * (1 + math.cos(math.pi * 0.5)))
    lin = OptimConfig(lr=1.0, lr_schedule="linear")
    assert lr_at(25, lin, 100) == pytest.approx(0.75)
