"""`grokray analyze scaling`: the power law grok_step = c |G|^alpha per arm, censored runs in
the fit (grokray_analysis.powerlaw); in the report when a sweep has two group orders or more."""

from __future__ import annotations

from grokray_analysis.analyses import Analysis, Section


def _options(p) -> None:
    p.add_argument("--arms", nargs="+", metavar="ARM", help="arms to fit (default: all)")
    p.add_argument("--by", default="arm", help="column to split fits by (default arm)")
    p.add_argument("--method", choices=("aft", "ols", "both"), default="aft",
                   help="aft: censored log-normal regression over every run (default); ols: "
                        "OLS on grokked runs only, with R^2 (the paper's fit); both")
    p.add_argument("--medians", action="store_true",
                   help="with --method ols: fit per-group medians, not per-seed runs")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"),
                   help="test whether alpha differs between two arms (interaction term)")
    p.add_argument("--interval", choices=("group", "per-run", "group-bootstrap"),
                   default="group",
                   help="95%% interval of c and alpha: group (default; groups as the unit of "
                        "replication: cluster-robust covariance, t on groups - 2), per-run "
                        "(every run independent: no group effect assumed), group-bootstrap "
                        "(aft: percentile over --bootstrap resamples of whole groups)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="bootstrap resamples (default 1000; 0 turns it off): ols's bootstrap "
                        "over seeds (alpha_seedboot: groups held fixed) and "
                        "--interval group-bootstrap's")
    p.add_argument("--seed", type=int, default=0, help="bootstrap RNG seed (default 0)")


def _compute(data, args):
    from grokray_analysis.powerlaw import scaling

    methods = ("aft", "ols") if args.method == "both" else (args.method,)
    return scaling(data.trials, arms=args.arms, by=args.by, methods=methods,
                   medians=args.medians, n_boot=args.bootstrap, seed=args.seed,
                   compare=tuple(args.compare) if args.compare else None,
                   interval=args.interval)


def _report(trials, curves, *, n_boot, seed, **_):
    if "group_order" in trials and trials["group_order"].nunique() >= 2:
        from grokray_analysis.powerlaw import scaling

        yield Section("Scaling", "scaling",
                      lambda: scaling(trials, methods=("aft", "ols"), n_boot=n_boot, seed=seed))


def _tables(res):
    from grokray_analysis.tables import scaling_tables

    return scaling_tables(res)


def _plot(res, path):
    from grokray_analysis.plots import plot_scaling

    return plot_scaling(res, path)


def _figure(res):
    from grokray_analysis.dashboard.figures import scaling_figure

    return scaling_figure(res)


ANALYSIS = Analysis(
    "scaling", help="power law grok_step = c*|G|^alpha per arm",
    options=_options, compute=_compute, results=("grokray_analysis.powerlaw:ScalingResult",),
    tables=_tables, plot=_plot,
    figure=_figure, report=_report,
)
