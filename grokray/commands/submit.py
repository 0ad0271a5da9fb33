"""`grokray submit SPEC|NAME [--priority N]`: queue a sweep on the lab's service (`grokray
serve`): a spec file (its text is sent) or the name of a shipped spec. The service checks it with
the code `grokray sweep` runs, so a bad spec gets the same one line, and prices it with the cost
model; the sweep's id and place in the queue are printed (`grokray queue` lists it).
"""

from __future__ import annotations

import argparse
import json


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from grokray.service.client import add_client_arguments

    p = subparsers.add_parser(
        "submit",
        help="queue a sweep on the lab's service (`grokray serve`; docs/service.md)",
        description="Queue a sweep spec (a file, or a shipped name: grokray specs) on the "
                    "service; it runs when the scheduler admits it.",
    )
    p.add_argument("spec", help="sweep spec YAML file, or the name of a shipped one")
    p.add_argument("--priority", type=int, default=0,
                   help="higher runs first and may preempt lower (default 0)")
    p.add_argument("--hold", action="store_true",
                   help="queue it held: it waits until `grokray release ID`")
    p.add_argument("--json", action="store_true", help="print the stored sweep as JSON")
    add_client_arguments(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from grokray.service.client import Client
    from grokray.service.views import hours

    _, sw = Client(args.server).submit(args.spec, priority=args.priority, hold=args.hold)
    if args.json:
        print(json.dumps(sw, indent=1))
        return 0
    where = f"position {sw['position']}" if sw["position"] else sw["state"]
    print(f"sweep {sw['id']} {sw['name']} ({sw['owner']}, priority {sw['priority']}): {where}; "
          f"{sw['trials_total']:,} trials, {sw['seed_runs_total']:,} seed-runs, estimated "
          f"{hours(sw['estimate_cpu_s'])} CPU-h, {hours(sw['estimate_gpu_s'])} GPU-h; rows to "
          f"{sw['sweep_dir']}")
    if sw["message"]:
        print(f"  {sw['message']}")
    return 0
