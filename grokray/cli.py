"""The one `grokray` command: `run | sweep | status | groups | cprank | analyze | dashboard |
reproduce | recompute | compact | specs | slurm`, and the sweep service's `serve | submit | queue |
show | cancel | hold | release | priority | users`.

Each subcommand lives in its own module exposing `add_parser(subparsers)` (which registers the
subcommand and sets `func`) and a `main(args) -> int`. This file only wires them together, so
that importing the CLI stays cheap: heavy imports (torch, ray, matplotlib) happen inside `main`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from grokray import __version__
from grokray.errors import GrokrayError, SpecError

# subcommand name -> module that implements it
COMMANDS = {
    "run": "grokray.commands.run",
    "sweep": "grokray.commands.sweep",
    "status": "grokray.commands.status",
    "groups": "grokray.commands.groups",
    "cprank": "grokray.commands.cprank",
    "analyze": "grokray_analysis.cli",
    "dashboard": "grokray_analysis.dashboard.cli",
    "reproduce": "grokray.commands.reproduce",
    "recompute": "grokray.commands.recompute",
    "compact": "grokray.commands.compact",
    "specs": "grokray.commands.specs",
    "slurm": "grokray.commands.slurm",
    "serve": "grokray.commands.serve",
    "submit": "grokray.commands.submit",
    "queue": "grokray.commands.queue",
    "show": "grokray.commands.show",
    "cancel": "grokray.commands.cancel",
    "hold": "grokray.commands.hold",
    "release": "grokray.commands.release",
    "priority": "grokray.commands.priority",
    "users": "grokray.commands.users",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grokray",
        description="Distributed sweeps for grokking research (FORGE, geometric bias, RFM).",
    )
    parser.add_argument("--version", action="version", version=f"grokray {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in COMMANDS.values():
        importlib.import_module(module).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        rc = int(args.func(args) or 0)
        sys.stdout.flush()  # a reader that went away shows here, not in Python's exit flush
        return rc
    except BrokenPipeError:  # `grokray specs | head`: the reader closed the pipe; stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush
        return 1  # as rich does for the commands that print through it
    except SpecError as exc:  # FILE:LINE: key: problem; what is valid (one line each)
        print(str(exc), file=sys.stderr)
        return 2
    except GrokrayError as exc:
        print(f"grokray {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("grokray: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
