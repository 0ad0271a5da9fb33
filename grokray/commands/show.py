"""`grokray show ID`: one sweep on the service: its owner, state, place in the queue, progress,
reuse, estimate and use, where its rows are, and what happened to it (submitted, started,
preempted, ...)."""

from __future__ import annotations

import argparse
import json


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from grokray.service.client import add_client_arguments

    p = subparsers.add_parser("show", help="one sweep on the service and its history",
                              description="Show a sweep of the service's queue and its events.")
    p.add_argument("id", help="the sweep's id (`grokray queue` shows them)")
    p.add_argument("--json", action="store_true", help="print it as JSON")
    add_client_arguments(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from grokray.service.client import Client
    from grokray.service.views import sweep_text

    sw = Client(args.server).show(args.id)
    print(json.dumps(sw, indent=1) if args.json else sweep_text(sw))
    return 0
