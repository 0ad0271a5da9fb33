"""`grokray analyze curves`: a curve column (val and train accuracy by default) vs step, the
median and interquartile band per arm (grokray_analysis.curves); first in the report."""

from __future__ import annotations

from grokray_analysis.analyses import Analysis, Section


def _options(p) -> None:
    p.add_argument("--metric", nargs="+", metavar="COL",
                   help="curve column(s) to overlay (default: val_acc and train_acc; `norms`: "
                        "the weight norms, total and per parameter group)")
    p.add_argument("--arms", nargs="+", metavar="ARM", help="arms to show (default: all)")
    p.add_argument("--threshold", type=float, default=0.99,
                   help="accuracy level for the first-crossing step (default 0.99; not "
                        "applied to a loss)")


def _compute(data, args):
    from grokray_analysis.curves import curve_bands, default_metrics, expand_metrics

    C = data.curves
    metrics = expand_metrics(args.metric, C) if args.metric else default_metrics(C)
    return curve_bands(C, metric=metrics, arms=args.arms, threshold=args.threshold)


def _report(trials, curves, **_):
    if curves is not None and not curves.empty:
        from grokray_analysis.curves import curve_bands, default_metrics

        yield Section("Curves", "curves",
                      lambda: curve_bands(curves, metric=default_metrics(curves)))


def _tables(res):
    from grokray_analysis.tables import curve_tables

    return curve_tables(res)


def _plot(res, path):
    from grokray_analysis.plots import plot_curves

    return plot_curves(res, path)


def _figure(res):
    from grokray_analysis.dashboard.figures import curves_figure

    return curves_figure(res)


ANALYSIS = Analysis(
    "curves", help="val and train acc vs step: median and band per arm",
    options=_options, compute=_compute, results=("grokray_analysis.curves:CurveSummary",),
    tables=_tables, plot=_plot,
    figure=_figure, report=_report,
)
