"""Issue 13 acceptance: FORGE groks across the scaling family, not only on the ablation groups.

Claim (FORGE paper: "all tested groups grok"): at the shipped defaults FORGE reaches val acc
>= 0.99 within 4,000 steps at train fraction 0.5 on every group of grokray.groups.SCALING_GROUPS
up to order 60. Before the default rank went from 64 to 256, F21 and Heis3 (faithful irreps
complex of degree 3: M_3(C), real rank bound 69 > 64) stayed at val acc 0.2-0.46; at 128 they
grokked in 9/10 and 8/10 seeds (docs/reproduction.md).
Here: 3 seeds per group, every seed must grok (the issue asks >= 90%). The claim is also checked
outside the family, 2 seeds each (10 when one of the 2 fails, then >= 9 must grok), at the same
defaults: `model.d`/`model.rank: auto` sizes FORGE from the group's smallest faithful real
Wedderburn sum (32/256 on the family; F42 36/568, F55 50/1,040; grokray.models.forge.auto_shape).

    pytest tests/acceptance/test_forge_groups.py --runslow -s
"""

import pytest
import torch

from grokray.config import TrialConfig
from grokray.groups import SCALING_GROUPS, get_group
from grokray.trial import run_trial

GROUPS = [g for g in SCALING_GROUPS if get_group(g).order <= 60]
OUTSIDE = ["Z2xZ4", "Q16", "F20", "D4xZ3", "F39", "F42", "F52", "F55", "F57", "D30", "Z60"]
"""groups of order <= 60 outside the family: abelian, dicyclic, products, every Frobenius
group pq up to 60 (M_4(R), M_3(C), M_6(R), M_5(C) faithful components)"""


def _grokked(steps):
    """Seeds that reached val acc >= 0.99 within the 4,000-step budget."""
    return sum(s is not None and s <= 4000 for s in steps)


def _grok_steps(group, seeds):
    torch.set_num_threads(1)
    cfg = TrialConfig.from_dict({"arch": "forge", "group": group, "steps": 4000,
                                 "eval_every": 50, "train_frac": 0.5, "seeds": seeds,
                                 "device": "cpu"})
    r = run_trial(cfg)
    steps = [s.grok_step for s in r.seeds]
    print(group, cfg.model.d, cfg.model.rank, steps,
          [round(s.final["final_val_acc"], 3) for s in r.seeds], flush=True)
    return steps


@pytest.mark.slow
@pytest.mark.parametrize("group", GROUPS)
def test_forge_groks_every_scaling_group_up_to_order_60(group):
    steps = _grok_steps(group, [0, 1, 2])
    assert _grokked(steps) == len(steps), (group, steps)


@pytest.mark.slow
@pytest.mark.parametrize("group", OUTSIDE)
def test_forge_groks_groups_outside_the_family(group):
    """Seeds 0, 1; when one of them does not grok, seeds 2-9 too, and the issue's bar decides:
    at least 9 of the 10 grok (F52 is such a group: seed 1 ends at val acc 0.982 at 4,000
    steps, seeds 0, 2-9 grok at 350-850: 9/10, docs/reproduction.md)."""
    steps = _grok_steps(group, [0, 1])
    if _grokked(steps) < 2:
        steps += _grok_steps(group, list(range(2, 10)))
        assert _grokked(steps) >= 9, (group, steps)


def test_the_family_up_to_order_60():
    assert all(get_group(g).order <= 60 and g not in SCALING_GROUPS for g in OUTSIDE)
    # the groups the claim covers (kept in step with grokray.groups.SCALING_GROUPS)
    assert GROUPS == ["S3", "D4", "Q8", "A4", "Dic3", "D6", "S3xZ3", "F21", "S4", "Heis3", "A5"]
