"""The sweep service: a sweep spec (YAML) in, one Parquet row per (config, seed) out.

    driver.py          the sweep driver (`SweepDriver`): lock, plan, run, a graceful stop, the
                       outcome and its exit code; events.py: the progress events it sends
    spec.py            a YAML spec read and validated (`load_spec`); spec_model.py: the
                       `SweepSpec` value and its configs (pure)
    search.py          an Optuna search's distributions and its Ray Tune set-up
    plan.py            what a run will do: what is missing (`make_plan`), plan.json;
                       describe.py: the plan described (the dry run's text and JSON)
    writer.py          the one writer of results (`Writer`) and `run_plan`, which feeds it
    store.py           the Parquet files of a sweep dir (write once, repair, read)
    lock.py            one writer per sweep dir (`WriterLock`)
    session.py         where Ray is started: `RaySession` (join or embed Ray; warm workers)
    executors/         what runs the trials: the `Executor` interface (base.py),
                       `make_executor` (factory.py), local.py, warm.py, tune.py; the worker
                       call (calls.py), pack sizes (packing.py), the retry loop (retry.py)
    workers.py         the warm workers: Ray actors kept for the session
    pack_count.py      the packs of a grid counted from its axes (the dry run)
    outcome.py         what a trial gives back (`Outcome`) and its summary metrics
    progress.py        the progress display; interrupt.py: Ctrl-C and SIGTERM

Importing this package imports neither Ray nor torch: the names below load their module on
first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "RaySession": "session", "Executor": "executors.base", "Sink": "executors.base",
    "make_executor": "executors.factory", "LocalExecutor": "executors.local",
    "WarmExecutor": "executors.warm", "TuneExecutor": "executors.tune",
    "WorkerCall": "executors.calls", "worker_calls": "executors.calls",
    "run_call": "executors.calls", "longest_first": "executors.calls",
    "Retries": "executors.retry", "CallQueue": "executors.retry",
    "worker_lost": "executors.retry", "Outcome": "outcome", "trial_summary": "outcome",
    "Plan": "plan", "make_plan": "plan", "Writer": "writer", "run_plan": "writer",
    "WriterLock": "lock", "load_spec": "spec", "SweepSpec": "spec_model",
    "SweepDriver": "driver", "SweepOutcome": "events",
}
__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:  # noqa: ANN401 - PEP 562: load the module on first use
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    globals()[name] = value
    return value
