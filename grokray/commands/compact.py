"""`grokray compact OUT/SWEEP`: merge a sweep dir's per-trial Parquet files into a few large
parts (grokray/sweep/compact.py), so that every later read opens a few files, not one per
trial. Safe to interrupt at any point: the next `grokray compact`, `grokray sweep` or
`grokray status --repair` finishes or undoes what was left, and no row is ever seen twice or
lost. Takes the dir's writer lock (not while a sweep writes it).
"""

from __future__ import annotations

import argparse

from grokray.errors import GrokrayError
from grokray.sweep.lock import WriterLock


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compact",
        help="merge a sweep dir's per-trial Parquet files into a few large ones",
        description="Merge the per-trial trials/ and curves/ files of a sweep output dir (a "
                    "local path or a URL such as s3://bucket/results/smoke) and its small parts "
                    "into parts of at most --part-rows trials rows; safe to interrupt, rows "
                    "stay exactly once. Snapshots, recomputed tables and checkpoints stay "
                    "where they are.",
    )
    p.add_argument("sweep_dir", help="a sweep's output dir, e.g. results/smoke")
    p.add_argument("--part-rows", type=int, default=None, metavar="N",
                   help="trials rows per part at most (default 50000)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    # lazy: loads pyarrow, kept out of `grokray --help`
    from grokray import reader
    from grokray.sweep import compact

    rows = compact.PART_ROWS if args.part_rows is None else args.part_rows
    if rows < 1:
        raise GrokrayError(f"--part-rows {rows}: give a positive number of rows")
    try:
        loc = reader.Location.of(args.sweep_dir)
        ok = loc.is_dir(reader.TRIALS)
    except (OSError, ValueError) as exc:
        raise GrokrayError(f"cannot open {args.sweep_dir}: {' '.join(str(exc).split())[:200]}"
                           ) from None
    if not ok:
        raise GrokrayError(f"no sweep output at {args.sweep_dir} (no trials/); give OUT/<sweep> "
                           "of a sweep that ran")
    with WriterLock(args.sweep_dir, f"grokray compact {args.sweep_dir}"):
        done = compact.compact(args.sweep_dir, part_rows=rows)
    name = reader.display_name(args.sweep_dir)
    settled = ", ".join(f"{v} {k}" for k, v in done.settled.items() if v)
    print(f"{name}: {done.sources} trials file(s), {done.rows} row(s) into "
          f"{len(done.parts)} part(s)" + (f"; an interrupted compaction finished ({settled})"
                                         if settled else ""))
    for f in done.skipped:
        print(f"left as it is: {f} (damaged or without its curves; see grokray status "
              f"{args.sweep_dir})")
    return 0
