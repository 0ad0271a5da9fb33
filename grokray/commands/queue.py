"""`grokray queue`: the lab's queue on the service, in the order it is served (like `squeue`):
position, owner, priority, state, progress (seed-runs with a row / all), how many of them were
reused from earlier runs, the cost model's estimate and what was used; `--all` adds the ended
sweeps.
"""

from __future__ import annotations

import argparse
import json


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from grokray.service.client import add_client_arguments

    p = subparsers.add_parser(
        "queue", help="the lab's queue on the service (`grokray serve`), in order",
        description="List the sweeps queued, held and running on the service (--all: ended "
                    "ones too), in the order the scheduler serves them.")
    p.add_argument("--all", action="store_true", help="also done, failed and cancelled sweeps")
    p.add_argument("--user", default=None, help="only this user's sweeps")
    p.add_argument("--state", action="append", default=None,
                   help="only sweeps in this state (repeatable): queued, held, running, "
                        "preempted, done, failed, cancelled")
    p.add_argument("--limit", type=int, default=None, help="at most this many rows")
    p.add_argument("--json", action="store_true", help="print the sweeps as JSON")
    add_client_arguments(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from grokray.service.client import Client
    from grokray.service.views import queue_table

    rows = Client(args.server).queue(all=args.all, user=args.user, states=args.state,
                                     limit=args.limit)
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(queue_table(rows))
    return 0
