"""`grokray serve`: the sweep service. One long-running process that keeps the lab's queue in a
database (an SQLite file by default, `--db postgresql://...` for a lab), answers the HTTP API
the client verbs call (`grokray submit`, `queue`, `show`, `cancel`, `hold`, `release`,
`priority`) and runs the admitted sweeps through the sweep driver on the Ray cluster it is
attached to (`--address`; the embedded local Ray by default). It listens on 127.0.0.1 unless
`--host` says otherwise (docs/service.md: an SSH tunnel from a laptop).
"""

from __future__ import annotations

import argparse
import os
import sys

from grokray.errors import GrokrayError

DEFAULT_HOME = "grokray-service"
"""the service's folder when --db / --store are not given (relative to where it starts)"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the sweep service: a lab's queue, its HTTP API and its runner "
             "(docs/service.md)",
        description="Queue every user's sweeps in one database and run them on one cluster. "
                    "Users and their tokens: `grokray users add NAME`.",
    )
    p.add_argument("--db", default=None,
                   help=f"the database: an SQLite file, or a URL such as "
                        f"postgresql://user@host/db (default: {DEFAULT_HOME}/service.db)")
    p.add_argument("--store", default=None,
                   help="the lab's store: sweeps write to STORE/<user>/<id>/<name> (a local or "
                        f"shared dir, or s3://...; default: {DEFAULT_HOME}/store)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8750, help="port (default 8750; 0: any free)")
    p.add_argument("--address", default=None,
                   help="Ray cluster to run sweeps on ('auto' on a cluster node); default: an "
                        "embedded local Ray")
    p.add_argument("--num-cpus", type=int, default=None,
                   help="CPUs of the embedded local Ray (default: all)")
    p.add_argument("--num-gpus", type=float, default=None,
                   help="GPUs of the embedded local Ray (default: those CUDA shows)")
    p.add_argument("--engine", choices=("ray", "slurm"), default="ray",
                   help="where admitted sweeps run: the Ray cluster (default), or each as an "
                        "sbatch job through `grokray slurm` (on a Slurm login node)")
    p.add_argument("--slurm-arg", action="append", default=[], metavar="ARG",
                   help="with --engine slurm: an argument for `grokray slurm` (repeatable), "
                        "e.g. --slurm-arg=--partition=gpu")
    p.add_argument("--work", default=None,
                   help=f"where the runner keeps each sweep's spec and driver log (default: "
                        f"{DEFAULT_HOME}/work)")
    p.add_argument("--over-quota", choices=("refuse", "hold"), default="refuse",
                   help="a sweep over its user's quota is refused (default) or held")
    p.add_argument("--no-runner", action="store_true",
                   help="answer the API and keep the queue, run nothing (e.g. to inspect or "
                        "back up a lab's database)")
    p.set_defaults(func=main)


def db_of(args: argparse.Namespace) -> str:
    """The database `--db` names (default: the service folder's SQLite file)."""
    return args.db or os.path.join(DEFAULT_HOME, "service.db")


def main(args: argparse.Namespace) -> int:
    # lazy: loads aiohttp and sqlalchemy, kept out of `grokray --help`
    import asyncio

    from grokray.service import scheduler
    from grokray.service.api import Settings, make_app

    if not 0 <= args.port <= 65535:
        raise GrokrayError(f"--port {args.port}: give 0..65535")
    store = args.store or os.path.join(DEFAULT_HOME, "store")
    if "://" not in store:
        store = os.path.abspath(store)
    st = _open(db_of(args))
    settings = Settings(store, policy=scheduler.Policy(over_quota=args.over_quota))
    app = make_app(st, settings)
    runner = None if args.no_runner else _runner(st, settings, args)
    # the queue as the scheduler serves it (fair share among equal priorities), when the
    # runner says; else by priority, then submission
    settings.order = getattr(runner, "queue_order", None)
    try:
        asyncio.run(_serve(app, args.host, args.port, st, runner))
    finally:
        st.close()
    return 0


def _open(db: str):  # noqa: ANN202 - State (kept lazy)
    from sqlalchemy.exc import ArgumentError, OperationalError

    from grokray.service.state import State

    try:
        return State.open(db)
    except OperationalError as exc:
        raise GrokrayError(f"--db {db}: cannot open the database: "
                           f"{str(exc.orig).splitlines()[0][:200]}") from None
    except (ArgumentError, ModuleNotFoundError) as exc:
        raise GrokrayError(f"--db {db}: {exc}; give an SQLite file or postgresql://...") \
            from None


def _runner(st, settings, args):  # noqa: ANN001, ANN202 - lazy types
    """The runner that dispatches admitted sweeps (grokray.service.runner): on the Ray cluster
    at --address (else the embedded local Ray it starts), or through `grokray slurm`."""
    from grokray.service.runner import Runner

    work = args.work or os.path.join(DEFAULT_HOME, "work")
    if args.engine == "ray" and args.address is None:
        _match_ray_auth()
    try:
        return Runner(st, work, settings=settings, address=args.address, num_cpus=args.num_cpus,
                      num_gpus=args.num_gpus, policy=settings.policy, engine=args.engine,
                      slurm_args=tuple(args.slurm_arg))
    except (ConnectionError, TimeoutError, RuntimeError) as exc:  # Ray did not answer
        where = args.address or "the embedded local Ray"
        raise GrokrayError(f"cannot attach to {where}: {' '.join(str(exc).split())[:200]}; "
                           "give --address of a running cluster, or --no-runner to keep the "
                           "queue without running it") from None


def _match_ray_auth() -> None:
    """`ray start --head` turns Ray's token authentication on when a token is on disk
    (~/.ray/auth_token, which any earlier local `ray.init` leaves), but a process that then
    joins it by address sends no token unless RAY_AUTH_MODE says so, and is refused. Say so for
    this process and the sweep drivers it starts (unless the user chose a mode)."""
    if "RAY_AUTH_MODE" in os.environ:
        return
    path = os.environ.get("RAY_AUTH_TOKEN_PATH") or os.path.join(
        os.path.expanduser("~"), ".ray", "auth_token")
    if os.environ.get("RAY_AUTH_TOKEN") or os.path.isfile(path):
        os.environ["RAY_AUTH_MODE"] = "token"


def _warm(app) -> None:  # noqa: ANN001 - web.Application
    """Load the spec checker and the cost model before the first submission needs them (the
    first `grokray submit` after a start would otherwise wait for torch's import)."""
    from grokray.service import submit as submitting
    from grokray.service.api import READY

    try:
        submitting.prepare(name="smoke")
    finally:
        app[READY].set()


async def _serve(app, host: str, port: int, st, runner) -> None:  # noqa: ANN001
    import asyncio
    import signal

    from aiohttp import web

    from grokray.service.api import SETTINGS

    web_runner = web.AppRunner(app, access_log=None)
    await web_runner.setup()
    site = web.TCPSite(web_runner, host, port, backlog=1024)
    try:
        await site.start()
    except OSError as exc:
        await web_runner.cleanup()
        raise GrokrayError(f"cannot listen on {host}:{port}: {exc.strerror}; give another "
                           "--port (or stop what holds it)") from None
    bound = site._server.sockets[0].getsockname()  # the real port when --port 0
    url = f"http://{bound[0]}:{bound[1]}"
    where = st.engine.url.render_as_string(hide_password=True)
    print(f"grokray serve: listening on {url} (database {where}; store "
          f"{app[SETTINGS].store}); stop with Ctrl-C", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    loop.run_in_executor(None, _warm, app)
    if runner is not None:
        runner.start()
    try:
        await stop.wait()
    finally:
        if runner is not None:  # its sweep drivers go on; a restarted service adopts them
            await loop.run_in_executor(None, runner.stop)
        await web_runner.cleanup()
        print("grokray serve: stopped", file=sys.stderr, flush=True)
