"""The ledger as a table (Markdown / CSV / LaTeX / JSON through analysis.tables) and its files,
OUT/ledger.md and OUT/ledger.json."""

from __future__ import annotations

from pathlib import Path

from analysis.ledger.build import Ledger
from analysis.ledger.verdicts import VERDICTS
from analysis.tables import Table


def ledger_table(L: Ledger) -> Table:
    """The ledger as a Table, one row per claim, the verdict counts in its notes."""
    rows = tuple(
        (r.claim.key, r.claim.paper, r.claim.claim, r.claim.paper_text, r.measured.value,
         r.measured.ci[0], r.measured.ci[1], r.measured.grokked, r.measured.censored, r.verdict,
         r.measured.detail, r.command)
        for r in L.rows
    )
    counts = {v: sum(r.verdict == v for r in L.rows) for v in VERDICTS}
    notes = ("verdicts: " + ", ".join(f"{v} {n}" for v, n in counts.items()),
             "95% intervals: Kaplan-Meier (Brookmeyer-Crowley) for median grok steps and their "
             "ratios, censored AFT for alpha, Clopper-Pearson for rates, bootstrap for medians "
             "of non-durations, delta method or the separation bracket for the capacity "
             "threshold.")
    return Table(f"Reproduction ledger ({L.scale} scale, {L.out})",
                 ("claim", "paper", "what", "paper value", "measured", "ci_low", "ci_high",
                  "grokked", "censored", "verdict", "detail", "command"), rows, notes)


def write_ledger(L: Ledger, out: str | Path | None = None) -> tuple[Path, Path]:
    """Write ledger.md and ledger.json into `out` (default: the ledger's output root)."""
    from analysis.tables import render, to_markdown

    d = Path(out or L.out)
    d.mkdir(parents=True, exist_ok=True)
    t = ledger_table(L)
    md, js = d / "ledger.md", d / "ledger.json"
    md.write_text(to_markdown(t, heading="#"))
    js.write_text(render([t], "json"))
    return md, js
