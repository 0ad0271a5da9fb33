"""The README as a manual: its two set-up commands are the ones CI and a fresh machine run, each
`grokray ...` line of its code blocks is a valid command line, it names the ideas a user needs,
and every link it gives resolves (file and section)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from grokray.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
SETUP = [
    'python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && pip install '
    '-e . && grokray sweep sweeps/smoke.yaml',
    'python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && pip install '
    '-e ".[dev]" && python -m pytest -q',
]


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


def test_the_two_set_up_commands():
    lines = [b.strip() for b in _blocks("bash") if "\n" not in b.strip()]
    assert lines[:2] == SETUP
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python -m pytest -q\n" in ci and 'pip install -q -e ".[dev]"' in ci


def _commands() -> list[list[str]]:
    out = []
    for block in _blocks("bash"):
        for line in block.splitlines():
            line = line.split(" #")[0].strip()
            for part in line.split("&&"):
                words = shlex.split(part.strip())
                if words[:1] == ["grokray"]:
                    out.append(words[1:])
    return out


@pytest.mark.parametrize("argv", _commands(), ids=" ".join)
def test_each_grokray_line_parses(argv):
    args = build_parser().parse_args(argv)
    assert callable(args.func)


def test_the_tour_and_the_ideas():
    assert len(_commands()) >= 7
    tour = {a[0] for a in _commands()}
    assert {"sweep", "status", "dashboard", "analyze", "specs"} <= tour
    ideas = README.split("## The ideas")[1].split("\n## ")[0]
    for term in ("Sweep spec", "Trial", "Seed batch", "Pack", "Identity", "Censoring",
                 "Snapshot", "Continuation", "Checkpoint"):
        assert f"**{term}**" in ideas, term
    table = README.split("## Commands")[1].split("\n## ")[0]
    from grokray.cli import COMMANDS

    assert all(f"`grokray {c}" in table for c in COMMANDS), \
        [c for c in COMMANDS if f"`grokray {c}" not in table]


def _slug(heading: str) -> str:
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def test_links_resolve():
    links = re.findall(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)", README)
    assert len(links) > 10
    for path, anchor in links:
        if path.startswith("http"):
            continue
        target = ROOT / path
        assert target.exists(), path
        if anchor:
            heads = re.findall(r"^#+ (.+)$", target.read_text(), re.M)
            assert anchor in {_slug(h) for h in heads}, f"{path}#{anchor}"
