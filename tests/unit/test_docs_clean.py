"""Docs, the README, sweep headers, the Ray cluster configs, benchmarks and code comments
describe the code as it is: no issue numbers ("issue 26", "#27"), no accounts of sessions
("session 30", "the fifth session") and no paths of the machine they were written on
(/work/..., /root/..., /home/NAME)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ORDINALS = "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|previous|next"
BAD = {
    "an issue number": re.compile(r"\bissues?[- ]#?\d+|(?:^|[\s(\[,;])#\d{1,5}\b", re.I),
    "a session account": re.compile(rf"\bsessions? \d+\b|\b(?:{ORDINALS}) session\b", re.I),
    "a machine path": re.compile(r"/work/|/root/|/home/(?!<)\w"),
}
GLOBS = ("README.md", "cluster.yaml", "cluster.onprem.yaml", "docs/**/*.md", "docs/**/*.py",
         "sweeps/**/*.yaml", "benchmarks/**/*.py", "benchmarks/**/*.md", "benchmarks/**/*.sh",
         "grokray/**/*.py", "analysis/**/*.py", "scripts/**/*.py", "scripts/**/*.sh")
FILES = sorted({p for g in GLOBS for p in ROOT.glob(g) if p.is_file()})


def problems(text: str) -> list[str]:
    return [f"{i}: {what} {m.group(0).strip()!r}" for i, line in enumerate(text.splitlines(), 1)
            for what, pat in BAD.items() for m in pat.finditer(line)]


def test_the_patterns():
    bad = ["see issue 26's budgets", "(#27)", "Issue-13 diagnosis", "in session 30", "the fifth "
           "session's table", "PYTHONPATH=/work/main", "cd /root/x", "/home/alice/venv"]
    assert all(problems(t) for t in bad), [t for t in bad if not problems(t)]
    fine = ['"color": "#666"', "one Ray session serves every sweep", "ray-project/ray#57153",
            "# 27 seeds", "/home/<user>/venv", "$HOME/venvs", "sessions of Ray"]
    assert [t for t in fine if problems(t)] == []


def test_the_scan_sees_the_files():
    names = {p.relative_to(ROOT).as_posix() for p in FILES}
    assert {"README.md", "docs/reproduction.md", "sweeps/smoke.yaml", "sweeps/cpu/scaling.yaml",
            "benchmarks/README.md", "grokray/cli.py", "analysis/ledger/claims.py",
            "cluster.yaml", "cluster.onprem.yaml"} <= names


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_issue_numbers_sessions_or_machine_paths(path):
    found = problems(path.read_text(errors="replace"))
    assert not found, f"{path.relative_to(ROOT)}: " + "; ".join(found)
