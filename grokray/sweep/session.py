"""Where Ray is started: `RaySession`, the one owner of a Ray connection and its warm workers.

    with RaySession(address=None, num_cpus=2) as session:   # joins `address` / RAY_ADDRESS,
        ...                                                  # else starts an embedded local Ray
                                                             # leaving: its warm workers stop,
                                                             # and the Ray it started

`grokray sweep` opens one for a sweep, `grokray reproduce` one for all of its sweeps; the
executors (`make_executor`) run on it. A session that finds Ray already connected (a test's Ray)
uses it and leaves it up. Nothing else in grokray starts or stops Ray.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from grokray.errors import GrokrayError
from grokray.sweep.workers import WarmWorkers

TUNE_ENV = {
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
"""Ray Tune's settings for many short trials (the Parquet is the record); set before ray.tune is
imported, so on entering a session."""

TOKEN_NOTICE = "Token authentication is enabled for this Ray cluster"
"""the start of the WARNING Ray logs when a new local Ray turns token authentication on by
default (RAY_AUTH_MODE unset): that default is what an embedded Ray should do, so the line is
noise in a sweep's output and is dropped (Ray's other warnings, and its notice that token
authentication is off, still show)"""


def _drop_token_notice(record: Any) -> bool:  # noqa: ANN401 - logging.LogRecord
    return not str(record.msg).startswith(TOKEN_NOTICE)


def quiet_token_notice() -> None:
    """Keep Ray's token-authentication notice (TOKEN_NOTICE) out of the user's output: a filter
    on the one logger that writes it (the driver's; once per process)."""
    log = logging.getLogger("ray._private.authentication.authentication_token_setup")
    if _drop_token_notice not in log.filters:
        log.addFilter(_drop_token_notice)


class RaySession:
    """A connection to Ray: the cluster at `address` (or RAY_ADDRESS), else an embedded local
    Ray with `num_cpus` CPUs (default: all) and `num_gpus` GPUs (default: what Ray detects;
    logical ones too: Ray schedules them, and a trial finds no CUDA behind them); it holds the
    warm workers (`WarmWorkers`)."""

    def __init__(self, address: str | None = None, num_cpus: int | None = None,
                 num_gpus: float | None = None):
        self.address = address
        self.num_cpus = num_cpus
        self.num_gpus = num_gpus
        self.started_ray = False
        """this session started the Ray it runs on (and stops it on leaving)"""
        self.warm = WarmWorkers()
        self.open = False
        """between __enter__ and __exit__ (the sweep driver opens a session not yet open)"""
        self.checkpoints = None
        """the driver's checkpoint channel on this Ray (grokray.sweep.checkpoint_actor.RayChannel;
        made by the first sweep that runs)"""

    @property
    def joined(self) -> bool:
        """Runs on a cluster it joined (an autoscaler may add nodes), not an embedded Ray."""
        return bool(self.address or os.environ.get("RAY_ADDRESS"))

    def __enter__(self) -> RaySession:
        for k, v in TUNE_ENV.items():
            os.environ.setdefault(k, v)

        # lazy: Ray only where a Ray session runs (--local, dry runs load none)
        import ray

        if not ray.is_initialized():
            kwargs: dict[str, Any] = dict(
                include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING,
                configure_logging=True,
            )
            if self.joined:
                kwargs["address"] = self.address or os.environ["RAY_ADDRESS"]
            else:
                # "local" always starts a new embedded Ray: never join another one on this
                # machine. (Ray 2.60 turns a loopback node address into the machine's own
                # address, services.resolve_ip_for_localhost, so the node cannot be confined
                # to 127.0.0.1.)
                kwargs["address"] = "local"
                drop_bad_thread_env()
                quiet_token_notice()
                if self.num_cpus:
                    kwargs["num_cpus"] = self.num_cpus
                if self.num_gpus is not None:
                    kwargs["num_gpus"] = self.num_gpus
            ray.init(**kwargs)
            self.started_ray = True
        # Tune's ResultGrid looks for per-trial result.json files, which we do not write
        logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)
        self.open = True
        return self

    def __exit__(self, *exc: Any) -> None:
        """Stop the warm workers, and the Ray this session started (not one it found)."""
        self.open = False
        self.warm.release()
        if self.started_ray:
            # lazy: Ray only where a Ray session runs (--local, dry runs load none)
            import ray

            ray.shutdown()
            self.started_ray = False

    def check_resources(self, cpu: float, gpu: float) -> None:
        """Fail early (GrokrayError) when no node of the embedded Ray this session started can
        fit one trial. Not on a Ray it joined or found: an autoscaler may add the nodes."""
        # lazy: Ray only where a Ray session runs (--local, dry runs load none)
        import ray

        if not self.started_ray:
            return
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        if not any(n["Resources"].get("CPU", 0) >= cpu and n["Resources"].get("GPU", 0) >= gpu
                   for n in nodes):
            total = ray.cluster_resources()
            raise GrokrayError(
                f"no Ray node can fit a trial's resources (cpu {cpu:g}, gpu {gpu:g}); "
                f"the cluster has cpu {total.get('CPU', 0):g}, gpu {total.get('GPU', 0):g} "
                "(set resources in the spec, declare GPUs with --num-gpus, or join a cluster "
                "with --address)"
            )

    @staticmethod
    def slots(cpu: float, concurrency: int | None) -> int:
        """How many trials run at once (at most): `concurrency`, or the CPUs over `cpu`."""
        if concurrency:
            return concurrency
        # lazy: Ray only where a Ray session runs (--local, dry runs load none)
        import ray

        cpus = ray.cluster_resources().get("CPU", 1)
        return max(1, int(cpus // cpu) if cpu else 1)

    @staticmethod
    def gpu_slots(gpu: float, concurrency: int | None) -> int:
        """How many trials of `gpu` GPUs each run at once (at most): the cluster's GPUs over
        `gpu`, at most `concurrency`."""
        # lazy: Ray only where a Ray session runs (--local, dry runs load none)
        import ray

        n = int(ray.cluster_resources().get("GPU", 0) // gpu) if gpu else 1
        return max(1, min(n, concurrency) if concurrency else n)

    def logs_dir(self) -> str:
        """This Ray session's log directory on this node (the head, for a job), or ""."""
        # lazy: Ray only where a Ray session runs (--local, dry runs load none)
        import ray

        if not ray.is_initialized():
            return ""
        ctx = ray.get_runtime_context()
        return os.path.join(ctx.get_temp_dir(), ctx.get_session_name(), "logs")


def drop_bad_thread_env(env: dict[str, str] | None = None) -> list[str]:
    """Unset an OMP_NUM_THREADS that is not a positive whole number (an empty `export
    OMP_NUM_THREADS=`): Ray gives each worker OMP_NUM_THREADS = its num_cpus only where the
    variable is unset, and libgomp ignores an invalid value and spins a thread per core, which
    multiplied a ledger's trial CPU time about 10x on 2 shared cores. Says so in one line per
    variable dropped; returns their names."""
    env = os.environ if env is None else env
    dropped = []
    for var in ("OMP_NUM_THREADS",):
        v = env.get(var)
        if v is not None and not (v.strip().isdigit() and int(v) > 0):
            del env[var]
            dropped.append(var)
            print(f"grokray: {var}={v!r} is not a thread count; unset for the embedded Ray, so "
                  f"each trial runs on as many threads as its resources.cpu", file=sys.stderr)
    return dropped
