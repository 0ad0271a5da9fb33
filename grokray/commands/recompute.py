"""`grokray recompute OUT --metric NAME [NAME ...] [--where KEY=VALUE ...]`: a registered metric
at every snapshot of a sweep, without training again (grokray/sweep/recompute.py).

OUT is a sweep dir (OUT/<sweep>) or a dir of sweep dirs (a ledger root). The values go to
OUT/<sweep>/recomputed/<metric>/, new files only; a second call computes only what is missing.
`--import FILE.py` (or a module name) loads metrics of your own (`grokray.metrics.registry.
register`); `--list` prints every registered metric. An unknown metric, a bad filter, a dir
without snapshots: one line, exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys

from grokray.errors import GrokrayError, error_line


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "recompute",
        help="compute a metric at every snapshot of a sweep, without training again",
        description="Rebuild each model of the sweep dir OUT (or of every sweep dir under it) "
                    "from its snapshots and compute the metric there; the values go to "
                    "OUT/<sweep>/recomputed/<metric>/ (new files; what is on disk at the "
                    "metric's version is not computed again) and `grokray analyze` reads them "
                    "beside the curves. docs/snapshots.md, Recompute.",
    )
    p.add_argument("out", nargs="?", metavar="OUT",
                   help="a sweep dir (OUT/<sweep>) or a dir of sweep dirs")
    p.add_argument("--metric", nargs="+", metavar="NAME",
                   help="registered metric(s): spectrum, spectrum_readings, wedderburn, nfa, "
                        "axioms, agop, circulant, or your own (--import); --list shows them")
    p.add_argument("--where", action="append", metavar="KEY=VALUE",
                   help="only the trials with this column value (repeatable, ANDed): "
                        "KEY=VALUE or KEY!=VALUE on any trials column, VALUE a comma-separated "
                        "list of alternatives, e.g. --where group=S3,D4 --where arch!=mlp")
    p.add_argument("--import", dest="imports", action="append", metavar="FILE.py|MODULE",
                   help="import this Python file or module first (it registers metrics of "
                        "your own with grokray.metrics.registry.register); repeatable")
    p.add_argument("--skip-missing", action="store_true",
                   help="recompute the seeds that have snapshots when some selected ones have "
                        "none (default: say so and stop)")
    p.add_argument("--plain", action="store_true", help="a progress line per config even on a "
                                                         "terminal")
    p.add_argument("--list", action="store_true", help="list the registered metrics and exit")
    p.set_defaults(func=main)


def import_metrics(items: list[str] | None) -> None:
    """Import each file or module (GrokrayError, one line, when it fails)."""

    for item in items or ():
        try:
            if item.endswith(".py") or os.sep in item:
                if not os.path.isfile(item):
                    raise GrokrayError(f"--import {item}: no such file")
                name = "grokray_user_" + os.path.splitext(os.path.basename(item))[0]
                spec = importlib.util.spec_from_file_location(name, item)
                mod = importlib.util.module_from_spec(spec)
                sys.modules[name] = mod
                spec.loader.exec_module(mod)
            else:
                importlib.import_module(item)
        except GrokrayError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's file: one line
            raise GrokrayError(f"--import {item}: {error_line(exc)}") from None


def list_metrics() -> str:
    # lazy: loads pandas, kept out of `grokray --help`
    from grokray.metrics.registry import metrics

    lines = []
    for m in sorted(metrics().values(), key=lambda m: (not m.builtin, m.name)):
        cols = ", ".join(m.column(c) for c in m.columns) or "(undeclared)"
        lines.append(f"{m.name:18s} v{m.version}  {m.description}  [{cols}]")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    import_metrics(args.imports)
    if args.list:
        print(list_metrics())
        return 0
    if not args.out:
        raise GrokrayError("give OUT, a sweep dir or a dir of sweep dirs (grokray recompute "
                           "OUT --metric NAME)")
    if not args.metric:
        raise GrokrayError("give --metric NAME; `grokray recompute --list` lists them")
    # lazy: loads pandas, kept out of `grokray --help`
    from grokray.sweep.recompute import parse_where, recompute

    cmd = "grokray recompute " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else ""
    summary = recompute(args.out, args.metric, where=parse_where(args.where),
                        skip_missing=args.skip_missing, progress=False if args.plain else None,
                        command=cmd)
    print(summary.line())
    return 0
