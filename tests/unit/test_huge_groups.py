"""A group name far above the order cap, in every family, answers at once with its one-line
error: from the groups library, `grokray sweep SPEC --dry-run` and `grokray run` (exit 2). The
guard is pytest-timeout: before the fix, the nearest-name search computed factorials of ~5e11."""

from __future__ import annotations

import re

import pytest

from grokray.cli import main as cli_main
from grokray.errors import GroupError
from grokray.groups import FAMILIES, parse

BIG = 10**15
HUGE: list[tuple[str, str]] = [  # (family, a name far above the order cap 10^4 and 10^12)
    ("Z", f"Z{BIG}"), ("Z", "Z100000000000000000000"), ("D", f"D{BIG}"),
    ("S", "S30"), ("S", "S40"), ("S", "S1000"), ("S", "S100000000000"), ("S", f"S{BIG}"),
    ("A", "A40"), ("A", "A5000"), ("A", f"A{BIG}"), ("Q", f"Q{4 * BIG}"), ("Dic", f"Dic{BIG}"),
    ("F", f"F{BIG}"), ("F", "F1000000000000"), ("Heis", "Heis100003"), ("Heis", f"Heis{BIG}"),
    ("PSL", "PSL(2,1000003)"), ("PSL", f"PSL(2,{BIG})"), ("product", f"S1000xZ{BIG}"),
]  # fmt: skip
IDS = [name for _, name in HUGE]


def test_every_family_with_a_parameter_is_covered():
    with_param = {k for k, f in FAMILIES.items() if re.compile(f.pattern).groups}
    assert with_param == {k for k, _ in HUGE} - {"product"} and "V4" not in with_param


@pytest.fixture(scope="module", autouse=True)
def _warm(tmp_path_factory):
    """The CLI's imports (torch, the model families) happen here, outside the timed tests."""
    path = tmp_path_factory.mktemp("warm") / "ok.yaml"
    path.write_text("name: t\nconfig: {group: Z5}\n")
    assert cli_main(["sweep", str(path), "--dry-run", "--json", "--out", str(path.parent)]) == 0


@pytest.mark.timeout(1, func_only=True)
@pytest.mark.parametrize("family,name", HUGE, ids=IDS)
def test_library_answers_at_once(family, name):
    # the default cap with the nearest names; the identity's cap (tasks.canonical_names) without
    for cap, hints in ((None, True), (10**12, False)):
        with pytest.raises(GroupError) as info:
            parse(name, cap=cap, hints=hints)
        msg = str(info.value)
        assert "\n" not in msg and ("nearest valid names" in msg) == hints
        assert "cap 10000 (GROKRAY_MAX_GROUP_ORDER)" in msg or cap  # F10^12 is no F group


@pytest.mark.timeout(1, func_only=True)
@pytest.mark.parametrize("family,name", HUGE, ids=IDS)
def test_sweep_dry_run_answers_at_once(family, name, tmp_path, capsys):
    path = tmp_path / "huge.yaml"
    path.write_text(f"name: t\nconfig:\n  group: '{name}'\n")
    assert cli_main(["sweep", str(path), "--dry-run", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{path}:3: config.group: group '{name}'")
    assert "above the" in err[0] and "cap 10000" in err[0] and "nearest valid names" in err[0]
    assert not (tmp_path / "o").exists()


@pytest.mark.timeout(1, func_only=True)
@pytest.mark.parametrize("family,name", HUGE, ids=IDS)
def test_run_answers_at_once(family, name, capsys):
    assert cli_main(["run", "--set", f"group={name}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"grokray run: error: group '{name}'")
    assert "cap 10000" in err[0] and "nearest valid names" in err[0]
