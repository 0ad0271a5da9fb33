"""The Tune executor: runs configs and searches as Ray Tune trials, on any Ray (a joined cluster:
autoscaling, nodes that come and go; Optuna searches on any Ray).

Set up for many short trials: actors are reused between trials, Tune's per-trial loggers and
console reporter are off (`session.TUNE_ENV`), a trial reports once, at its end, with its
outcomes (pickled) in that report, dropped from Tune's state once the sink has them. Tiny
configs share one trial (`batching.tiny_batches`): Tune costs about 0.1 s per trial on a 2-core
machine, more than a tiny trial itself (benchmarks/bench_sweep_overhead.py). With `pack` a
Tune trial is one pack of configs of one shape (`batching.pack_batches`, as on warm workers),
trained as one stack in its worker (`batch.run_batch`); each config's outcome still goes to the
sink once, and a pack whose worker was lost runs again as one-config trials. Tune does not retry
a trial itself: the trials whose worker was lost go through the retry policy (`retry.Retries`)
and what it runs again goes into a fresh `Tuner.fit`, on fresh actors (a retry inside the same
fit can land on a cached actor of the node that just died).
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from grokray.config import TrialConfig
from grokray.sweep.batching import worker_calls
from grokray.sweep.outcome import TrialFn, isnan, outcome_summary
from grokray.sweep.retry import Retries
from grokray.sweep.search import SearchRun, tune_setup, unsafe_key
from grokray.sweep.session import RaySession

if TYPE_CHECKING:
    from grokray.sweep.executor import Sink


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
        """configs per pack (1: off; None: auto, `batching.pack_size` and `pack_limit`)"""

    def run(self, configs: Sequence[TrialConfig], sink: Sink) -> None:
        """Run every config (blocking), tiny ones several to a trial, or packs of configs of
        one shape a trial each (`pack`); report each config to `sink`."""
        if not configs:
            return
        configs = list(configs)
        batches, packs = worker_calls(configs, self.session.slots(self.cpu, self.concurrency),
                                      self.pack, self.gpu, packable=self.trial_fn is None)
        self._rounds([[configs[i] for i in b] for b in batches], None, sink, packs)

    def run_search(self, search: SearchRun, sink: Sink) -> None:
        """Sample and run `search.num_samples` configs (blocking), reporting each to `sink`."""
        if search.num_samples >= 1:
            self._rounds([], search, sink)

    def _rounds(self, batches: list[list[TrialConfig]], search: SearchRun | None,
                sink: Sink, packs: list[int] | None = None) -> None:
        """Fit the search (if any) or the batches (`packs`: configs per pack of each, 1 for a
        batch run one config after another), then again what the retry policy reruns (one
        config a trial)."""
        self.session.check_resources(self.cpu, self.gpu)
        self.session.warm.release()  # warm workers of an earlier sweep hold the CPUs Tune needs
        policy = Retries(self.retries)
        while batches or search is not None:
            lost = self._fit(batches, search, sink, packs or [1] * len(batches))
            batches, search, packs = [], None, None
            for configs, exc, text in lost:
                again, failed = policy.lost(configs, exc, text)
                batches += again
                for out in failed:
                    sink.finished(out)

    def _fit(self, batches: Sequence[Sequence[TrialConfig]], search: SearchRun | None,
             sink: Sink, packs: Sequence[int] = ()
             ) -> list[tuple[list[TrialConfig], BaseException | None, str]]:
        """One Tuner.fit over `batches` (or `search`), batch i packed `packs[i]` configs to a
        pack; the trials whose call failed: (configs, Ray's exception, Ray's error text)."""
        from ray import tune

        dicts = [c.to_dict() for b in batches for c in b]
        index, k = [], 0
        for b in batches:
            index.append(list(range(k, k + len(b))))
            k += len(b)
        collector = _make_collector(sink, dicts, index)
        # the configs travel once through the object store; a trial's params hold its batch
        # index (a grid over the config dicts themselves costs Tune O(n^2) deep copies)
        trainable = tune.with_resources(
            tune.with_parameters(_tune_trainable, configs=dicts, trial_fn=self.trial_fn,
                                 batches=index, packs=list(packs)),
            {"cpu": self.cpu, "gpu": self.gpu},
        )
        names = dict(trial_dirname_creator=_dirname, trial_name_creator=_dirname,
                     reuse_actors=True)
        if search is None:
            param_space = {"batch": tune.grid_search(list(range(len(index))))}
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
               batches: Sequence[Sequence[int]] = ()) -> list[TrialConfig]:
    """The configs a Tune trial runs: its batch (indices into `configs`), or a search's one."""
    if "batch" in params:
        return [TrialConfig.from_dict(configs[i]) for i in batches[params["batch"]]]
    return [config_of(params)]


def _tune_trainable(
    params: dict[str, Any], configs: Sequence[dict[str, Any]] = (),
    trial_fn: TrialFn | None = None, batches: Sequence[Sequence[int]] = (),
    packs: Sequence[int] = (),
) -> None:
    """The function Tune runs for a trial: its batch (`batch.run_batch`, packed `packs[batch]`
    configs to a pack), one final report carrying every outcome and the first one's summary
    (what a search optimizes)."""
    from ray import tune

    from grokray.sweep.batch import run_batch

    pack = packs[params["batch"]] if "batch" in params and packs else 1
    outs = run_batch(configs_of(params, configs, batches), trial_fn, pack)
    metrics = {k: (v if not isnan(v) else float("nan")) for k, v in
               outcome_summary(outs[0]).items()}
    tune.report({**metrics, "failed": outs[0].error is not None, "payload": pickle.dumps(outs)})


def _dirname(trial: Any) -> str:
    return f"trial_{trial.trial_id}"


def _make_collector(sink: Sink, configs: Sequence[dict[str, Any]] = (),
                    batches: Sequence[Sequence[int]] = ()) -> Any:
    """A Tune callback that forwards trial events to the sink, on the driver."""
    cls = globals().get("_Collector") or _collector_class()
    return cls(sink, configs, batches)


def _collector_class() -> type:
    """Defined on first use (it subclasses tune.Callback) and kept as a module attribute, so
    that Tune's pickling of its run config finds it by reference."""
    from ray import tune

    class _Collector(tune.Callback):
        def __init__(self, sink: Sink, configs: Sequence[dict[str, Any]],
                     batches: Sequence[Sequence[int]] = ()) -> None:
            self.reported: set[str] = set()
            self.sink: Sink | None = sink
            self.configs, self.batches = configs, batches
            self.lost: list[tuple[list[TrialConfig], BaseException | None, str]] = []
            """trials whose call failed (worker or node lost, or never set up)"""
            self.failure: BaseException | None = None
            """what the sink raised (e.g. DiskFullError): Tune wraps an error raised in a
            callback in a TuneError, or not, as its controller's timing has it; `_fit` raises
            this one"""

        def __getstate__(self) -> dict:  # Tune pickles its run config: leave the sink out
            return {"reported": set(self.reported)}

        def __setstate__(self, state: dict) -> None:
            self.reported, self.sink, self.configs = state["reported"], None, ()
            self.batches, self.lost, self.failure = (), [], None

        def _configs(self, trial: Any) -> list[TrialConfig]:
            return configs_of(trial.config, self.configs, self.batches)

        def on_trial_start(self, iteration, trials, trial, **info):  # noqa: ANN001
            if self.sink is not None:
                for cfg in self._configs(trial):
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
            self.lost.append((self._configs(trial), exc, text))

    _Collector.__module__ = __name__
    globals()["_Collector"] = _Collector
    return _Collector

