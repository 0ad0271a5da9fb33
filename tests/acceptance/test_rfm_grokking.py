"""Paper claim (section 3 of papers.md): RFM groks modular addition without a neural network.

p = 61, add, train fraction 0.5, gaussian kernel (L = 2.5), ridge 0, centered AGOP, s = 1/2:
- test accuracy reaches 100% within 25 iterations (the paper: about 12), train accuracy is 100%
  throughout;
- before that, a stretch of iterations with test accuracy near chance while the circulant
  deviation of the off-diagonal block of M already falls (a hidden progress measure), and the
  AGOP alignment with the final M rises;
- random circulant features (no learning) generalize at iteration 0.
Runs through `run_trial` with a TrialConfig, i.e. the path a sweep takes. About a minute on an
idle 2-core CPU.
"""

import pytest

from grokray.config import TrialConfig
from grokray.trial import run_trial

pytestmark = pytest.mark.slow

P = 61


def _cfg(**rfm):
    return TrialConfig.from_dict({
        "group": f"Z{P}", "op": "add", "arch": "rfm", "train_frac": 0.5, "seeds": [0],
        "device": "cpu", "rfm": {"kernel": "gaussian", "bandwidth": 2.5, "ridge": 0.0,
                                 "centering": True, "power": 0.5, **rfm},
    })


def test_rfm_groks_modular_addition_with_hidden_progress():
    res = run_trial(_cfg(iters=25))
    c = res.curves.set_index("step")
    assert (c.train_acc == 1.0).all()
    full = c.index[c.val_acc >= 1.0]
    assert len(full) > 0 and full.min() <= 25, c.val_acc.round(4).to_dict()
    # a stretch near chance (1/61 ~ 0.016) ...
    chance = c.index[c.val_acc <= 2.0 / P]
    stretch = [t for t in range(0, int(full.min())) if t in chance]
    assert len(stretch) >= 5 and stretch == list(range(len(stretch)))
    # ... while the circulant deviation already falls (M_0 = I has no off-diagonal block: NaN)
    dev = c.metric_circulant_dev.loc[1: stretch[-1]].to_numpy()
    assert (dev[1:] < dev[:-1]).all()
    assert dev[-1] < 0.5 * dev[0]
    assert c.metric_circulant_dev.iloc[-1] < 0.1 * dev[0]
    # the AGOP alignment with the final M rises to 1
    align = c.metric_agop_align.to_numpy()
    assert align[-1] == pytest.approx(1.0)
    assert align[stretch[-1]] > align[0]
    seed = res.seeds[0]
    assert seed.status == "grokked" and seed.grok_step <= 25
    assert seed.artifacts["M"].shape == (2 * P, 2 * P)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_random_circulant_features_generalize_at_iteration_zero(op):
    cfg = _cfg(baseline="random_circulant").with_overrides({"op": op})
    res = run_trial(cfg)
    c = res.curves
    assert list(c.step) == [0]
    assert float(c.val_acc.iloc[0]) == 1.0
    assert res.seeds[0].status == "grokked" and res.seeds[0].grok_step == 0
