"""`grokray analyze signtest`: the paired sign test and Wilcoxon between two arms on a metric
(grokray_analysis.signtest); in the report, each arm against the first of the ablation order,
and FORGE's effective modes against the MLP's."""

from __future__ import annotations

from grokray_analysis.analyses import Analysis, Section, slug


def _options(p) -> None:
    p.add_argument("--arms", nargs=2, required=True, metavar=("A", "B"),
                   help="the two arms; differences are A - B")
    p.add_argument("--metric", default="grok_step", help="column to compare (default grok_step)")
    p.add_argument("--alternative", choices=("two-sided", "greater", "less"),
                   default="two-sided", help="greater: A tends to be larger than B")
    p.add_argument("--pair-by", nargs="+", metavar="COL",
                   help="columns identifying a pair (default: group seed)")


def _compute(data, args):
    from grokray_analysis.signtest import sign_test

    return sign_test(data.trials, args.metric, *args.arms, alternative=args.alternative,
                     pair_by=tuple(args.pair_by) if args.pair_by else None)


def _report(trials, curves, **_):
    from grokray_analysis import papers
    from grokray_analysis.signtest import sign_test
    from grokray_analysis.speedup import ablation_order

    arms = ablation_order(sorted(trials["arm"].unique()))
    if len(arms) < 2 or "group" not in trials:
        return
    base = arms[0]
    for a in arms[1:]:
        yield Section(f"Sign test {a} vs {base}", f"signtest-{slug(a)}",
                      lambda a=a: sign_test(trials, "grok_step", a, base))
    if papers.EFF_MODES_METRIC in trials and {"forge", "mlp"} <= set(arms):
        yield Section("Sign test effective modes", "signtest-eff-modes",
                      lambda: sign_test(trials, papers.EFF_MODES_METRIC, "forge", "mlp",
                                        alternative="greater"))


def _tables(res):
    from grokray_analysis.tables import signtest_tables

    return signtest_tables(res)


def _plot(res, path):
    from grokray_analysis.plots import plot_signtest

    return plot_signtest(res, path)


def _figure(res):
    from grokray_analysis.dashboard.figures import signtest_figure

    return signtest_figure(res)


ANALYSIS = Analysis(
    "signtest", help="paired sign test + Wilcoxon between two arms",
    options=_options, compute=_compute, results=("grokray_analysis.signtest:SignTestResult",),
    tables=_tables, plot=_plot,
    figure=_figure, report=_report,
)
