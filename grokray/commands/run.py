"""`grokray run [CONFIG.yaml] [--set key=value ...] [--seeds N] [--out DIR] [--json]
[--threads N]`.

Runs one trial in-process, on the torch threads of a sweep's trial holding `--threads` CPUs
(default 1; grokray/threads.py): a live progress bar on stderr, a per-seed summary table, and
the exact command that reproduces the run. `--out DIR` writes the same Parquet tables as a sweep;
`--json` prints the per-seed summary rows as a JSON list on stdout (the table then goes to
stderr).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from grokray import shipped
from grokray.errors import ConfigError
from grokray.sweep.lock import WriterLock
from grokray.tasks import make_task
from grokray.threads import torch_threads, trial_threads


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run", help="run one trial (S seeds of one config) in-process",
        description="Run one trial in-process. Dotted keys override any config field.",
    )
    p.add_argument("config", nargs="?",
                   help="single-trial YAML config file, or the name of a shipped one (e.g. "
                        "run/mlp_z97; `grokray specs`); default: the built-in defaults")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config field, e.g. --set model.rank=32 --set group=S4")
    p.add_argument("--seeds", type=int, metavar="N", help="use seeds 0..N-1")
    p.add_argument("--out", metavar="DIR", help="write trials/ and curves/ Parquet under DIR")
    p.add_argument("--sweep", default="run", help="sweep name recorded in the tables (run)")
    p.add_argument("--json", action="store_true", help="print the per-seed rows as JSON")
    p.add_argument("--threads", type=int, metavar="N",
                   help="torch CPU threads (default 1: what a sweep's trial with resources.cpu "
                        "1, the default, trains on; N: as one with resources.cpu N)")
    p.set_defaults(func=main)


def parse_overrides(items: list[str]) -> dict[str, str]:
    """["a.b=1", "group=S4"] -> {"a.b": "1", "group": "S4"}; a malformed item is a ConfigError."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def build_config(args: argparse.Namespace):
    """The TrialConfig from the YAML file, the --set overrides and --seeds."""
    # lazy: loads torch, kept out of `grokray --help`
    from grokray.config import TrialConfig, load_yaml

    cfg = load_yaml(shipped.resolve(args.config, shipped.RUN)) if args.config else TrialConfig()
    over: dict[str, Any] = parse_overrides(args.overrides)
    if args.seeds is not None:
        if args.seeds < 1:
            raise ConfigError(f"--seeds must be >= 1, got {args.seeds}")
        over["seeds"] = list(range(args.seeds))
    return cfg.with_overrides(over) if over else cfg


def reproduce_command(cfg) -> str:
    """`grokray run --set ...` naming every field that differs from the defaults."""
    # lazy: loads torch, kept out of `grokray --help`
    from grokray.config import TrialConfig

    default, now = TrialConfig().to_dict(), cfg.to_dict()
    parts = ["grokray", "run"]
    for key, value in now.items():
        if isinstance(value, dict):
            for k, v in value.items():
                if v != default[key][k]:
                    parts += ["--set", f"{key}.{k}={_fmt(v)}"]
        elif value != default[key]:
            parts += ["--set", f"{key}={_fmt(value)}"]
    return shlex.join(parts)


def _fmt(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ",".join(str(x) for x in v) if v else "[]"
    return str(v)


def main(args: argparse.Namespace) -> int:
    if args.threads is not None and args.threads < 1:
        raise ConfigError(f"--threads must be >= 1, got {args.threads}")
    cfg = build_config(args)


    make_task(cfg.group, cfg.op)  # a bad group or op fails here, before the progress bar
    if not args.out:
        return _train_and_report(args, cfg)
    # an output that cannot be written, or that another grokray process is writing, fails
    # here, before any training; the lock is held until the result is written
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.sweep.store import check_writable

    check_writable(args.out)
    with WriterLock(args.out, "grokray run " + shlex.join(sys.argv[2:])) as lock:
        if lock.notice:
            print(lock.notice, file=sys.stderr, flush=True)
        return _train_and_report(args, cfg)


def _train_and_report(args: argparse.Namespace, cfg) -> int:  # noqa: ANN001 - TrialConfig
    """Train on the threads of a sweep's trial holding `--threads` CPUs (default 1), so that
    the numbers are those a sweep of this config gives (grokray/threads.py)."""
    with torch_threads(trial_threads(args.threads or 1)):
        return _train_and_print(args, cfg)


def _train_and_print(args: argparse.Namespace, cfg) -> int:  # noqa: ANN001 - TrialConfig
    # lazy: loads torch and pandas, kept out of `grokray --help`
    from grokray.trial import run_trial

    err = Console(stderr=True)
    out = err if args.json else Console()
    S = len(cfg.seeds)
    bar = Progress(
        TextColumn(f"[bold]{cfg.arch}[/] {cfg.group}"), BarColumn(),
        TextColumn("step {task.completed:>7.0f}/{task.total:.0f}"),
        TextColumn("grokked {task.fields[grokked]}/{task.fields[S]}"),
        TextColumn("best val {task.fields[best]:.3f}"),
        TextColumn("{task.fields[sps]:.1f} steps/s"), TimeElapsedColumn(),
        console=err, transient=False,
    )
    with bar:
        task = bar.add_task("run", total=cfg.steps, grokked=0, S=S, best=0.0, sps=0.0)

        def on_progress(p) -> None:
            bar.update(task, completed=p.step, grokked=p.n_grokked,
                       best=p.best_val_acc if p.best_val_acc == p.best_val_acc else 0.0,
                       sps=p.steps_per_s)

        result = run_trial(cfg, progress=on_progress)
        bar.update(task, completed=max(s.steps_run for s in result.seeds))

    rows = result.seed_rows()
    table = Table(title=f"{cfg.arm} on {cfg.group} ({cfg.op}), {result.n_params} params/seed, "
                        f"{result.wall_s:.1f}s on {result.device}")
    for col in ("seed", "status", "grok_step", "memorize_step", "ungrok_step", "steps_run",
                "final_train_acc", "final_val_acc"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(*[_cell(r[c]) for c in ("seed", "status", "grok_step", "memorize_step",
                                              "ungrok_step", "steps_run", "final_train_acc",
                                              "final_val_acc")])
    out.print(table)
    for r in rows:
        if r["error"]:
            err.print(f"seed {r['seed']}: {r['error']}")
    if args.out:
        # lazy: loads torch and pandas, kept out of `grokray --help`
        from grokray.sweep.store import new_run_id, write_result

        path = write_result(result, args.out, sweep=args.sweep, run_id=new_run_id())
        err.print(f"wrote {path}")
    threads = f" --threads {args.threads}" if (args.threads or 1) != 1 else ""
    err.print("reproduce: " + reproduce_command(cfg) + threads, soft_wrap=True,
              highlight=False, markup=False)
    if args.json:
        sys.stdout.write(json.dumps(rows) + "\n")
    return 1 if all(r["status"] == "failed" for r in rows) else 0


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)
