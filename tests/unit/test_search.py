"""Search in its own module: distributions validate themselves and make their Tune samplers;
retries are decided by the type of Ray's exception; progress lines name the swept values."""

from __future__ import annotations

import io
import pickle

import pytest

from grokray.sweep.search import (
    Choice,
    LogUniform,
    QUniform,
    RandInt,
    Uniform,
    parse_distribution,
)


@pytest.mark.parametrize("value,expected", [
    ({"uniform": [0.1, 0.5]}, Uniform(0.1, 0.5)),
    ({"loguniform": [1e-4, 1e-2]}, LogUniform(1e-4, 1e-2)),
    ({"randint": [2, 9]}, RandInt(2, 9)),
    ({"quniform": [0, 1, 0.25]}, QUniform(0.0, 1.0, 0.25)),
    ({"choice": [16, 32]}, Choice((16, 32))),
])
def test_parse(value, expected):
    assert parse_distribution(value) == expected


@pytest.mark.parametrize("value,fragment", [
    ({"normal": [0, 1]}, "unknown distribution"),
    ({"uniform": [1, 0]}, "low must be < high"),
    ({"uniform": [0, float("inf")]}, "expected [low, high]"),
    ({"uniform": [0, True]}, "expected [low, high]"),
    ({"loguniform": [0, 1]}, "low > 0"),
    ({"randint": [0.5, 3]}, "needs ints"),
    ({"quniform": [0, 1]}, "expected [low, high, q]"),
    ({"quniform": [0, 1, -1]}, "q must be > 0"),
    ({"choice": []}, "non-empty list"),
    ({"choice": [1, 1]}, "duplicate choices"),
    ({"choice": [[1], [2]]}, "must be scalars"),
    ({"uniform": [0, 1], "choice": [1]}, "expected one"),
    ("uniform", "expected one"),
])
def test_each_distribution_refuses_bad_arguments(value, fragment):
    with pytest.raises(ValueError) as e:
        parse_distribution(value)
    assert fragment in str(e.value) and len(str(e.value).splitlines()) == 1


def test_to_tune_samplers_sample_inside_their_bounds():
    pytest.importorskip("ray")
    for dist in (Uniform(0.1, 0.5), LogUniform(1e-4, 1e-2), RandInt(2, 9),
                 QUniform(0.0, 1.0, 0.25), Choice((16, 32))):
        sampler = dist.to_tune()
        xs = [sampler.sample() for _ in range(50)]
        if isinstance(dist, Choice):
            assert set(xs) <= {16, 32}
        elif isinstance(dist, QUniform):
            assert all(0 <= x <= 1 and abs(x / 0.25 - round(x / 0.25)) < 1e-9 for x in xs)
        else:
            hi = dist.high if not isinstance(dist, RandInt) else dist.high - 1
            assert all(dist.low <= x <= hi for x in xs)


def test_retry_decided_by_exception_type():
    ray = pytest.importorskip("ray")
    from ray import exceptions as rx

    from grokray.sweep.executors.retry import worker_lost

    task_err = rx.RayTaskError("fn", "tb", ImportError("no module named foo"))
    assert not worker_lost(task_err)
    assert not worker_lost(rx.ActorDiedError(task_err))  # its creation raised
    assert worker_lost(rx.ActorDiedError())  # died of a system error
    assert worker_lost(rx.WorkerCrashedError())
    assert worker_lost(rx.NodeDiedError("node gone"))
    assert worker_lost(None)  # nothing known: a lost worker
    # the text does not matter: a lost node whose message mentions ImportError is retried
    assert worker_lost(rx.NodeDiedError("ModuleNotFoundError: ImportError"))
    assert ray  # imported


def test_local_executor_refuses_a_search():
    from grokray.errors import GrokrayError
    from grokray.sweep.executors.local import LocalExecutor
    from grokray.sweep.search import SearchRun, SearchSpec

    with pytest.raises(GrokrayError, match="a search runs on Ray only"):
        LocalExecutor().run_search(SearchRun(SearchSpec({}, "grok_step", "min", 1), None, (), 1),
                                   None)


def test_progress_line_names_the_swept_values():
    from grokray.config import TrialConfig
    from grokray.result import SeedResult
    from grokray.sweep.outcome import Outcome
    from grokray.sweep.progress import Display

    cfg = TrialConfig().with_overrides({"group": "S3", "arch": "forge", "optim.lr": 0.003})
    out = io.StringIO()
    d = Display(2, 100, live=False, stream=out, keys=["group", "arch", "optim.lr"])

    class R:
        seeds = [SeedResult(seed=0, data_seed=0, status="grokked")]

    d.finished(Outcome(cfg, None, wall_s=1.0), R())
    line = out.getvalue()
    assert line.startswith(f"[1/2] group=S3 arch=forge optim.lr=0.003 ({cfg.config_hash()}): ")
    assert "1/1 grokked" in line
    assert pickle.dumps(cfg)  # configs stay picklable (the executors ship them)
