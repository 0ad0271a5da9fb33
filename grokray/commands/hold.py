"""`grokray hold ID`: hold a queued sweep on the service (like `scontrol hold`): it keeps its place
but is not started until `grokray release ID`. Only its owner or an admin may."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from grokray.service.client import add_client_arguments

    p = subparsers.add_parser(
        "hold",
        help="hold a queued sweep (its owner or an admin): it waits until released",
        description="Hold a queued sweep (its owner or an admin): it waits until released.")
    p.add_argument("id", help="the sweep's id (`grokray queue` shows them)")
    add_client_arguments(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from grokray.service.client import Client

    sw = Client(args.server).act(args.id, "hold")
    print(f"sweep {sw['id']} {sw['name']} ({sw['owner']}): {sw['state']}")
    return 0
