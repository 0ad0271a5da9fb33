"""The ledger of an output root: every claim beside what its sweeps measured, one column per scale.

Per claim and scale (cpu, paper): the measured value with its 95% interval, the runs (grokked /
censored), a verdict (grokray_analysis.ledger.verdicts) and the command that produced it. A claim
at a
scale reads the output dir of that scale's sweep, `OUT/<sweep>` (claims.yaml, `Claim.at`),
through grokray_analysis.ledger.sweeps; one whose sweep has no rows, or lacks the arms it
compares, is a
"not run" cell, never an error. The scales' sweeps have distinct names, so both columns read
the same output root.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from grokray_analysis.errors import AnalysisError
from grokray_analysis.ledger.claims import CLAIMS, SCALES, Claim
from grokray_analysis.ledger.measures import MEASURES, Measured
from grokray_analysis.ledger.sweeps import select, sweep_rows
from grokray_analysis.ledger.verdicts import (
    INCONCLUSIVE,
    NOT_RUN,
    TOO_FEW,
    UNTESTABLE,
    band_of,
    rate_n_needed,
    regions_met,
    verdict_of,
)


@dataclass(frozen=True)
class LedgerRow:
    """One claim at one scale."""

    claim: Claim
    """The claim as that scale measures it (`Claim.at`)."""
    measured: Measured
    verdict: str
    sweep_dir: str
    """The sweep output dir read ('' when none)."""
    command: str


@dataclass(frozen=True)
class Ledger:
    """The ledger of one output root."""

    out: str
    columns: dict[str, tuple[LedgerRow, ...]]
    """scale -> one row per claim, in claim order (every scale the same claims)"""


def measure(claim: Claim, T: pd.DataFrame) -> Measured:
    """The claim's measure, with its params, on its rows (`where`) of the sweep's trials."""
    return MEASURES[claim.measure](select(T, dict(claim.where)), **claim.params)


def ledger(out: str | Path, *, scales: tuple[str, ...] = tuple(SCALES),
           claims: tuple[Claim, ...] = CLAIMS, current_only: bool = True) -> Ledger:
    """Every claim's row at each scale from the sweep outputs under `out` (missing sweeps: not
    run).

    current_only: read only the rows the sweep dir's plan names (grokray_analysis.ledger.sweeps);
    off
    for synthetic fixtures and hand-made dirs.
    """
    out = Path(out)
    read: dict[str, tuple[pd.DataFrame | None, str]] = {}
    columns = {s: tuple(_row(c.at(s), out, read, current_only) for c in claims) for s in scales}
    return Ledger(str(out), columns)


def _row(c: Claim, out: Path, read: dict[str, tuple[pd.DataFrame | None, str]],
         current_only: bool) -> LedgerRow:
    """The claim's row from its sweep dir under `out` (`read`: the dirs read so far)."""
    if not c.measure:
        return LedgerRow(c, Measured(math.nan, detail=c.why_not), NOT_RUN, "", "")
    d = out / c.sweep
    if c.sweep not in read:
        read[c.sweep] = sweep_rows(d, current_only=current_only)
    T, note = read[c.sweep]
    cmd = (f"grokray sweep {c.spec} --out {out} && "
           + (c.analyze.format(dir=d) if c.analyze else f"grokray analyze ledger {out}"))
    if T is None:
        return LedgerRow(c, Measured(math.nan, detail=note), NOT_RUN, str(d), cmd)
    try:
        m = measure(c, T)
    except (AnalysisError, KeyError, ValueError) as exc:
        return LedgerRow(c, Measured(math.nan, detail=f"not computed: {exc}"), NOT_RUN, str(d),
                         cmd)
    if note:
        m = replace(m, detail=f"{m.detail}; {note}")
    v = judge(c, m)
    return LedgerRow(c, replace(m, detail=m.detail + why(c, m, v)), v, str(d), cmd)


def judge(c: Claim, m: Measured) -> str:
    """The claim's verdict on what its measure gave: the one rule (verdicts.verdict_of) with
    the claim's paper value, band and null and the measure's interval and runs."""
    return verdict_of(c.paper_value, m.value, m.ci, null=c.null_value, log=c.log, tol=c.tol,
                      band=c.band, n=m.n, n_needed=m.n_needed, rate_n=m.rate_n)


def needed(c: Claim, m: Measured) -> int:
    """The units the claim's interval would need to decide (0 when it has them or no count
    would do)."""
    if m.n_needed > m.n:
        return m.n_needed
    if m.rate_n:
        b = band_of(c.paper_value, log=c.log, tol=c.tol, band=c.band)
        return rate_n_needed(m.rate_n, m.value, c.paper_value, b, null=c.null_value)
    return 0


def why(c: Claim, m: Measured, v: str) -> str:
    """What the detail adds to a verdict that is not a region: the band and null of an
    untestable claim, the n a 'too few runs' row would need, the regions an inconclusive
    interval meets."""
    b = band_of(c.paper_value, log=c.log, tol=c.tol, band=c.band)
    where = f"band {b[0]:.4g}-{b[1]:.4g}, null {c.null_value:g}"
    if v == UNTESTABLE:
        return f"; the band holds the null ({where}): untestable at this tolerance"
    if v == TOO_FEW:
        return f"; too few runs: {m.n}, the interval needs {needed(c, m)} ({where})"
    if v == INCONCLUSIVE and not any(math.isnan(x) for x in m.ci):
        met = regions_met(min(m.ci), max(m.ci), c.paper_value, b, null=c.null_value)
        return f"; the interval meets: {', '.join(met)} ({where})"
    return ""
