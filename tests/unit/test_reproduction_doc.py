"""docs/reproduction.md says no more than the ledger: every verdict word in its tables equals what
`grokray analyze ledger --format json` gives on the recorded results.

The recorded results are tests/fixtures/ledger_recorded/: the trials (and plan.json) of the
ledger sweeps run for the page's tally, copied from the run's output root without their curves
and snapshots (the measures read only the trials table). A table row of the page whose first
cell is a claim key (`forge.eff_modes`) and whose table has a `verdict` column (the CPU scale)
or a `decisive verdict` column must carry the ledger's verdict for that claim there, as must a
moved-verdicts row (`new` column) marked "(re-run)"; the page's tally lines must be the ledger's
own count lines.
"""

from __future__ import annotations

import json
from pathlib import Path

from grokray.cli import main
from grokray_analysis import ledger as L

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "fixtures" / "ledger_recorded"
DOC = ROOT / "docs" / "reproduction.md"
COLUMNS = {"verdict": "verdict", "decisive verdict": "decisive-scale verdict",
           "new": "verdict"}
"""the page's column name -> the ledger JSON's column (`new`: the moved-verdicts table, whose
cells for rows re-judged on the recorded runs end in "(re-run)")"""
RERUN = " (re-run)"


def _ledger(capsys) -> dict:
    assert main(["analyze", "ledger", str(RECORDED), "--format", "json", "--no-write",
                 "--scale", "cpu", "decisive"]) == 0
    return json.loads(capsys.readouterr().out)[0]


def _doc_rows(text: str) -> list[tuple[str, str, str]]:
    """(claim key, page column, verdict cell) of every table row whose first cell is a claim
    key, in tables with a verdict column."""
    keys = {c.key for c in L.CLAIMS}
    out, header = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(line) <= set("|-: "):
            continue
        key = cells[0].strip("`")
        if key not in keys:
            continue
        for name in COLUMNS:
            if name not in header:
                continue
            cell = cells[header.index(name)].strip("*")
            if name == "new":  # only the rows re-judged on the recorded runs
                if not cell.endswith(RERUN):
                    continue
                cell = cell[:-len(RERUN)]
            out.append((key, name, cell))
    return out


def test_every_verdict_in_the_pages_tables_is_the_ledgers(capsys):
    table = _ledger(capsys)
    rows = {r["claim"]: r for r in table["rows"]}
    found = _doc_rows(DOC.read_text())
    assert {k for k, _, _ in found} >= {c.key for c in L.CLAIMS}  # every claim has its row
    wrong = [f"{k} ({col}): page {cell!r}, ledger {rows[k][COLUMNS[col]]!r}"
             for k, col, cell in found if cell != rows[k][COLUMNS[col]]]
    assert not wrong, "\n".join(wrong)


def test_the_pages_tally_is_the_ledgers(capsys):
    table = _ledger(capsys)
    text = DOC.read_text()
    for note in table["notes"][:2]:  # the cpu and the decisive count lines
        assert note in text, note


def test_the_check_reads_verdict_cells():
    page = ("| claim | paper | verdict |\n|---|---|---|\n"
            "| `forge.eff_modes` | 23 vs 16 | **opposite** |\n\n"
            "| claim | decisive verdict |\n|---|---|\n| `forge.qm9` | not run |\n")
    page += ("\n| claim | old | new | why |\n|---|---|---|---|\n"
             "| `forge.wedderburn` | reproduced | reproduced (re-run) | x |\n"
             "| `forge.a5.speedup.mlp` | same direction, different size | not run here | y |\n")
    assert _doc_rows(page) == [("forge.eff_modes", "verdict", "opposite"),
                               ("forge.qm9", "decisive verdict", "not run"),
                               ("forge.wedderburn", "new", "reproduced")]
