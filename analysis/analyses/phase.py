"""`grokray analyze phase`: the capacity-lift phase diagram over rank R and width d and its
threshold (grokray_analysis.phase), with `--cprank` beside the CP-rank bounds
(grokray_analysis.cpcompare); in the report when a sweep varies R*d."""

from __future__ import annotations

from grokray_analysis.analyses import Analysis, Section


def _options(p) -> None:
    p.add_argument("--rank-col", default="model_rank", help="rank column (default model_rank)")
    p.add_argument("--d-col", default="model_d", help="width column (default model_d)")
    p.add_argument("--arms", nargs="+", metavar="ARM",
                   help="arms to draw, one diagram each (default: every arm with R and d)")
    p.add_argument("--pool-arms", action="store_true",
                   help="pool the arms into one diagram (default: never mixed)")
    p.add_argument("--cprank", metavar="DIR",
                   help="also compare each arm's threshold with the CP-rank bounds `grokray "
                        "cprank GROUP --out DIR` wrote")


def _compute(data, args):
    from grokray_analysis.phase import phase_diagrams

    return phase_diagrams(data.trials, arms=args.arms, pool=args.pool_arms,
                          rank_col=args.rank_col, d_col=args.d_col)


def _cli_tables(res, args, data):
    """The diagrams' tables; with --cprank, each arm's threshold beside the CP-rank bounds."""
    from grokray_analysis.tables import phase_tables

    if not args.cprank:
        return phase_tables(res)
    from grokray_analysis.cpcompare import cp_compare, load_cprank
    from grokray_analysis.errors import AnalysisError
    from grokray_analysis.tables import cpcompare_tables

    trials = data.trials
    groups = sorted(set(trials["group"].astype(str))) if "group" in trials else []
    if len(groups) != 1:
        raise AnalysisError(f"--cprank needs one group in the sweep, found {groups}; "
                            "select one with --where group=NAME")
    cp = load_cprank(args.cprank)
    cmps = [t for ph in res.diagrams for t in cpcompare_tables(cp_compare(ph, cp, groups[0]))]
    return phase_tables(res) + cmps


def _report(trials, curves, **_):
    if {"model_rank", "model_d"} <= set(trials) and (
        (trials["model_rank"].astype(float) * trials["model_d"].astype(float)).nunique() >= 2
    ):
        from grokray_analysis.phase import phase_diagrams

        yield Section("Phase diagram", "phase", lambda: phase_diagrams(trials))


def _tables(res):
    from grokray_analysis.tables import phase_tables

    return phase_tables(res)


def _plot(res, path):
    from grokray_analysis.plots import plot_phase

    return plot_phase(res, path)


def _figure(res):
    from grokray_analysis.dashboard.figures import phase_figure

    return phase_figure(res)


ANALYSIS = Analysis(
    "phase", help="capacity-lift phase diagram over rank R and width d",
    options=_options, compute=_compute, cli_tables=_cli_tables,
    results=("grokray_analysis.phase:PhaseDiagrams", "grokray_analysis.phase:PhaseDiagram"),
    tables=_tables, plot=_plot,
    figure=_figure, report=_report,
)
