"""Every shipped sweep spec and run config (sweeps/**/*.yaml) opens with a comment header that
says which of its values the papers state and which are grokray's choices, in two fixed parts:

    # Paper states: the FORGE paper: ... (continued on "#   " lines)
    # grokray's choices: ... (continued on "#   " lines)

The first names the paper it reads (the FORGE paper, the geometric-bias paper, the RFM paper);
the second says what grokray chose where the paper is silent, and why. A new spec without them
fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "sweeps").rglob("*.yaml"))
PAPER, CHOICES = "# Paper states:", "# grokray's choices:"
PAPERS = ("FORGE paper", "geometric-bias paper", "RFM paper")


def header(text: str) -> list[str]:
    """The comment lines before the first line that is not a comment."""
    lines = text.splitlines()
    n = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    return lines[:n]


def part(lines: list[str], label: str) -> str | None:
    """The text of the part that starts with `label`, its "#   " continuation lines joined;
    None when no line starts with it."""
    starts = [i for i, line in enumerate(lines) if line.startswith(label)]
    if not starts:
        return None
    i = starts[0]
    text = [lines[i][len(label):].strip()]
    for line in lines[i + 1:]:
        if not line.startswith("#   ") or line.lstrip("# ").startswith("grokray "):
            break  # a command line ("#   grokray sweep ...") is not a continuation
        text.append(line[1:].strip())
    return " ".join(t for t in text if t)


def problems(text: str) -> list[str]:
    lines = header(text)
    found = []
    for label in (PAPER, CHOICES):
        count = sum(line.startswith(label) for line in lines)
        if count != 1:
            found.append(f"{count} header lines start with {label!r} (one is needed)")
    if found:
        return found
    paper, mine = part(lines, PAPER), part(lines, CHOICES)
    if not paper:
        found.append(f"{PAPER!r} says nothing")
    elif not any(name in paper for name in PAPERS):
        found.append(f"{PAPER!r} names none of {PAPERS}")
    if not mine:
        found.append(f"{CHOICES!r} says nothing")
    first = [i for i, line in enumerate(lines) if line.startswith((PAPER, CHOICES))]
    if lines[first[0]].startswith(CHOICES):
        found.append(f"{CHOICES!r} comes before {PAPER!r}")
    return found


GOOD = """\
# A sweep.
# Paper states: the FORGE paper: the scaling law; not the budget.
# grokray's choices: 4,000 steps (sized for the CPU ledger's hour),
#   train fraction 0.5.
#   grokray sweep sweeps/x.yaml
name: x
"""


def test_the_check_accepts_the_form():
    assert problems(GOOD) == []
    lines = header(GOOD)
    assert part(lines, CHOICES) == ("4,000 steps (sized for the CPU ledger's hour), "
                                    "train fraction 0.5.")
    assert part(lines, PAPER) == "the FORGE paper: the scaling law; not the budget."


@pytest.mark.parametrize("broken, why", [
    (GOOD.replace("# Paper states: the FORGE paper: the scaling law; not the budget.\n", ""),
     "0 header lines start with '# Paper states:'"),
    (GOOD.replace("# grokray's choices: 4,000 steps (sized for the CPU ledger's hour),\n"
                  "#   train fraction 0.5.\n", ""), "0 header lines start with"),
    (GOOD.replace("the FORGE paper", "a paper"), "names none of"),
    (GOOD.replace("choices: 4,000 steps (sized for the CPU ledger's hour),\n#   train fraction "
                  "0.5.", "choices:"), "says nothing"),
    ("name: x\n# Paper states: the FORGE paper.\n# grokray's choices: all.\n",
     "0 header lines start with"),  # after the first key: not the header
    (GOOD + "# Paper states: the RFM paper.\n", ""),  # a comment below the header is not counted
])
def test_the_check_rejects_a_header_without_its_parts(broken, why):
    found = problems(broken)
    if why:
        assert found and why in found[0], found
    else:
        assert found == []


def test_the_scan_sees_every_kind_of_spec():
    names = {p.relative_to(ROOT).as_posix() for p in SPECS}
    assert {"sweeps/smoke.yaml", "sweeps/cpu/scaling.yaml", "sweeps/paper/scaling.yaml",
            "sweeps/run/mlp_z97.yaml", "sweeps/cpu/diag_lambda_schedule.yaml"} <= names


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_spec_says_what_the_papers_state_and_what_grokray_chose(path):
    found = problems(path.read_text())
    assert not found, f"{path.relative_to(ROOT)}: " + "; ".join(found)
