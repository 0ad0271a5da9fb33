"""`grokray analyze axioms`: how long before grokking FORGE's axiom losses fall below a
threshold, for several threshold definitions (grokray_analysis.axiomlead); tables only."""

from __future__ import annotations

from grokray_analysis.analyses import Analysis


def _options(p) -> None:
    p.add_argument("--axiom", nargs="+", choices=("ident", "assoc", "inv"), default=["ident"],
                   help="axioms to read (default ident)")
    p.add_argument("--rel", nargs="+", type=float, metavar="R",
                   help="relative thresholds: L <= R * L(step 0) (default 0.01 when no --abs)")
    p.add_argument("--abs", nargs="+", type=float, metavar="A", dest="absolute",
                   help="absolute thresholds: L <= A")
    p.add_argument("--held", action="store_true",
                   help="also each threshold as a lasting state (below it through the grok step)")
    p.add_argument("--by", default="group", help="row grouping column (default group)")


def _compute(data, args):
    from grokray_analysis.axiomlead import axiom_leads

    return axiom_leads(data.trials, data.curves, axioms=list(args.axiom), rel=args.rel,
                       absolute=args.absolute, held=args.held, by=args.by)


def _tables(res):
    from grokray_analysis.tables import axiomlead_tables

    return axiomlead_tables(res)


ANALYSIS = Analysis(
    "axioms", help="axiom-emergence lead over grokking, several thresholds",
    options=_options, compute=_compute, results=("grokray_analysis.axiomlead:AxiomLeads",),
    tables=_tables,
)
