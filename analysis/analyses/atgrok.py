"""`grokray analyze atgrok`: curve metrics at the first eval, at the grok step and at the end,
per arm (grokray_analysis.atgrok); tables only."""

from __future__ import annotations

from grokray_analysis.analyses import Analysis


def _options(p) -> None:
    p.add_argument("--metric", nargs="+", metavar="COL", default=["metric_eff_modes"],
                   help="curve column(s) (default metric_eff_modes)")
    p.add_argument("--by", default="group", help="row grouping column (default group)")


def _compute(data, args):
    from grokray_analysis.atgrok import metric_points

    return metric_points(data.trials, data.curves, list(args.metric), by=args.by)


def _tables(res):
    from grokray_analysis.tables import atgrok_tables

    return atgrok_tables(res)


ANALYSIS = Analysis(
    "atgrok", help="curve metrics at step 0, at the grok step and at the end",
    options=_options, compute=_compute, results=("grokray_analysis.atgrok:MetricPoints",),
    tables=_tables,
)
