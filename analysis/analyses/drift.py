"""`grokray analyze drift`: the invariant drift of learned Hamiltonian dynamics per system and
arm, and its ratio to a baseline arm (grokray_analysis.drift); tables only."""

from __future__ import annotations

from grokray_analysis.analyses import Analysis


def _options(p) -> None:
    p.add_argument("--baseline", default="mlp", help="baseline arm (default mlp)")


def _compute(data, args):
    from grokray_analysis.drift import drift_table

    return drift_table(data.trials, baseline=args.baseline)


def _tables(res):
    from grokray_analysis.tables import drift_tables

    return drift_tables(res)


ANALYSIS = Analysis(
    "drift", help="invariant drift of learned Hamiltonian dynamics",
    options=_options, compute=_compute, results=("grokray_analysis.drift:DriftTable",),
    tables=_tables,
)
