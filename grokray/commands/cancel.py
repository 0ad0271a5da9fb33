"""`grokray cancel ID`: cancel a sweep on the service (like `scancel`): a queued or held one leaves
the queue; a running one is stopped by the runner (its rows so far stay in its dir). Only its
owner or an admin may."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from grokray.service.client import add_client_arguments

    p = subparsers.add_parser(
        "cancel",
        help="cancel a sweep on the service (its owner or an admin)",
        description="Cancel a sweep on the service (its owner or an admin): a queued one "
                    "leaves the queue, a running one stops.")
    p.add_argument("id", help="the sweep's id (`grokray queue` shows them)")
    add_client_arguments(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from grokray.service.client import Client

    sw = Client(args.server).act(args.id, "cancel")
    print(f"sweep {sw['id']} {sw['name']} ({sw['owner']}): {sw['state']}")
    return 0
