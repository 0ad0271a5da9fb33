"""The executors package (grokray.sweep.executors; that its interface imports none of its
executors is an import contract in pyproject.toml): the retry loop (`CallQueue`) that the warm
and the Tune executors drive, the one place pack sizes are decided (`packing.packs`) as the
in-process executor uses it, and what a worker does with one call (`calls.run_call`)."""

import pytest

from grokray.config import TrialConfig
from grokray.sweep.executors.calls import WorkerCall, run_call
from grokray.sweep.executors.local import LocalExecutor
from grokray.sweep.executors.packing import packs
from grokray.sweep.executors.retry import CallQueue
from grokray.sweep.outcome import Outcome


def _cfg(group: str = "Z5", lr: float = 1e-3, arch: str = "mlp") -> TrialConfig:
    return TrialConfig.from_dict({"group": group, "arch": arch, "steps": 20, "eval_every": 10,
                                  "seeds": [0, 1], "device": "cpu", "optim.lr": lr})


class _Sink:
    def __init__(self) -> None:
        self.outcomes: list[Outcome] = []

    def started(self, config: TrialConfig) -> None:
        pass

    def finished(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)


def test_a_lost_call_runs_again_one_config_a_call_next_in_line_then_fails_named():
    a, b, c = _cfg(lr=1e-3), _cfg(lr=2e-3), _cfg(lr=3e-3)
    sink = _Sink()
    todo = CallQueue([WorkerCall([a, b], packed=True), WorkerCall([c])], retries=1, sink=sink)
    first = todo.next()
    assert first.configs == [a, b] and len(todo) == 1
    todo.lost(first, None, "worker died\nSIGKILL")  # no exception object: a lost worker
    assert len(todo) == 3 and not sink.outcomes
    again = todo.next()
    assert again == WorkerCall([a]) and not again.packed  # split, next in line, unpacked
    todo.lost(again, None, "SIGKILL")  # a's first retry: within `retries`
    assert todo.next() == WorkerCall([a])
    todo.lost(WorkerCall([a]), None, "SIGKILL")  # a's third call lost: it fails
    assert [o.config for o in sink.outcomes] == [a]
    assert sink.outcomes[0].error == "lost after 2 tries: SIGKILL"
    assert todo.take_all() == [WorkerCall([b]), WorkerCall([c])] and len(todo) == 0


def test_a_call_ray_could_not_set_up_fails_at_once():
    a, b = _cfg(lr=1e-3), _cfg(lr=2e-3)
    sink = _Sink()
    todo = CallQueue([WorkerCall([a, b])], retries=3, sink=sink)
    todo.lost(todo.next(), ValueError("cannot unpickle the trial function"))
    assert len(todo) == 0
    assert [(o.config, o.error) for o in sink.outcomes] == \
        [(a, "ValueError: cannot unpickle the trial function"),
         (b, "ValueError: cannot unpickle the trial function")]


def test_the_in_process_executor_packs_in_grid_order_through_the_one_rule():
    grid = [_cfg("S3", 1e-3), _cfg("Z5", 1e-3), _cfg("S3", 2e-3), _cfg("Z5", 2e-3),
            _cfg("S3", 3e-3)]
    assert packs(grid, 1, 2, 0.0) == [[0, 2], [1, 3], [4]]
    calls = LocalExecutor(pack=2).calls(grid)
    assert [(c.configs, c.packed) for c in calls] == \
        [([grid[0], grid[2]], True), ([grid[1], grid[3]], True), ([grid[4]], False)]
    assert [c.configs for c in LocalExecutor().calls(grid)] == [[g] for g in grid]  # off
    own = LocalExecutor(trial_fn=lambda c: None, pack=2).calls(grid)  # a trial fn never packs
    assert [c.configs for c in own] == [[g] for g in grid]


def test_a_worker_runs_a_call_in_order_and_stamps_its_node():
    seen: list[float] = []

    def fn(cfg: TrialConfig):
        seen.append(cfg.optim.lr)
        raise RuntimeError(f"boom {cfg.optim.lr}")

    cfgs = [_cfg(lr=3e-3), _cfg(lr=1e-3)]
    outs = run_call(WorkerCall(cfgs, packed=True), fn, node="n1", cpu=1)  # own fn: in turn
    assert seen == [3e-3, 1e-3]
    assert [(o.config, o.node_id, o.error) for o in outs] == \
        [(cfgs[0], "n1", "RuntimeError: boom 0.003"), (cfgs[1], "n1", "RuntimeError: boom 0.001")]


def test_a_packed_call_gives_each_config_its_own_result():
    import ray

    cfgs = [_cfg("Z5", 1e-3), _cfg("Z5", 3e-3)]
    connected = ray.is_initialized()
    packed = run_call(WorkerCall(cfgs, packed=True), None, node="n", cpu=1)
    alone = run_call(WorkerCall(cfgs), None, node="n", cpu=1)
    # outside a Ray worker the trials find no checkpoint actor, and no Ray is started to look
    assert ray.is_initialized() == connected
    assert [o.config for o in packed] == cfgs and all(o.error is None for o in packed)
    for p, a in zip(packed, alone, strict=True):  # one stack vs alone: float32 rounding apart
        for sp, sa in zip(p.result.seeds, a.result.seeds, strict=True):
            assert sp.seed == sa.seed and sp.final == pytest.approx(sa.final, rel=1e-5)
