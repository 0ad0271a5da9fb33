"""The Tune executor: runs configs and searches as Ray Tune trials, on any Ray (a joined cluster:
autoscaling, nodes that come and go; Optuna searches on any Ray).

Set up for many short trials: actors are reused between trials, Tune's per-trial loggers and
console reporter are off (`session.TUNE_ENV`), a trial reports once, at its end, with its
outcomes (pickled) in that report, dropped from Tune's state once the sink has them. A Tune
trial is one worker call (`calls.worker_calls`): tiny configs share one (Tune costs about 0.1 s
per trial on a 2-core machine, more than a tiny trial itself, benchmarks/bench_sweep_overhead.py),
and with `pack` a pack of configs of one shape is one, trained as one stack in its worker
(`calls.run_call`); each config's outcome still goes to the sink once. Tune does not retry a
trial itself: the trials whose worker was lost go through the retry loop (`retry.CallQueue`)
and what it runs again goes into a fresh `Tuner.fit`, on fresh actors (a retry inside the same
fit can land on a cached actor of the node that just died).
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

from grokray.config import TrialConfig
from grokray.sweep.executors.base import Sink
from grokray.sweep.executors.calls import WorkerCall, run_call, worker_calls
from grokray.sweep.executors.retry import CallQueue
from grokray.sweep.outcome import TrialFn, isnan, outcome_summary
from grokray.sweep.search import SearchRun, tune_setup, unsafe_key
from grokray.sweep.session import RaySession

Lost = tuple[WorkerCall, BaseException | None, str]
"""a Tune trial whose call failed: its call, Ray's exception (None when it cannot be
unpickled), Ray's error text"""


class TuneExecutor:
    """Runs trials as Ray Tune trials of the experiment `name` on `session`'s Ray."""

    def __init__(self, session: RaySession, *, name: str, storage_path: str, cpu: float = 1.0,
                 gpu: float = 0.0, concurrency: int | None = None, retries: int = 2,
                 trial_fn: TrialFn | None = None, pack: int | None = 1):
        self.session = session
        self.name = name
        """Tune experiment name"""
        self.storage_path = storage_path
        """where Tune keeps its experiment state (not the results)"""
        self.cpu, self.gpu = cpu, gpu
        self.concurrency = concurrency
        self.retries = retries
        self.trial_fn = trial_fn
        self.pack = pack
        """configs per pack (1: off; None: auto, `packing.packs`)"""

    def run(self, configs: Sequence[TrialConfig], sink: Sink) -> None:
        """Run every config (blocking), a worker call a trial (tiny ones several to a call, or
        a pack of configs of one shape: `pack`); report each config to `sink`."""
        if not configs:
            return
        calls = worker_calls(list(configs), self.session.slots(self.cpu, self.concurrency),
                             self.pack, self.gpu, packable=self.trial_fn is None)
        self._rounds(calls, None, sink)

    def run_search(self, search: SearchRun, sink: Sink) -> None:
        """Sample and run `search.num_samples` configs (blocking), reporting each to `sink`."""
        if search.num_samples >= 1:
            self._rounds([], search, sink)

    def _rounds(self, calls: list[WorkerCall], search: SearchRun | None, sink: Sink) -> None:
        """Fit the search (if any) or the calls, then again what the retry loop reruns (one
        config a trial)."""
        self.session.check_resources(self.cpu, self.gpu)
        self.session.warm.release()  # warm workers of an earlier sweep hold the CPUs Tune needs
        todo = CallQueue(calls, self.retries, sink)
        while todo or search is not None:
            lost = self._fit(todo.take_all(), search, sink)
            search = None
            for call, exc, text in lost:
                todo.lost(call, exc, text)

    def _fit(self, calls: Sequence[WorkerCall], search: SearchRun | None,
             sink: Sink) -> list[Lost]:
        """One Tuner.fit over `calls` (or `search`), one trial each; the trials whose call
        failed."""
        from ray import tune  # only on a Ray session: --local and dry runs load no Ray

        dicts = [c.to_dict() for call in calls for c in call.configs]
        index, k = [], 0
        for call in calls:
            index.append(list(range(k, k + len(call.configs))))
            k += len(call.configs)
        collector = _make_collector(sink, calls)
        # the configs travel once through the object store; a trial's params hold its call's
        # index (a grid over the config dicts themselves costs Tune O(n^2) deep copies)
        trainable = tune.with_resources(
            tune.with_parameters(_tune_trainable, configs=dicts, trial_fn=self.trial_fn,
                                 calls=index, packed=[c.packed for c in calls], cpu=self.cpu),
            {"cpu": self.cpu, "gpu": self.gpu},
        )
        names = dict(trial_dirname_creator=_dirname, trial_name_creator=_dirname,
                     reuse_actors=True)
        if search is None:
            param_space = {"call": tune.grid_search(list(range(len(index))))}
            tune_config = tune.TuneConfig(num_samples=1, max_concurrent_trials=self.concurrency,
                                          **names)
        else:
            param_space, tune_config = tune_setup(search, self.concurrency, **names)
        tuner = tune.Tuner(
            trainable,
            param_space=param_space,
            tune_config=tune_config,
            run_config=tune.RunConfig(
                name=self.name,
                storage_path=self.storage_path,
                verbose=0,
                # a trial reports once, at its end: stop it right there rather than wait for
                # Tune to poll the finished function thread (0.2 s per trial)
                stop={"training_iteration": 1},
                callbacks=[collector],
                failure_config=tune.FailureConfig(max_failures=0),  # retries: `_rounds`
                checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=False),
            ),
        )
        try:
            tuner.fit()
        except Exception:
            if collector.failure is None:
                raise
        if collector.failure is not None:  # the writer's error (a full disk), not Tune's wrap
            raise collector.failure
        return collector.lost


def config_of(params: dict[str, Any]) -> TrialConfig:
    """The TrialConfig of a search trial's params: `config` with the sampled values."""
    cfg = TrialConfig.from_dict(params["config"])
    search = {k: v for k, v in params.items() if k != "config"}
    if search:
        cfg = cfg.with_overrides({unsafe_key(k): _plain(v) for k, v in search.items()})
    return cfg


def _plain(v: Any) -> Any:
    """numpy scalars (from samplers) -> Python scalars."""
    return v.item() if hasattr(v, "item") else v


def configs_of(params: dict[str, Any], configs: Sequence[dict[str, Any]] = (),
               calls: Sequence[Sequence[int]] = ()) -> list[TrialConfig]:
    """The configs a Tune trial runs: its call's (indices into `configs`), or a search's one."""
    if "call" in params:
        return [TrialConfig.from_dict(configs[i]) for i in calls[params["call"]]]
    return [config_of(params)]


def _tune_trainable(
    params: dict[str, Any], configs: Sequence[dict[str, Any]] = (),
    trial_fn: TrialFn | None = None, calls: Sequence[Sequence[int]] = (),
    packed: Sequence[bool] = (), cpu: float = 1.0,
) -> None:
    """The function Tune runs for a trial: its worker call (`calls.run_call`, on the threads of
    a trial holding `cpu` CPUs; a pack when `packed[call]`), one final report carrying every
    outcome and the first one's summary (what a search optimizes)."""
    import ray  # in a Tune trial's worker process, where Ray is up
    from ray import tune

    call = WorkerCall(configs_of(params, configs, calls),
                      packed="call" in params and bool(packed) and packed[params["call"]])
    outs = run_call(call, trial_fn, ray.get_runtime_context().get_node_id(), cpu=cpu,
                    log=True)
    metrics = {k: (v if not isnan(v) else float("nan")) for k, v in
               outcome_summary(outs[0]).items()}
    tune.report({**metrics, "failed": outs[0].error is not None, "payload": pickle.dumps(outs)})


def _dirname(trial: Any) -> str:
    return f"trial_{trial.trial_id}"


def _make_collector(sink: Sink, calls: Sequence[WorkerCall] = ()) -> Any:
    """A Tune callback that forwards trial events to the sink, on the driver."""
    cls = globals().get("_Collector") or _collector_class()
    return cls(sink, calls)


def _collector_class() -> type:
    """Defined on first use (it subclasses tune.Callback) and kept as a module attribute, so
    that Tune's pickling of its run config finds it by reference."""
    from ray import tune  # as in _fit

    class _Collector(tune.Callback):
        def __init__(self, sink: Sink, calls: Sequence[WorkerCall] = ()) -> None:
            self.reported: set[str] = set()
            self.sink: Sink | None = sink
            self.calls = calls
            self.lost: list[Lost] = []
            """trials whose call failed (worker or node lost, or never set up)"""
            self.failure: BaseException | None = None
            """what the sink raised (e.g. DiskFullError): Tune wraps an error raised in a
            callback in a TuneError, or not, as its controller's timing has it; `_fit` raises
            this one"""

        def __getstate__(self) -> dict:  # Tune pickles its run config: leave the sink out
            return {"reported": set(self.reported)}

        def __setstate__(self, state: dict) -> None:
            self.reported, self.sink, self.calls = state["reported"], None, ()
            self.lost, self.failure = [], None

        def _call(self, trial: Any) -> WorkerCall:
            params = trial.config
            return self.calls[params["call"]] if "call" in params else \
                WorkerCall([config_of(params)])

        def on_trial_start(self, iteration, trials, trial, **info):  # noqa: ANN001
            if self.sink is not None:
                for cfg in self._call(trial).configs:
                    self.sink.started(cfg)

        def on_trial_result(self, iteration, trials, trial, result, **info):  # noqa: ANN001
            payload = result.pop("payload", None)  # keep the payload out of Tune's state
            if payload is None or trial.trial_id in self.reported or self.sink is None:
                return
            self.reported.add(trial.trial_id)
            try:
                for out in pickle.loads(payload):
                    self.sink.finished(out)
            except Exception as exc:
                self.failure = self.failure or exc
                raise

        def on_trial_error(self, iteration, trials, trial, **info):  # noqa: ANN001
            if trial.trial_id in self.reported or self.sink is None:
                return
            self.reported.add(trial.trial_id)
            try:
                exc = trial.get_pickled_error()
            except Exception:  # noqa: BLE001 - an error that cannot be unpickled: unknown
                exc = None
            err = trial.get_error() or "trial failed"
            text = err if isinstance(err, str) else str(err)
            self.lost.append((self._call(trial), exc, text))

    _Collector.__module__ = __name__
    globals()["_Collector"] = _Collector
    return _Collector

