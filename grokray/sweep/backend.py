"""Where trials run: `RayBackend` (Ray Tune) and `LocalBackend` (in this process), one interface.

This module and `grokray.sweep.pool` (warm trial workers) are the only ones of grokray that
import Ray (lazily, inside `RayBackend` and the pool's functions).

Both backends take a list of `TrialConfig` (each with the seeds still to run), call `sink.started`
when a trial starts and `sink.finished(outcome)` when it ends, on the driver, in this process.
The sink is the one writer of results. A trial is `trial_fn(config)` (default:
`grokray.trainer.run_trial`, which trains all of the config's seeds at once); an exception in it
becomes an `Outcome` with `error` set (the sweep goes on). On Ray, a lost worker process or node
is retried (`FailureConfig(max_failures=retries)`); when the retries are spent the outcome holds
Ray's error.

On an embedded local Ray (`make_backend` without an address) a grid runs on warm trial
workers, plain Ray actors kept for the Ray session (`grokray.sweep.pool`): no Tune experiment
per sweep, and no fresh worker processes importing torch for each sweep of a `grokray
reproduce`. Searches and joined clusters run on Ray Tune, set up for many short trials: actors
are reused between trials, Tune's per-trial loggers (JSON/CSV/TensorBoard) and its console
reporter are off, worker output goes to Ray's log files only, and a trial's result (pickled
`TrialResult`) travels back in its final `tune.report` and is dropped from Tune's state once the
sink has it. Tiny configs (see `tiny_batches`) share one Tune trial (or one call of a warm
worker), several in a row: Tune costs about 0.1 s per trial on a 2-core machine, more than a
tiny trial itself (benchmarks/bench_sweep_overhead.py). The sink's Parquet writes run on its own
thread (`runner.Writer`), so the backend's event loop returns at once.
"""

from __future__ import annotations

import math
import os
import pickle
from collections.abc import Sequence
from typing import Any, Protocol

from grokray.config import TrialConfig
from grokray.errors import GrokrayError
from grokray.sweep.outcome import Outcome, TrialFn, default_trial_fn, execute, one_line
from grokray.sweep.search import SearchRun, tune_setup, unsafe_key


class Sink(Protocol):
    """Receives trial events on the driver."""

    def started(self, config: TrialConfig) -> None:
        """A trial began running."""

    def finished(self, outcome: Outcome) -> None:
        """A trial ended (success or failure); called once per config."""


class Backend(Protocol):
    """Runs trials and reports them to a sink; a context manager that owns its resources.

        with backend:                     # connects (an embedded Ray starts here)
            backend.run(configs, sink)    # or backend.run_search(search_run, sink)
                                          # leaving: what it started is stopped
    """

    def __enter__(self) -> Backend:
        """Acquire what the backend runs on."""

    def __exit__(self, *exc: Any) -> None:
        """Release it (also on an exception or an interrupt)."""

    def run(self, configs: Sequence[TrialConfig], sink: Sink) -> None:
        """Run every config (blocking) and report each one to `sink`."""

    def run_search(self, search: SearchRun, sink: Sink) -> None:
        """Sample and run `search.num_samples` configs (blocking), reporting each to `sink`."""


def trial_summary(rows: Sequence[dict[str, Any]], steps: int) -> dict[str, float]:
    """Trial-level metrics over its seeds (what a search optimizes).

    grok_rate: fraction of seeds grokked; grok_step: mean grok step, a seed that did not grok
    counting as the step budget; final_val_acc, final_val_loss: means. NaN when nothing ran.
    """
    ok = [r for r in rows if r.get("status") != "failed"]
    if not ok:
        nan = float("nan")
        return {"grok_rate": nan, "grok_step": nan, "final_val_acc": nan, "final_val_loss": nan}

    def mean(xs: list[float]) -> float:
        xs = [x for x in xs if x is not None and not _isnan(x)]
        return sum(xs) / len(xs) if xs else float("nan")

    grokked = [r.get("status") == "grokked" and r.get("grok_step") is not None for r in ok]
    return {
        "grok_rate": sum(r.get("status") == "grokked" for r in ok) / len(ok),
        "grok_step": mean([float(r["grok_step"]) if g else float(steps)
                           for r, g in zip(ok, grokked, strict=True)]),
        "final_val_acc": mean([r.get("final_val_acc") for r in ok]),
        "final_val_loss": mean([r.get("final_val_loss") for r in ok]),
    }


def _isnan(x: Any) -> bool:
    try:
        return math.isnan(float(x))
    except (TypeError, ValueError):
        return True


def outcome_summary(outcome: Outcome) -> dict[str, float]:
    """`trial_summary` of an outcome."""
    if outcome.result is None:
        return trial_summary([], outcome.config.steps)
    return trial_summary(outcome.result.seed_rows(), outcome.config.steps)


def make_backend(spec: Any, run_id: str, *, local: bool = False, address: str | None = None,
                 num_cpus: int | None = None, keep_warm: bool = False,
                 num_gpus: float | None = None) -> LocalBackend | RayBackend:
    """The backend a sweep command runs `spec` on (a SweepSpec): in process with `local`, else
    Ray Tune on the cluster at `address` (or RAY_ADDRESS), else an embedded local Ray with
    `num_cpus` CPUs and `num_gpus` GPUs (logical ones too: Ray schedules them, and a trial
    finds no CUDA behind them), where a grid runs on warm workers (`grokray.sweep.pool`;
    `keep_warm`: leave them up for the next sweep of the same Ray session). Tune keeps its
    experiment state under `<sweep dir>/_ray`. Used by `grokray sweep` and `grokray
    reproduce`; entering the backend connects (or starts) Ray."""
    if local:
        return LocalBackend()
    from grokray.files import join_uri

    storage = join_uri(spec.sweep_dir, "_ray")
    if "://" not in storage:
        storage = os.path.abspath(storage)
    joined = bool(address or os.environ.get("RAY_ADDRESS"))
    return RayBackend(
        name=f"{spec.name}-{run_id}", storage_path=storage, cpu=spec.cpu, gpu=spec.gpu,
        concurrency=spec.concurrency, retries=spec.retries, address=address,
        num_cpus=num_cpus, num_gpus=num_gpus, warm=not joined, keep_warm=keep_warm,
    )


# ----------------------------------------------------------------------------- in process


class LocalBackend:
    """Runs trials one after another in this process: for debugging and tests (no Ray)."""

    def __init__(self, trial_fn: TrialFn | None = None):
        self.trial_fn = trial_fn

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def run_search(self, search: SearchRun, sink: Sink) -> None:
        raise GrokrayError("a search runs on Ray only (Optuna through Ray Tune); drop --local")

    def run(self, configs: Sequence[TrialConfig], sink: Sink) -> None:
        fn = self.trial_fn or default_trial_fn()
        for cfg in configs:
            sink.started(cfg)
            out = execute(cfg, fn)
            out.node_id = "local"
            sink.finished(out)


# ----------------------------------------------------------------------------- Ray Tune

# Tune settings for many short trials; set before ray.tune is imported (the Parquet is the record)
_TUNE_ENV = {
    "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",  # no per-trial result.json/progress.csv/tfevents
    "TUNE_GLOBAL_CHECKPOINT_S": "60",  # experiment-state snapshots at most once a minute
    "TUNE_RESULT_BUFFER_LENGTH": "1",
    "TUNE_WARN_EXCESSIVE_EXPERIMENT_CHECKPOINT_SYNC_THRESHOLD_S": "100000",
    "RAY_AIR_NEW_OUTPUT": "0",
    "RAY_TRAIN_V2_ENABLED": "0",
    "RAY_DEDUP_LOGS": "0",
    # Ctrl-C is the sweep command's: it stops, says what was written and exits 130 (Tune's own
    # handler would stop quietly, print a Tuner.restore hint and return as if finished)
    "TUNE_DISABLE_SIGINT_HANDLER": "1",
}


def config_of(params: dict[str, Any], configs: Sequence[dict[str, Any]] = ()) -> TrialConfig:
    """The TrialConfig of a Tune trial's params: `configs[index]` or `config`, plus `search`."""
    if "index" in params:
        cfg = TrialConfig.from_dict(configs[params["index"]])
    else:
        cfg = TrialConfig.from_dict(params["config"])
    search = {k: v for k, v in params.items() if k not in ("config", "index")}
    if search:
        cfg = cfg.with_overrides({unsafe_key(k): _plain(v) for k, v in search.items()})
    return cfg


def _plain(v: Any) -> Any:
    """numpy scalars (from samplers) -> Python scalars."""
    return v.item() if hasattr(v, "item") else v


TINY_PAIR_STEPS = 200_000
"""A config is tiny when steps x seeds x train pairs is at most this (e.g. Z5 for 1,000 steps
with 4 seeds): its run takes about as long as Tune's own work per trial."""
MAX_BATCH = 16
"""At most this many tiny configs share one Tune trial."""
BATCH_PAIR_STEPS = 8 * TINY_PAIR_STEPS
"""... and at most this many pair-steps in all (a batch of the largest tiny configs: 8)."""
TRIALS_PER_SLOT = 2
"""Tiny configs are spread so that every concurrent slot gets about this many Tune trials (load
balance; each Tune trial costs about 0.1-0.4 s of Tune's own work, bench_sweep_overhead.py)."""


def _pair_steps(cfg: TrialConfig) -> float:
    from grokray.groups import parse

    try:
        n = parse(cfg.group, cap=10**12).order  # the order from the name: nothing is built
    except Exception:  # noqa: BLE001 - an unknown group fails in its trial, not here
        return math.inf
    return cfg.steps * len(cfg.seeds) * n * n * cfg.train_frac


def tiny_batches(configs: Sequence[TrialConfig], slots: int) -> list[list[int]]:
    """Indices of `configs` grouped into Tune trials: each non-tiny config alone; the tiny ones
    (`TINY_PAIR_STEPS`) in runs of up to `MAX_BATCH` configs and `BATCH_PAIR_STEPS` pair-steps,
    small enough that every one of the `slots` concurrent workers still gets about
    `TRIALS_PER_SLOT` Tune trials (load balance)."""
    work = [_pair_steps(c) for c in configs]
    tiny = [i for i, w in enumerate(work) if w <= TINY_PAIR_STEPS]
    size = max(1, min(MAX_BATCH, len(tiny) // (TRIALS_PER_SLOT * max(1, slots))))
    batches = [[i] for i, w in enumerate(work) if w > TINY_PAIR_STEPS]
    run: list[int] = []
    for i in tiny:
        if run and (len(run) == size or sum(work[j] for j in run) + work[i] > BATCH_PAIR_STEPS):
            batches.append(run)
            run = []
        run.append(i)
    return batches + ([run] if run else [])


def longest_first(configs: Sequence[TrialConfig], batches: Sequence[Sequence[int]]
                  ) -> list[int]:
    """Batch indices by estimated work, largest first (grid order among equals): the longest
    trials start first and the short ones fill in, so that no slot is left running one long
    trial alone at the end. The estimate is `_pair_steps` (steps x seeds x train pairs; a
    group it cannot size counts as largest). Replaying the trial times of the CPU ledger run of
    2026-12-01 15:00 on 2 slots (a simulation, benchmarks/README.md): `scaling_cpu`, whose grid
    lists the groups by order, 510 -> 470 s; the other sweeps unchanged, nonabelian_cpu +1.3 s.
    Used by the warm workers (`grokray.sweep.pool`)."""
    work = [sum(_pair_steps(configs[i]) for i in b) for b in batches]
    return sorted(range(len(batches)), key=lambda b: -work[b])


def _tune_trainable(
    params: dict[str, Any], configs: Sequence[dict[str, Any]] = (),
    trial_fn: TrialFn | None = None, batches: Sequence[Sequence[int]] = (),
) -> None:
    """The function Tune runs for a trial: one config (or a batch of tiny ones, one after the
    other), all its seeds, one final report carrying every outcome."""
    import ray
    from ray import tune

    outs = []
    for cfg in configs_of(params, configs, batches):
        out = execute(cfg, trial_fn or default_trial_fn())
        out.node_id = ray.get_runtime_context().get_node_id()
        if out.traceback:
            print(out.traceback, flush=True)  # lands in Ray's worker log
        outs.append(out)
    metrics = {k: (v if not _isnan(v) else float("nan")) for k, v in
               outcome_summary(outs[0]).items()}
    payload = pickle.dumps(outs if "batch" in params else outs[0])
    tune.report({**metrics, "failed": outs[0].error is not None, "payload": payload})


def configs_of(params: dict[str, Any], configs: Sequence[dict[str, Any]] = (),
               batches: Sequence[Sequence[int]] = ()) -> list[TrialConfig]:
    """The configs a Tune trial runs: a batch of tiny ones, or the one of `config_of`."""
    if "batch" in params:
        return [TrialConfig.from_dict(configs[i]) for i in batches[params["batch"]]]
    return [config_of(params, configs)]


class RayBackend:
    """Runs trials on Ray Tune: an embedded local Ray, or a running cluster (`address`)."""

    def __init__(
        self,
        *,
        name: str,
        storage_path: str,
        cpu: float = 1.0,
        gpu: float = 0.0,
        concurrency: int | None = None,
        retries: int = 2,
        address: str | None = None,
        num_cpus: int | None = None,
        num_gpus: float | None = None,
        trial_fn: TrialFn | None = None,
        warm: bool = False,
        keep_warm: bool = False,
    ):
        self.name = name
        """Tune experiment name"""
        self.storage_path = storage_path
        """where Tune keeps its experiment state (not the results)"""
        self.cpu, self.gpu = cpu, gpu
        self.concurrency = concurrency
        self.retries = retries
        self.address = address
        self.num_cpus = num_cpus
        self.num_gpus = num_gpus
        """GPUs of the embedded Ray (None: what Ray detects)"""
        self.trial_fn = trial_fn
        self.warm = warm
        """a grid runs on warm workers (`grokray.sweep.pool`), not on Ray Tune"""
        self.keep_warm = keep_warm
        """leaving the backend leaves the warm workers up (the next sweep of the session)"""
        self.started_ray = False

    def __enter__(self) -> RayBackend:
        self.connect()
        self._quiet()
        self.check_resources()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    # -------------------------------------------------------------- Ray session

    def connect(self) -> None:
        """ray.init unless already connected; embedded local Ray when no address is given."""
        for k, v in _TUNE_ENV.items():
            os.environ.setdefault(k, v)
        import logging

        import ray

        if ray.is_initialized():
            return
        kwargs: dict[str, Any] = dict(
            include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING,
            configure_logging=True,
        )
        address = self.address or os.environ.get("RAY_ADDRESS")
        if address:
            kwargs["address"] = address
        else:
            # "local" always starts a new embedded Ray: never join another one on this machine.
            # (Ray 2.60 turns a loopback node address into the machine's own address,
            # services.resolve_ip_for_localhost, so the node cannot be confined to 127.0.0.1.)
            kwargs["address"] = "local"
            if self.num_cpus:
                kwargs["num_cpus"] = self.num_cpus
            if self.num_gpus is not None:
                kwargs["num_gpus"] = self.num_gpus
        ray.init(**kwargs)
        self.started_ray = True

    @staticmethod
    def _quiet() -> None:
        import logging

        # Tune's ResultGrid looks for per-trial result.json files, which we do not write
        logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)

    def check_resources(self) -> None:
        """Fail early (GrokrayError) when no node of the embedded Ray can fit one trial.

        Not on a joined cluster: an autoscaler may add the nodes the trials need."""
        import ray

        if not self.started_ray:
            return
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        fits = any(
            n["Resources"].get("CPU", 0) >= self.cpu and n["Resources"].get("GPU", 0) >= self.gpu
            for n in nodes
        )
        if not fits:
            total = ray.cluster_resources()
            raise GrokrayError(
                f"no Ray node can fit a trial's resources (cpu {self.cpu:g}, gpu {self.gpu:g}); "
                f"the cluster has cpu {total.get('CPU', 0):g}, gpu {total.get('GPU', 0):g} "
                "(set resources in the spec, declare GPUs with --num-gpus, or join a cluster "
                "with --address)"
            )

    def shutdown(self) -> None:
        """Stop the embedded Ray started by `connect` (not a cluster we joined), and the warm
        workers unless `keep_warm` (and Ray stays up)."""
        import ray

        from grokray.sweep import pool

        if self.started_ray or not self.keep_warm:
            pool.release()
        if self.started_ray:
            ray.shutdown()
            self.started_ray = False

    # -------------------------------------------------------------- running

    def run(self, configs: Sequence[TrialConfig], sink: Sink) -> None:
        if not configs:
            return
        if self.warm:
            self._run_warm(list(configs), sink)
        else:
            self._run(list(configs), None, sink)

    def run_search(self, search: SearchRun, sink: Sink) -> None:
        if search.num_samples < 1:
            return
        self._run([search.base], search, sink)

    def _run_warm(self, configs: list[TrialConfig], sink: Sink) -> None:
        """A grid on the warm workers (`grokray.sweep.pool`); tiny configs batched alike."""
        from grokray.sweep import pool

        self.connect()  # a no-op inside `with backend:`
        self.check_resources()
        slots = self._slots()
        try:
            batches = tiny_batches(configs, slots)
            batches = [batches[b] for b in longest_first(configs, batches)]
            pool.run_batches(configs, batches, sink,
                             trial_fn=self.trial_fn, cpu=self.cpu, gpu=self.gpu, slots=slots,
                             retries=self.retries)
        except BaseException:  # an interrupt or a write error: what still runs is dropped
            pool.release()
            raise

    def _run(self, pending: list[TrialConfig], search: SearchRun | None, sink: Sink) -> None:
        from grokray.sweep import pool

        self.connect()  # a no-op inside `with backend:`
        self._quiet()
        self.check_resources()
        pool.release()  # warm workers of an earlier sweep would hold the CPUs Tune needs
        lost: list[Outcome] = []
        # Tune retries a lost trial itself (FailureConfig), but a retry can land on a cached
        # actor of the node that just died; what Tune gives up on gets fresh rounds here
        for round_ in range(self.retries + 1):
            gone = self._fit(pending, search, sink)
            lost = [o for o in gone if not _hopeless(o)]
            for out in gone:  # e.g. the trial function cannot be loaded: no point retrying
                if _hopeless(out):
                    sink.finished(out)
            if not lost or search is not None or round_ == self.retries:
                break
            pending = [out.config for out in lost]
        for out in lost:
            sink.finished(out)

    def _fit(self, configs: Sequence[TrialConfig], search: SearchRun | None,
             sink: Sink) -> list[Outcome]:
        """One Tuner.fit over `configs`; returns the outcomes of trials Tune gave up on."""
        from ray import tune

        dicts = [c.to_dict() for c in configs]
        batches = [] if search is not None else tiny_batches(configs, self._slots())
        collector = _make_collector(sink, dicts, batches)
        # the configs travel once through the object store; a trial's params hold its batch
        # index (a grid over the config dicts themselves costs Tune O(n^2) deep copies)
        trainable = tune.with_resources(
            tune.with_parameters(_tune_trainable, configs=dicts, trial_fn=self.trial_fn,
                                 batches=batches),
            {"cpu": self.cpu, "gpu": self.gpu},
        )
        names = dict(trial_dirname_creator=_dirname, trial_name_creator=_dirname,
                     reuse_actors=True)
        if search is None:
            param_space = {"batch": tune.grid_search(list(range(len(batches))))}
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
                failure_config=tune.FailureConfig(max_failures=self.retries),
                checkpoint_config=tune.CheckpointConfig(checkpoint_at_end=False),
            ),
        )
        tuner.fit()
        return collector.lost

    def _slots(self) -> int:
        """How many trials run at once (at most): concurrency, or the CPUs over cpu per trial."""
        if self.concurrency:
            return self.concurrency
        import ray

        cpus = ray.cluster_resources().get("CPU", 1)
        return max(1, int(cpus // self.cpu) if self.cpu else 1)

def _lost_types() -> tuple[type, ...]:
    """Ray's exceptions for a trial whose worker process or node went away (worth a retry)."""
    from ray import exceptions as rx

    return (rx.WorkerCrashedError, rx.NodeDiedError, rx.LocalRayletDiedError, rx.ObjectLostError,
            rx.OwnerDiedError, rx.ActorUnavailableError, rx.OutOfMemoryError, rx.RaySystemError)


def _hopeless(outcome: Outcome) -> bool:
    """Would running the trial again fail the same way? Decided by the exception's type.

    Exceptions of the trial itself never get here (they come back as failed outcomes); what
    does is a lost worker or node (retry: the types of `_lost_types`, an actor that died of a
    system error, or no exception object at all) or a trial Ray cannot even set up (a task
    error, e.g. the trial function cannot be imported or unpickled; an actor whose creation
    raised): not retried."""
    from ray import exceptions as rx

    exc = outcome.exception
    if exc is None or isinstance(exc, _lost_types()):
        return False
    if isinstance(exc, rx.ActorDiedError):
        return bool(getattr(exc, "_actor_init_failed", False))
    if isinstance(exc, rx.RayActorError):
        return False
    return True


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
            self.lost: list[Outcome] = []
            """trials Tune gave up on (worker or node lost): the backend decides"""

        def __getstate__(self) -> dict:  # Tune pickles its run config: leave the sink out
            return {"reported": set(self.reported)}

        def __setstate__(self, state: dict) -> None:
            self.reported, self.sink, self.configs = state["reported"], None, ()
            self.batches, self.lost = (), []

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
            outs = pickle.loads(payload)
            for out in outs if isinstance(outs, list) else [outs]:
                self.sink.finished(out)

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
            lines = [ln for ln in text.splitlines() if ln.strip()]
            last = lines[-1] if lines else text
            self.lost += [Outcome(
                cfg, None,
                error=one_line(f"lost after {trial.run_metadata.num_failures} tries: {last}"),
                traceback=text, exception=exc,
            ) for cfg in self._configs(trial)]

    _Collector.__module__ = __name__
    globals()["_Collector"] = _Collector
    return _Collector
