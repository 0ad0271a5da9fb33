"""`grokray analyze NAME OUT/SWEEP... [options]`, one subcommand per registered analysis
(grokray_analysis.registry: scaling, signtest, speedup, phase, curves, ...), `grokray analyze
report OUT/SWEEP...` (every analysis that applies, one file) and `grokray analyze ledger OUT`
(the reproduction ledger of every sweep under one output root).

An analysis subcommand loads the sweep output dirs, keeps the `--where` rows, computes the
analysis's frozen result, prints its tables (`--format md|csv|tex|json`) and, with `--plot
FILE.png`, draws it. Its options, computation, tables and plot are the analysis's declaration
(the registry adds the options every analysis shares). Heavy imports (pandas, statsmodels,
matplotlib) happen inside the handlers.
"""

from __future__ import annotations

import argparse
import sys


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `analyze`: a sub-subcommand per registered analysis, `report` and `ledger`."""
    from grokray_analysis.registry import FORMATS, add_parsers, analyses

    registered = analyses()
    p = subparsers.add_parser(
        "analyze", help="tables and plots from sweep outputs (Parquet)",
        description="Analyze sweep outputs: " + ", ".join(registered) + "; report (every "
                    "analysis that applies to a sweep, one file); ledger (the paper claims).",
    )
    sub = p.add_subparsers(dest="analysis", metavar="ANALYSIS")
    sub.required = True
    add_parsers(sub)
    _report_parser(sub)
    _ledger_parser(sub, FORMATS)
    p.set_defaults(func=main)
    return p


def _report_parser(sub) -> None:
    s = sub.add_parser("report", help="one Markdown report with every table and plot (--html: "
                                      "one self-contained HTML file)")
    s.add_argument("paths", nargs="+", metavar="OUT/SWEEP", help="sweep output dir(s)")
    s.add_argument("-o", "--output", metavar="REPORT.md",
                   help="report path (default: OUT/SWEEP/report/report.md, or report.html with "
                        "--html, of the first sweep)")
    s.add_argument("--html", action="store_true",
                   help="write one self-contained HTML file (tables and interactive plots, "
                        "plotly.js inlined: no external requests) instead of Markdown + PNGs")
    s.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="bootstrap resamples (default 1000; 0 turns it off)")
    s.add_argument("--seed", type=int, default=0, help="bootstrap RNG seed (default 0)")


def _ledger_parser(sub, formats: tuple[str, ...]) -> None:
    s = sub.add_parser("ledger", help="the reproduction ledger: every paper claim vs measured",
                       description="One row per headline claim of the three papers: the paper's "
                                   "number, the measured value with its 95% interval, runs "
                                   "grokked/censored, a verdict and the command, at CPU scale "
                                   "and beside it at paper scale. Reads OUT/<sweep> for each "
                                   "claim's sweep at each scale; a claim without data is 'not "
                                   "run' there. Writes OUT/ledger.md and OUT/ledger.json.")
    s.add_argument("out", metavar="OUT", help="output root the ledger sweeps wrote into")
    s.add_argument("--scale", nargs="+", choices=("cpu", "paper", "decisive"),
                   default=["cpu", "paper", "decisive"],
                   help="the columns: each scale's sweeps (cpu: sweeps/cpu/*.yaml, paper: "
                        "sweeps/paper/*.yaml, decisive: sweeps/decisive/*.yaml); default all, "
                        "the paper-scale and decisive columns beside the CPU one")
    s.add_argument("--format", choices=formats, default="md", help="printed format (default md)")
    s.add_argument("--no-write", action="store_true",
                   help="print only; do not write OUT/ledger.md and OUT/ledger.json")
    s.add_argument("--all-rows", action="store_true",
                   help="read every row of a sweep dir, not only the configs its spec runs now")


def _compute(args: argparse.Namespace):
    """The analysis `args.analysis` of the loaded dirs: (its result, the tables to print)."""
    from grokray_analysis.load import load, parse_where
    from grokray_analysis.registry import Data, get_analysis

    a = get_analysis(args.analysis)
    data = Data(load(args.paths), parse_where(args.where))
    res = a.compute(data, args)
    tables = a.cli_tables(res, args, data) if a.cli_tables else a.tables_of(res)
    return a, res, tables


def main(args: argparse.Namespace) -> int:
    """Run one analysis; print its tables (and write its plot / report)."""
    if args.analysis == "ledger":
        return _ledger(args)
    if args.analysis == "report":
        return _report(args)
    from grokray_analysis.tables import render

    a, res, tables = _compute(args)
    sys.stdout.write(render(tables, args.format))
    if getattr(args, "plot", None):
        path = a.plot(res, args.plot)
        print(f"wrote {path}", file=sys.stderr)
    return 0


def _report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from grokray import reader

    if args.html:
        from grokray_analysis.htmlreport import build_html_report as build_report
    else:
        from grokray_analysis.report import build_report

    name = "report.html" if args.html else "report.md"
    out = args.output or reader.join_uri(str(args.paths[0]), "report", name)
    if "://" not in str(out):
        path = build_report(args.paths, Path(out), n_boot=args.bootstrap, seed=args.seed)
        print(f"wrote {path}")
        return 0
    import tempfile  # a URL (s3://...): build here, then put the files beside the sweep

    with tempfile.TemporaryDirectory() as tmp:
        base, _, query = str(out).partition("?")
        build_report(args.paths, Path(tmp) / base.rsplit("/", 1)[-1],
                     n_boot=args.bootstrap, seed=args.seed)
        dest = base.rsplit("/", 1)[0] + (f"?{query}" if query else "")
        wrote = reader.copy_into(tmp, dest)
    print(f"wrote {reader.strip_query(out)} ({len(wrote)} file(s))")
    return 0


def _ledger(args: argparse.Namespace) -> int:
    from pathlib import Path

    from grokray_analysis.errors import AnalysisError
    from grokray_analysis.ledger import ledger, ledger_table, write_ledger
    from grokray_analysis.tables import render

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise AnalysisError(f"{out} is not a directory (give the output root of the sweeps)")
    scales = tuple(dict.fromkeys(args.scale))
    L = ledger(out, scales=scales, current_only=not args.all_rows)
    sys.stdout.write(render([ledger_table(L)], args.format))
    if not args.no_write:
        md, js = write_ledger(L)
        print(f"wrote {md} and {js}", file=sys.stderr)
    return 0
