"""The sweep service: a sweep spec (YAML) in, one Parquet row per (config, seed) out.

    spec.py            the YAML spec -> validated `SweepSpec` and its configs (pure)
    search.py          an Optuna search's distributions and its Ray Tune set-up
    runner.py          what is missing (`make_plan`), the one writer (`Writer`), `run_plan`
    store.py           the Parquet files of a sweep dir (write once, repair, read)
    lock.py            one writer per sweep dir (`WriterLock`)
    session.py         where Ray is started: `RaySession` (join or embed Ray; warm workers)
    executor.py        the `Executor` interface and `make_executor`, which picks one of:
    local_executor.py    in this process, without Ray (--local, tests)
    warm_executor.py     a grid on the session's warm workers (embedded local Ray)
    tune_executor.py     a search or a joined cluster on Ray Tune
    workers.py         the warm workers: Ray actors kept for the session
    batch.py           where a batch of configs is run, in a Ray worker
    batching.py        which configs share one call, and in which order the calls go
    retry.py           where a lost worker is retried: one test of "lost", one retry policy
    outcome.py         what a trial gives back (`Outcome`) and its summary metrics
    progress.py        the progress display; interrupt.py: Ctrl-C and SIGTERM

Importing this package imports neither Ray nor torch: the names below load their module on
first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "RaySession": "session", "Executor": "executor", "Sink": "executor",
    "make_executor": "executor", "LocalExecutor": "local_executor",
    "WarmExecutor": "warm_executor", "TuneExecutor": "tune_executor", "run_batch": "batch",
    "tiny_batches": "batching", "longest_first": "batching", "Retries": "retry",
    "worker_lost": "retry", "Outcome": "outcome", "trial_summary": "outcome",
    "Plan": "runner", "Writer": "runner", "make_plan": "runner", "run_plan": "runner",
    "WriterLock": "lock", "load_spec": "spec", "SweepSpec": "spec",
}
__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:  # noqa: ANN401 - PEP 562: load the module on first use
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    globals()[name] = value
    return value
