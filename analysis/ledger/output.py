"""The ledger as a table (Markdown / CSV / LaTeX / JSON through grokray_analysis.tables) and its
files,
OUT/ledger.md and OUT/ledger.json: one row per claim, the CPU scale's columns first, then each
other scale's under its prefix ("paper-scale measured", ...)."""

from __future__ import annotations

from pathlib import Path

from grokray_analysis.ledger.build import Ledger, LedgerRow, needed
from grokray_analysis.ledger.claims import BASE_SCALE
from grokray_analysis.ledger.verdicts import TOO_FEW, VERDICTS
from grokray_analysis.tables import Table

CLAIM_COLUMNS = ("claim", "paper", "what", "paper value")
SCALE_COLUMNS = ("measured", "ci_low", "ci_high", "grokked", "censored", "n", "n_needed",
                 "verdict", "detail", "command")
"""one scale's columns (the CPU scale's unprefixed)"""


def _prefix(scale: str) -> str:
    """The prefix of a scale's columns and verdict note: none for the CPU scale."""
    return "" if scale == BASE_SCALE else f"{scale}-scale "


def _cells(r: LedgerRow) -> tuple:
    m = r.measured
    return (m.value, m.ci[0], m.ci[1], m.grokked, m.censored, m.n, needed(r.claim, m)
            if r.verdict == TOO_FEW else 0, r.verdict, m.detail, r.command)


def ledger_table(L: Ledger) -> Table:
    """The ledger as a Table, one row per claim and a group of columns per scale, the verdict
    counts of each scale in its notes."""
    scales = tuple(L.columns)
    first = L.columns[scales[0]]
    rows = tuple(
        (c.claim.key, c.claim.paper, c.claim.claim, c.claim.paper_text,
         *(x for s in scales for x in _cells(L.columns[s][i])))
        for i, c in enumerate(first)
    )
    counts = tuple(
        f"{_prefix(s)}verdicts: " + ", ".join(
            f"{v} {sum(r.verdict == v for r in L.columns[s])}" for v in VERDICTS)
        for s in scales)
    notes = (*counts,
             "95% intervals: Clopper-Pearson for rates; order statistics for medians (each run "
             "as its eval bracket, a censored run as [budget, inf)) and, at 97.5% each, for "
             "ratios of medians; the censored AFT with the group as the unit for alpha; the "
             "profile likelihood or the separation bracket for the capacity threshold. A row is "
             "reproduced only when its whole interval lies in the band.")
    return Table(f"Reproduction ledger ({' and '.join(scales)} scale, {L.out})",
                 (*CLAIM_COLUMNS, *(_prefix(s) + col for s in scales for col in SCALE_COLUMNS)),
                 rows, notes)


def write_ledger(L: Ledger, out: str | Path | None = None) -> tuple[Path, Path]:
    """Write ledger.md and ledger.json into `out` (default: the ledger's output root)."""
    from grokray_analysis.tables import render, to_markdown

    d = Path(out or L.out)
    d.mkdir(parents=True, exist_ok=True)
    t = ledger_table(L)
    md, js = d / "ledger.md", d / "ledger.json"
    md.write_text(to_markdown(t, heading="#"))
    js.write_text(render([t], "json"))
    return md, js
