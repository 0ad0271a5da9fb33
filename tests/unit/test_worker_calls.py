"""Tiny configs share one worker call (grokray.sweep.executors.calls), longest calls first; a
Tune trial's params name its configs (grokray.sweep.executors.tune.configs_of)."""

from grokray.config import TrialConfig
from grokray.sweep.executors.calls import (
    CALL_PAIR_STEPS,
    MAX_TINY,
    TINY_PAIR_STEPS,
    TRIALS_PER_SLOT,
    WorkerCall,
    longest_first,
    tiny_calls,
)
from grokray.sweep.executors.tune import configs_of


def _cfg(group: str, steps: int, lr: float = 1e-3, seeds: int = 2) -> TrialConfig:
    return TrialConfig.from_dict({"group": group, "steps": steps, "seeds": list(range(seeds)),
                                  "optim.lr": lr})


def test_tiny_configs_share_calls_and_large_ones_are_alone():
    tiny = [_cfg("Z5", 2, 1e-3 * (1 + i)) for i in range(40)]
    big = [_cfg("Z97", 15000), _cfg("S5", 15000)]
    cfgs = tiny[:20] + big + tiny[20:]
    calls = tiny_calls(cfgs, slots=2)
    flat = sorted(i for c in calls for i in c)
    assert flat == list(range(len(cfgs)))  # every config exactly once
    assert [20] in calls and [21] in calls  # the large ones alone
    sizes = [len(c) for c in calls if c[0] not in (20, 21)]
    assert TRIALS_PER_SLOT == 2 and max(sizes) == 40 // (2 * 2) == 10  # 2 Tune trials a slot
    assert tiny_calls(cfgs, slots=1) and max(map(len, tiny_calls(cfgs, 1))) == MAX_TINY


def test_a_call_holds_at_most_its_pair_steps():
    # Z10, 1,000 steps, 4 seeds, train 0.5: 200,000 pair-steps, the largest tiny config
    cfgs = [_cfg("Z10", 1000, 1e-3 * (1 + i), seeds=4) for i in range(40)]
    calls = tiny_calls(cfgs, slots=1)
    assert sorted(i for c in calls for i in c) == list(range(40))
    assert CALL_PAIR_STEPS == 8 * TINY_PAIR_STEPS
    assert [len(c) for c in calls] == [8] * 5  # the budget, not MAX_TINY (16), decides


def test_few_tiny_configs_stay_alone_and_unknown_groups_share_no_call():
    cfgs = [_cfg("Z5", 2, 1e-3 * (1 + i)) for i in range(7)] + [_cfg("nosuchgroup", 2)]
    assert tiny_calls(cfgs, slots=2) == [[7]] + [[i] for i in range(7)]


def test_configs_of_a_call_and_of_one():
    dicts = [_cfg("Z5", 2, lr).to_dict() for lr in (1e-3, 2e-3, 3e-3)]
    got = configs_of({"call": 1}, dicts, [[0], [2, 1]])
    assert [c.optim.lr for c in got] == [3e-3, 2e-3]
    assert [c.optim.lr for c in configs_of({"config": dicts[1]}, dicts)] == [2e-3]
    sampled = configs_of({"config": dicts[1], "optim__lr": 5e-3})  # a search's sample
    assert [c.optim.lr for c in sampled] == [5e-3]


def test_longest_first_orders_by_estimated_work_and_keeps_grid_order_among_equals():
    # the scaling grid's order (small groups first) is the worst for 2 slots: S5 last, alone
    cfgs = [_cfg("S3", 4000), _cfg("D4", 4000), _cfg("S5", 4000), _cfg("A5", 4000),
            _cfg("A5", 4000, 2e-3), _cfg("nosuchgroup", 10)]
    order = longest_first([WorkerCall([c]) for c in cfgs])
    assert order == [5, 2, 3, 4, 1, 0]  # unknown size first, then S5 (120), A5 x2 in grid order
    calls = [WorkerCall(cfgs[0:2]), WorkerCall(cfgs[2:3]), WorkerCall(cfgs[3:5])]
    assert longest_first(calls) == [1, 2, 0]  # a call's work is its sum
