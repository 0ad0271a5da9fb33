"""The ledger of an output root: every claim beside what its sweep measured.

One row per claim: the paper's number, the measured value with its 95% interval, the runs
(grokked / censored), a verdict (analysis.ledger.verdicts) and the command that produced it. A
claim reads the output dir of its sweep, `OUT/<sweep>` (claims.yaml), through
analysis.ledger.sweeps; a claim whose sweep has no rows, or lacks the arms it compares, is a
"not run" row, never an error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from analysis.errors import AnalysisError
from analysis.ledger.claims import CLAIMS, Claim
from analysis.ledger.measures import MEASURES, Measured
from analysis.ledger.sweeps import select, sweep_rows
from analysis.ledger.verdicts import NOT_RUN, verdict_of


@dataclass(frozen=True)
class LedgerRow:
    """One line of the ledger."""

    claim: Claim
    measured: Measured
    verdict: str
    sweep_dir: str
    """The sweep output dir read ('' when none)."""
    command: str


@dataclass(frozen=True)
class Ledger:
    """The ledger of one output root."""

    out: str
    scale: str
    rows: tuple[LedgerRow, ...]


def measure(claim: Claim, T: pd.DataFrame) -> Measured:
    """The claim's measure, with its params, on its rows (`where`) of the sweep's trials."""
    return MEASURES[claim.measure](select(T, dict(claim.where)), **claim.params)


def ledger(out: str | Path, *, scale: str = "cpu", claims: tuple[Claim, ...] = CLAIMS,
           current_only: bool = True) -> Ledger:
    """Every claim's row from the sweep outputs under `out` (missing sweeps: not run).

    current_only: read only the rows the sweep dir's plan names (analysis.ledger.sweeps); off
    for synthetic fixtures and hand-made dirs.
    """
    out = Path(out)
    rows = []
    read: dict[str, tuple[pd.DataFrame | None, str]] = {}
    for c in claims:
        if not c.measure:
            rows.append(LedgerRow(c, Measured(math.nan, detail=c.why_not), NOT_RUN, "", ""))
            continue
        d = out / c.sweep
        if c.sweep not in read:
            read[c.sweep] = sweep_rows(d, current_only=current_only)
        T, note = read[c.sweep]
        cmd = (f"grokray sweep {c.spec} --out {out} && "
               + (c.analyze.format(dir=d) if c.analyze else f"grokray analyze ledger {out}"))
        if T is None:
            rows.append(LedgerRow(c, Measured(math.nan, detail=note), NOT_RUN, str(d), cmd))
            continue
        try:
            m = measure(c, T)
        except (AnalysisError, KeyError, ValueError) as exc:
            rows.append(LedgerRow(c, Measured(math.nan, detail=f"not computed: {exc}"),
                                  NOT_RUN, str(d), cmd))
            continue
        if note:
            m = replace(m, detail=f"{m.detail}; {note}")
        v = m.verdict or verdict_of(c.paper_value, m.value, m.ci, null=c.null_value, log=c.log,
                                    tol=c.tol)
        rows.append(LedgerRow(c, m, v, str(d), cmd))
    return Ledger(str(out), scale, tuple(rows))
