"""The thread rule (grokray/threads.py): a trial trains on floor(resources.cpu) torch threads, at
least 1, set around each worker call (`calls.run_call`) on every executor, the caller's count
restored after."""

import pytest
import torch

from grokray.config import TrialConfig
from grokray.sweep.executors.calls import WorkerCall, run_call
from grokray.sweep.executors.local import LocalExecutor
from grokray.threads import torch_threads, trial_threads


@pytest.mark.parametrize(("cpu", "threads"), [
    (0.25, 1), (0.5, 1), (0.999, 1), (1, 1), (1.0, 1), (1.5, 1), (2, 2), (2.5, 2), (3.99, 3),
    (16, 16),
])
def test_a_trial_holding_cpu_trains_on_its_floor_at_least_one(cpu, threads):
    assert trial_threads(cpu) == threads


def test_torch_threads_sets_the_count_inside_and_restores_it_after_an_error():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        with pytest.raises(RuntimeError, match="inside"), torch_threads(3):
            assert torch.get_num_threads() == 3
            raise RuntimeError("inside")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def _cfg(lr: float) -> TrialConfig:
    return TrialConfig.from_dict({"group": "Z5", "steps": 1, "eval_every": 1, "seeds": [0],
                                  "device": "cpu", "optim.lr": lr})


@pytest.mark.parametrize("cpu", [0.5, 1, 3])
def test_a_call_trains_on_the_rules_threads_and_gives_the_callers_back(cpu):
    seen: list[int] = []

    def fn(cfg: TrialConfig) -> None:
        seen.append(torch.get_num_threads())
        raise RuntimeError("no result")  # a failed trial: the count is still restored

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        outs = run_call(WorkerCall([_cfg(1e-3), _cfg(2e-3)]), fn, node="n", cpu=cpu)
        assert seen == [trial_threads(cpu)] * 2 and [o.error for o in outs] == \
            ["RuntimeError: no result"] * 2
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_in_process_executor_runs_each_trial_on_its_resources_cpu(tmp_path):
    seen: list[int] = []

    def fn(cfg: TrialConfig) -> None:
        seen.append(torch.get_num_threads())
        raise RuntimeError("no result")

    class Sink:
        def started(self, config: TrialConfig) -> None:
            pass

        def finished(self, outcome) -> None:  # noqa: ANN001 - an Outcome
            pass

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        LocalExecutor(fn).run([_cfg(1e-3)], Sink())  # resources.cpu 1, the default
        LocalExecutor(fn, cpu=3.5).run([_cfg(1e-3)], Sink())
        assert seen == [1, 3] and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_the_factory_hands_the_specs_cpu_to_the_in_process_executor(tmp_path):
    from grokray.sweep.executors.factory import make_executor
    from grokray.sweep.spec import load_spec

    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nout: {tmp_path / 'out'}\nresources: {{cpu: 2.5}}\n"
                    "config: {group: Z5, steps: 1}\n")
    executor = make_executor(load_spec(str(path)), "r1", None)
    assert isinstance(executor, LocalExecutor) and executor.cpu == 2.5
