"""`grokray release ID`: put a held sweep back in the queue (like `scontrol release`). Only its
owner or an admin may."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from grokray.service.client import add_client_arguments

    p = subparsers.add_parser(
        "release",
        help="release a held sweep back into the queue (its owner or an admin)",
        description="Release a held sweep back into the queue (its owner or an admin).")
    p.add_argument("id", help="the sweep's id (`grokray queue` shows them)")
    add_client_arguments(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from grokray.service.client import Client

    sw = Client(args.server).act(args.id, "release")
    print(f"sweep {sw['id']} {sw['name']} ({sw['owner']}): {sw['state']}")
    return 0
