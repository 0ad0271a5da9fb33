"""`grokray analyze speedup`: Kaplan-Meier median grok step, k/n and the speedup over a
baseline arm per group (grokray_analysis.speedup); in the report when a sweep has two arms."""

from __future__ import annotations

from grokray_analysis.analyses import Analysis, Section


def _options(p) -> None:
    p.add_argument("--baseline", default="mlp", help="baseline arm (default mlp)")
    p.add_argument("--arms", nargs="+", metavar="ARM", help="arms to show (default: all)")
    p.add_argument("--by", default="group", help="row grouping column (default group)")
    p.add_argument("--long", action="store_true", help="one row per (group, arm)")


def _compute(data, args):
    from grokray_analysis.speedup import speedup_table

    return speedup_table(data.trials, args.baseline, arms=args.arms, by=args.by)


def _cli_tables(res, args, data):
    """The wide ablation layout for md/tex, one row per (group, arm) for csv/json or --long."""
    from grokray_analysis.tables import speedup_tables

    return speedup_tables(res, wide=not args.long and args.format in ("md", "tex"))


def _report(trials, curves, **_):
    """Every arm against the first of the ablation order, when the rows have a group."""
    from grokray_analysis.speedup import ablation_order, speedup_table

    arms = ablation_order(sorted(trials["arm"].unique()))
    if len(arms) >= 2 and "group" in trials:
        yield Section("Speedup", "speedup", lambda: speedup_table(trials, arms[0]))


def _tables(res):
    from grokray_analysis.tables import speedup_tables

    return speedup_tables(res)


def _plot(res, path):
    from grokray_analysis.plots import plot_speedup

    return plot_speedup(res, path)


def _figure(res):
    from grokray_analysis.dashboard.figures import speedup_figure

    return speedup_figure(res)


ANALYSIS = Analysis(
    "speedup", help="median grok step, k/n and speedup vs a baseline arm",
    options=_options, compute=_compute, cli_tables=_cli_tables,
    results=("grokray_analysis.speedup:SpeedupTable",),
    tables=_tables, plot=_plot,
    figure=_figure, report=_report,
)
