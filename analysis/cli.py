"""`grokray analyze scaling|signtest|speedup|phase|curves|report OUT/SWEEP... [options]`, and
`grokray analyze ledger OUT`: the reproduction ledger of every sweep under one output root.

Each table command loads the sweep output dirs, computes a frozen result, prints its tables
(`--format md|csv|tex|json`) and, with `--plot FILE.png`, draws it. `report` writes one Markdown
file with every table and plot that applies. Heavy imports (pandas, statsmodels, matplotlib)
happen inside the handlers.
"""

from __future__ import annotations

import argparse
import sys

FORMATS = ("md", "csv", "tex", "json")


def _common(p: argparse.ArgumentParser, plot: bool = True) -> None:
    p.add_argument("paths", nargs="+", metavar="OUT/SWEEP", help="sweep output dir(s)")
    p.add_argument("--where", action="append", metavar="KEY=VALUE",
                   help="keep only rows with this column value (repeatable), e.g. group=S4")
    p.add_argument("--format", choices=FORMATS, default="md", help="table format (default md)")
    if plot:
        p.add_argument("--plot", metavar="FILE.png", help="also draw the result to this PNG")


def _boot(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="bootstrap resamples (default 1000; 0 turns it off)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap RNG seed (default 0)")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `analyze` and its sub-subcommands."""
    p = subparsers.add_parser(
        "analyze", help="tables and plots from sweep outputs (Parquet)",
        description="Analyze sweep outputs: power law, sign test, speedup, phase, curves, "
                    "metrics at the grok step, axiom leads, report.",
    )
    sub = p.add_subparsers(dest="analysis", metavar="ANALYSIS")
    sub.required = True

    s = sub.add_parser("scaling", help="power law grok_step = c*|G|^alpha per arm")
    _common(s)
    s.add_argument("--arms", nargs="+", metavar="ARM", help="arms to fit (default: all)")
    s.add_argument("--by", default="arm", help="column to split fits by (default arm)")
    s.add_argument("--method", choices=("aft", "ols", "both"), default="aft",
                   help="aft: censored log-normal regression over every run (default); ols: "
                        "OLS on grokked runs only, with R^2 (the paper's fit); both")
    s.add_argument("--medians", action="store_true",
                   help="with --method ols: fit per-group medians, not per-seed runs")
    s.add_argument("--compare", nargs=2, metavar=("A", "B"),
                   help="test whether alpha differs between two arms (interaction term)")
    s.add_argument("--interval", choices=("group", "per-run", "group-bootstrap"),
                   default="group",
                   help="95%% interval of c and alpha: group (default; groups as the unit of "
                        "replication: cluster-robust covariance, t on groups - 2), per-run "
                        "(every run independent: no group effect assumed), group-bootstrap "
                        "(aft: percentile over --bootstrap resamples of whole groups)")
    s.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="bootstrap resamples (default 1000; 0 turns it off): ols's bootstrap "
                        "over seeds (alpha_seedboot: groups held fixed) and "
                        "--interval group-bootstrap's")
    s.add_argument("--seed", type=int, default=0, help="bootstrap RNG seed (default 0)")

    s = sub.add_parser("signtest", help="paired sign test + Wilcoxon between two arms")
    _common(s)
    s.add_argument("--arms", nargs=2, required=True, metavar=("A", "B"),
                   help="the two arms; differences are A - B")
    s.add_argument("--metric", default="grok_step", help="column to compare (default grok_step)")
    s.add_argument("--alternative", choices=("two-sided", "greater", "less"),
                   default="two-sided", help="greater: A tends to be larger than B")
    s.add_argument("--pair-by", nargs="+", metavar="COL",
                   help="columns identifying a pair (default: group seed)")

    s = sub.add_parser("speedup", help="median grok step, k/n and speedup vs a baseline arm")
    _common(s)
    s.add_argument("--baseline", default="mlp", help="baseline arm (default mlp)")
    s.add_argument("--arms", nargs="+", metavar="ARM", help="arms to show (default: all)")
    s.add_argument("--by", default="group", help="row grouping column (default group)")
    s.add_argument("--long", action="store_true", help="one row per (group, arm)")

    s = sub.add_parser("phase", help="capacity-lift phase diagram over rank R and width d")
    _common(s)
    s.add_argument("--rank-col", default="model_rank", help="rank column (default model_rank)")
    s.add_argument("--d-col", default="model_d", help="width column (default model_d)")
    s.add_argument("--arms", nargs="+", metavar="ARM",
                   help="arms to draw, one diagram each (default: every arm with R and d)")
    s.add_argument("--pool-arms", action="store_true",
                   help="pool the arms into one diagram (default: never mixed)")
    s.add_argument("--cprank", metavar="DIR",
                   help="also compare each arm's threshold with the CP-rank bounds `grokray "
                        "cprank GROUP --out DIR` wrote")

    s = sub.add_parser("drift", help="invariant drift of learned Hamiltonian dynamics")
    _common(s, plot=False)
    s.add_argument("--baseline", default="mlp", help="baseline arm (default mlp)")

    s = sub.add_parser("curves", help="val and train acc vs step: median and band per arm")
    _common(s)
    s.add_argument("--metric", nargs="+", metavar="COL",
                   help="curve column(s) to overlay (default: val_acc and train_acc; `norms`: "
                        "the weight norms, total and per parameter group)")
    s.add_argument("--arms", nargs="+", metavar="ARM", help="arms to show (default: all)")
    s.add_argument("--threshold", type=float, default=0.99,
                   help="accuracy level for the first-crossing step (default 0.99; not "
                        "applied to a loss)")

    s = sub.add_parser("atgrok", help="curve metrics at step 0, at the grok step and at the end")
    _common(s, plot=False)
    s.add_argument("--metric", nargs="+", metavar="COL", default=["metric_eff_modes"],
                   help="curve column(s) (default metric_eff_modes)")
    s.add_argument("--by", default="group", help="row grouping column (default group)")

    s = sub.add_parser("axioms", help="axiom-emergence lead over grokking, several thresholds")
    _common(s, plot=False)
    s.add_argument("--axiom", nargs="+", choices=("ident", "assoc", "inv"), default=["ident"],
                   help="axioms to read (default ident)")
    s.add_argument("--rel", nargs="+", type=float, metavar="R",
                   help="relative thresholds: L <= R * L(step 0) (default 0.01 when no --abs)")
    s.add_argument("--abs", nargs="+", type=float, metavar="A", dest="absolute",
                   help="absolute thresholds: L <= A")
    s.add_argument("--held", action="store_true",
                   help="also each threshold as a lasting state (below it through the grok step)")
    s.add_argument("--by", default="group", help="row grouping column (default group)")

    s = sub.add_parser("report", help="one Markdown report with every table and plot (--html: "
                                      "one self-contained HTML file)")
    s.add_argument("paths", nargs="+", metavar="OUT/SWEEP", help="sweep output dir(s)")
    s.add_argument("-o", "--output", metavar="REPORT.md",
                   help="report path (default: OUT/SWEEP/report/report.md, or report.html with "
                        "--html, of the first sweep)")
    s.add_argument("--html", action="store_true",
                   help="write one self-contained HTML file (tables and interactive plots, "
                        "plotly.js inlined: no external requests) instead of Markdown + PNGs")
    _boot(s)

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
    s.add_argument("--format", choices=FORMATS, default="md", help="printed format (default md)")
    s.add_argument("--no-write", action="store_true",
                   help="print only; do not write OUT/ledger.md and OUT/ledger.json")
    s.add_argument("--all-rows", action="store_true",
                   help="read every row of a sweep dir, not only the configs its spec runs now")

    p.set_defaults(func=main)
    return p


def _compute(args: argparse.Namespace):
    from grokray_analysis.load import load, parse_where, select

    sweep = load(args.paths)
    where = parse_where(args.where)
    trials = select(sweep.trials, where)
    a = args.analysis
    if a == "scaling":
        from grokray_analysis.powerlaw import scaling
        from grokray_analysis.tables import scaling_tables

        methods = ("aft", "ols") if args.method == "both" else (args.method,)
        res = scaling(trials, arms=args.arms, by=args.by, methods=methods,
                      medians=args.medians, n_boot=args.bootstrap, seed=args.seed,
                      compare=tuple(args.compare) if args.compare else None,
                      interval=args.interval)
        return res, scaling_tables(res)
    if a == "signtest":
        from grokray_analysis.signtest import sign_test

        res = sign_test(trials, args.metric, *args.arms, alternative=args.alternative,
                        pair_by=tuple(args.pair_by) if args.pair_by else None)
    elif a == "speedup":
        from grokray_analysis.speedup import speedup_table
        from grokray_analysis.tables import speedup_tables

        res = speedup_table(trials, args.baseline, arms=args.arms, by=args.by)
        return res, speedup_tables(res, wide=not args.long and args.format in ("md", "tex"))
    elif a == "phase":
        from grokray_analysis.phase import phase_diagrams

        res = phase_diagrams(trials, arms=args.arms, pool=args.pool_arms,
                             rank_col=args.rank_col, d_col=args.d_col)
        if args.cprank:
            from grokray_analysis.cpcompare import cp_compare, load_cprank
            from grokray_analysis.errors import AnalysisError
            from grokray_analysis.tables import tables_of

            groups = sorted(set(trials["group"].astype(str))) if "group" in trials else []
            if len(groups) != 1:
                raise AnalysisError(f"--cprank needs one group in the sweep, found {groups}; "
                                    "select one with --where group=NAME")
            cp = load_cprank(args.cprank)
            cmps = [t for ph in res.diagrams for t in tables_of(cp_compare(ph, cp, groups[0]))]
            return res, tables_of(res) + cmps
    elif a == "drift":
        from grokray_analysis.drift import drift_table

        res = drift_table(trials, baseline=args.baseline)
    elif a in ("atgrok", "axioms"):
        from grokray_analysis.curves import select_curves

        C = select_curves(sweep.curves, trials, where)
        if a == "atgrok":
            from grokray_analysis.atgrok import metric_points

            res = metric_points(trials, C, list(args.metric), by=args.by)
        else:
            from grokray_analysis.axiomlead import axiom_leads

            res = axiom_leads(trials, C, axioms=list(args.axiom), rel=args.rel,
                              absolute=args.absolute, held=args.held, by=args.by)
    elif a == "curves":
        from grokray_analysis.curves import (
            curve_bands,
            default_metrics,
            expand_metrics,
            select_curves,
        )

        C = select_curves(sweep.curves, trials, where)
        metrics = expand_metrics(args.metric, C) if args.metric else default_metrics(C)
        res = curve_bands(C, metric=metrics, arms=args.arms, threshold=args.threshold)
    else:  # pragma: no cover - argparse restricts the choices
        raise ValueError(a)
    from grokray_analysis.tables import tables_of

    return res, tables_of(res)


def main(args: argparse.Namespace) -> int:
    """Run one analysis; print its tables (and write its plot / report)."""
    if args.analysis == "ledger":
        return _ledger(args)
    if args.analysis == "report":
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
    from grokray_analysis.tables import render

    res, tables = _compute(args)
    sys.stdout.write(render(tables, args.format))
    if getattr(args, "plot", None):
        from grokray_analysis.plots import plot

        path = plot(res, args.plot)
        print(f"wrote {path}", file=sys.stderr)
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
