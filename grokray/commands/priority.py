"""`grokray priority ID N`: change a sweep's priority on the service (its owner or an admin);
higher runs first, and a waiting sweep may preempt running ones of lower priority."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from grokray.service.client import add_client_arguments

    p = subparsers.add_parser("priority", help="change a sweep's priority on the service",
                              description="Set the priority of a queued, held or running sweep "
                                          "(its owner or an admin).")
    p.add_argument("id", help="the sweep's id (`grokray queue` shows them)")
    p.add_argument("priority", type=int, help="the new priority (higher runs first)")
    add_client_arguments(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from grokray.service.client import Client

    sw = Client(args.server).act(args.id, "priority", priority=args.priority)
    where = f"position {sw['position']}" if sw["position"] else sw["state"]
    print(f"sweep {sw['id']} {sw['name']} ({sw['owner']}): priority {sw['priority']}, {where}")
    return 0
